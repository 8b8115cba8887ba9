package fuzz_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest"
)

// TestSummariesNameSteps checks that a finding's summary is a sentence
// naming clients and steps of the story, and that the story tells those
// steps: for a finding by mutual exclusion (the direct check or
// porcupine) and by the liveness check.
func TestSummariesNameSteps(t *testing.T) {
	for _, c := range []struct {
		name     string
		target   fuzz.Target
		opts     []fuzz.Option
		detector fuzz.Detector
		budget   int
		want     *regexp.Regexp
	}{
		{"no-relist", mutant(t, "no-relist"), nil, fuzz.MutualExclusion, 400,
			regexp.MustCompile(`^client \d.* (acquired|entered its critical section) at step \d+ with token \d+( while client \d.* (had held|had been in its own) since step \d+ with token \d+|, no newer than token \d+ that client \d.* got at step \d+)`)},
		{"wrong-watch", mutant(t, "wrong-watch"), nil, fuzz.Liveness, 20,
			regexp.MustCompile(`^client \d's Lock has not returned since step \d+`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := fuzz.Survey(t, c.target, c.opts, c.budget, 1, byDetector(c.detector))
			if f == nil {
				t.Fatalf("not found by %s in %d cases", c.detector, c.budget)
			}
			if !c.want.MatchString(f.Summary) {
				t.Fatalf("the summary does not match %s: %s", c.want, f.Summary)
			}
			for _, m := range regexp.MustCompile(`step (\d+)`).FindAllStringSubmatch(f.Summary, -1) {
				n, _ := strconv.Atoi(m[1])
				if !regexp.MustCompile(fmt.Sprintf(`(?m)^ *(%d|\d+-\d+)\. \[`, n)).MatchString(f.Story) {
					t.Errorf("the story tells no step %d:\n%s", n, f.Story)
				}
			}
			t.Logf("%s: %s", f.Detector, f.Summary)
		})
	}
}

// TestTokenlessLockReportedOnce holds the rule for a lock that hands out
// no fencing token: a holder whose session ended writes, and nothing
// refuses it, which the campaign reports once, naming the steps of the
// case that showed it, and no case reports as a finding; the campaign
// goes on, and finds the lock's own bugs (here none: the queue lock is
// sound).
func TestTokenlessLockReportedOnce(t *testing.T) {
	t.Parallel()
	target := fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker { return tokenless{newSound(conn, path).QueueLock} })
	f, note := fuzz.SurveyTokenless(t, target, []fuzz.Option{fuzz.WithFencing(fuzz.FencingAlways)}, 300, 1)
	if f != nil {
		t.Fatalf("a finding of a sound lock without tokens: %s: %s", f.Detector, f.Summary)
	}
	want := regexp.MustCompile(`^(client \d wrote to the protected resource at step \d+ after its session 0x[0-9a-f]+ had (expired|been closed) at step \d+|porcupine finds no order of the recorded writes).*: the locker hands out no fencing token$`)
	if !want.MatchString(note) {
		t.Fatalf("the campaign's note does not match %s: %q", want, note)
	}
	t.Log(note)
}

// mutant returns the Target of the mutant called name.
func mutant(t *testing.T, name string) fuzz.Target {
	m, ok := targets.MutantByName(name)
	if !ok {
		t.Fatalf("no mutant %q", name)
	}
	return m.Target
}

// TestHerdWithLaggingFollowers runs the herd mutant (waiters watch the
// whole children list) on ensembles whose followers lag from the start, so
// that the waiters connected to them hear of releases late: the herd must
// be found with a late wakeup among those it woke.
func TestHerdWithLaggingFollowers(t *testing.T) {
	t.Parallel()
	m, _ := targets.MutantByName("herd")
	for seed := uint64(1); seed <= 3; seed++ {
		f, cases := fuzz.SurveyLagging(t, m.Target, 300, seed, func(f *fuzz.Finding) bool {
			return f.Detector == fuzz.Herd && strings.Contains(f.Summary, "(late, at step")
		})
		if f == nil {
			t.Fatalf("seed %d: no herd with a late wakeup in 300 cases with lagging followers", seed)
		}
		t.Logf("seed %d, after %d cases: %s", seed, cases, f.Summary)
	}
}
