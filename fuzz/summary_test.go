package fuzz

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/zksim/zksim/zkfake/zktest"
	"pgregory.net/rapid"
)

// TestSummariesNameSteps checks that a finding's summary is a sentence
// naming clients and steps of the story, and that the story tells those
// steps: for a finding by mutual exclusion (the direct check or
// porcupine), by the unfenced-write check and by the liveness check.
func TestSummariesNameSteps(t *testing.T) {
	tokenless := func(conn zktest.Conn, path string) Locker { return tokenless{&queueLock{conn: conn, dir: path}} }
	for _, c := range []struct {
		name     string
		target   Target
		opts     []Option
		detector Detector
		budget   int
		want     *regexp.Regexp
	}{
		{"no-relist", mutant(t, "no-relist"), nil, MutualExclusion, 400,
			regexp.MustCompile(`^client \d.* (acquired|entered its critical section) at step \d+ with token \d+( while client \d.* (had held|had been in its own) since step \d+ with token \d+|, no newer than token \d+ that client \d.* got at step \d+)`)},
		{"wrong-watch", mutant(t, "wrong-watch"), nil, Liveness, 20,
			regexp.MustCompile(`^client \d's Lock has not returned since step \d+`)},
		{"no fencing token", Lock(tokenless), []Option{WithFencing(FencingAlways)}, UnfencedWrite, 300,
			regexp.MustCompile(`^client \d wrote to the protected resource at step \d+( after its session 0x[0-9a-f]+ had (expired|been closed) at step \d+| and client \d.* had acquired at step \d+|, and the resource accepted it)`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			for _, o := range c.opts {
				o(&cfg)
			}
			e := newEngine(c.target.subject(), cfg.normalized())
			e.survey, e.surveyFor = true, byDetector(c.detector)
			withRapid(t, c.budget, 1, func() { rapid.Check(t, e.property) })
			f := e.lastFinding()
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

// mutant returns the Target of the mutant called name.
func mutant(t *testing.T, name string) Target {
	m, ok := MutantByName(name)
	if !ok {
		t.Fatalf("no mutant %q", name)
	}
	return m.Target
}
