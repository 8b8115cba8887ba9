package fuzz

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
	"pgregory.net/rapid"
)

// TestRecipeMutex runs the project's lock through campaigns of every size
// of client group: rapid's -rapid.checks cases each (100 by default, 400
// in all). A longer run: go test ./fuzz -run TestRecipeMutex -rapid.checks=2500.
func TestRecipeMutex(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			CheckMutex(t, RecipeMutex, WithClients(n))
		})
	}
}

// TestRecipeElection runs the project's leader election through
// campaigns of every size of client group, as TestRecipeMutex does the
// lock. A longer run: go test ./fuzz -run TestRecipeElection -rapid.checks=5000.
func TestRecipeElection(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			Check(t, Election(RecipeElection), WithClients(n))
		})
	}
}

// TestRecipeRWMutex runs the project's read/write lock through campaigns
// of every size of client group.
func TestRecipeRWMutex(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			Check(t, RWMutex(RecipeRWMutex), WithClients(n))
		})
	}
}

// TestRecipeSemaphore runs the project's counting semaphore through
// campaigns of every size of client group.
func TestRecipeSemaphore(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			Check(t, Semaphore(RecipeSemaphore), WithClients(n))
		})
	}
}

// TestSoundQueueRWMutex holds the queue lock's read/write lock, which the
// read/write mutants break, to the same campaign.
func TestSoundQueueRWMutex(t *testing.T) {
	Check(t, RWMutex(queueRWLocker(sound)))
}

// TestSoundQueueElection holds the queue lock's election, which two of
// the election mutants break, to the election's campaign.
func TestSoundQueueElection(t *testing.T) {
	Check(t, Election(queueElector(sound)))
}

// soundQueueLock is the lock the queue mutants share, without a mistake.
func soundQueueLock(conn zktest.Conn, path string) Locker {
	return &queueLock{conn: conn, dir: path}
}

// TestSoundQueueLock holds the mutants' shared lock to the same campaign:
// what the campaign finds in a mutant is its one mistake.
func TestSoundQueueLock(t *testing.T) {
	CheckMutex(t, soundQueueLock)
}

// withRapid runs f with rapid's -rapid.checks and -rapid.seed set. Under
// -short rapid runs a fifth of the checks asked for; the count is scaled
// to make up for it.
func withRapid(t *testing.T, checks int, seed uint64, f func()) {
	t.Helper()
	if testing.Short() {
		checks *= 5
	}
	for name, v := range map[string]string{"rapid.checks": strconv.Itoa(checks), "rapid.seed": strconv.FormatUint(seed, 10)} {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
		defer flag.Set(name, old)
	}
	f()
}

// mutantBudgets is how many cases the campaign may take to find each
// mutant, with each of the seeds TestMutantsFound tries. The budgets are
// about three times the most cases it took over the five seeds, and never
// more than 2,000; those measured since the faults of minutes came, over
// the 20 seeds of the package documentation's mutant tables
// (check-then-create, the last three mutants' and
// election-stale-observer's).
var mutantBudgets = map[string]int{
	"herd":                  30,
	"wrong-watch":           20,
	"no-relist":             60,
	"whole-name-order":      20,
	"check-then-create":     225,
	"timed-wait":            80,
	"wrong-unlock":          2000,
	"plain-retry":           300,
	"spin":                  80,
	"reenter-failed-unlock": 900,
	"sequence-wrap":         150,
	"closed-retry":          40,
	"forget-guid":           700,
	"listing-order":         60,
	"reaper-gives-up":       2000,
	"unlock-trusts-no-node": 2000,
	// The elections'.
	"election-herd":                170,
	"election-exists":              60,
	"election-split-brain":         1800,
	"election-stale-observer":      90,
	"election-leads-until-expired": 1650,
	// The read/write lock's.
	"rw-reader-waits-all":           730,
	"rw-writer-ignores-readers":     45,
	"rw-readers-watch-first-writer": 170,
	// The semaphore's.
	"sem-count-then-create": 80,
	"sem-watch-directory":   380,
	// The example of a recipe of one's own (example_recipe_test.go).
	"first-to-create": 90,
}

// byDetector accepts the findings of detector d.
func byDetector(d Detector) func(*Finding) bool {
	return func(f *Finding) bool { return f.Detector == d }
}

// sameSeedCases is how many cases TestSameSeedSameHistory runs for each
// locker and seed: 150, or 50 under the race detector.
func sameSeedCases() int {
	if raceEnabled {
		return 50
	}
	return 150
}

// mutantSeeds is how many seeds TestMutantsFound tries for each mutant:
// one in the fast tier, five in the long one (two under the race
// detector, which slows a case about tenfold).
func mutantSeeds() uint64 {
	switch {
	case !longTier:
		return 1
	case raceEnabled:
		return 2
	}
	return 5
}

// TestMutantsFound runs the campaign CheckMutex runs against each mutant,
// with mutantSeeds seeds, and checks that every seed finds the mutant within its
// budget with the detector the mutant's mistake calls for. The cases are
// the very ones CheckMutex would run; only the failing is left out, so
// that the count of cases to the first finding can be read. A mutant whose
// mistake also trips other detectors (Mutant.Also) is counted by its own.
func TestMutantsFound(t *testing.T) {
	if len(mutantBudgets) != len(withExamples()) {
		t.Fatalf("%d budgets for %d mutants and examples", len(mutantBudgets), len(withExamples()))
	}
	for _, m := range withExamples() {
		t.Run(m.Name, func(t *testing.T) {
			budget, ok := mutantBudgets[m.Name]
			if !ok {
				t.Fatalf("no budget for %s", m.Name)
			}
			cfg := Config{}
			for _, o := range m.Options {
				o(&cfg)
			}
			for seed := uint64(1); seed <= mutantSeeds(); seed++ {
				e := newEngine(m.Target.subject(), cfg.normalized())
				e.survey, e.surveyFor = true, byDetector(m.Detector)
				start := time.Now()
				withRapid(t, budget, seed, func() { rapid.Check(t, e.property) })
				f := e.lastFinding()
				if f == nil {
					t.Fatalf("seed %d: %s not found by %s in %d cases", seed, m.Name, m.Detector, budget)
				}
				t.Logf("seed %d: %s after %d cases, %v: %s", seed, f.Detector, e.firstFail.Load(), time.Since(start).Round(time.Millisecond), f.Summary)
			}
		})
	}
}

// tokenless is a sound lock that hands out no fencing token.
type tokenless struct{ l *queueLock }

func (t tokenless) Lock(ctx context.Context) error { return t.l.Lock(ctx) }
func (t tokenless) Unlock() error                  { return t.l.Unlock() }

// watchLeaker is a sound lock that, once it holds the lock, sets a watch
// on a node that never comes.
type watchLeaker struct{ *queueLock }

func (w watchLeaker) Lock(ctx context.Context) error {
	if err := w.queueLock.Lock(ctx); err != nil {
		return err
	}
	_, _, _, _ = w.conn.ExistsW(w.dir + "-never")
	return nil
}

// nodeLeaker is a sound lock that leaves a persistent node next to the
// lock's directory each time it unlocks. Not in it: a name ending in ten
// digits there would be taken for a contender, and block the queue.
type nodeLeaker struct{ *queueLock }

func (n nodeLeaker) Unlock() error {
	if err := n.queueLock.Unlock(); err != nil {
		return err
	}
	_, _ = n.conn.Create(n.dir+"-released-", nil, zk.FlagSequence, zktest.OpenACL)
	return nil
}

// panicker is a sound lock whose third Lock panics.
type panicker struct {
	*queueLock
	locks int
}

func (p *panicker) Lock(ctx context.Context) error {
	if p.locks++; p.locks == 3 {
		panic("the third Lock")
	}
	return p.queueLock.Lock(ctx)
}

// tokenKeeper is recipe.Mutex with a Token that keeps reporting the last
// hold's token once the hold is over.
type tokenKeeper struct {
	recipeMutex
	last int64
}

func (k *tokenKeeper) Token() int64 {
	if t := k.recipeMutex.Token(); t != 0 {
		k.last = t
	}
	return k.last
}

// TestStateListenerPromise feeds the state listener the harness installs
// changes that break recipe.WithStateListener's promise — one that no hold
// makes, and one told while another is being heard — and checks that it
// notices each, and nothing in a life that keeps it.
func TestStateListenerPromise(t *testing.T) {
	const (
		unlocked  = recipe.MutexUnlocked
		held      = recipe.MutexHeld
		suspended = recipe.MutexSuspended
		lost      = recipe.MutexLost
		releasing = recipe.MutexReleasing
	)
	for _, c := range []struct {
		heard []recipe.MutexState
		ok    bool
	}{
		{[]recipe.MutexState{held, suspended, held, releasing, unlocked, held, suspended, lost, unlocked, held, unlocked}, true},
		{[]recipe.MutexState{held, unlocked, releasing}, false},
		{[]recipe.MutexState{held, lost, releasing}, false},
		{[]recipe.MutexState{suspended}, false},
		{[]recipe.MutexState{held, held}, false},
	} {
		var l stateHeard
		for _, s := range c.heard {
			l.hear(s)
		}
		if _, trouble := l.heard(); (trouble == "") != c.ok {
			t.Errorf("%v: trouble %q, want ok=%v", c.heard, trouble, c.ok)
		}
	}
	var l stateHeard
	l.inside.Add(1) // as if another change were being heard now
	l.hear(held)
	if _, trouble := l.heard(); !strings.Contains(trouble, "while it was still hearing") {
		t.Errorf("a change told during another: trouble %q", trouble)
	}
}

// TestDetectorsFindTheirBugs gives each detector that no mutant is for a
// lock with the bug it is about, and checks that it finds it, by name,
// within a budget.
func TestDetectorsFindTheirBugs(t *testing.T) {
	for _, c := range []struct {
		name      string
		newLocker NewLocker
		opts      []Option
		want      Detector
		budget    int
	}{
		{"no fencing token", func(conn zktest.Conn, path string) Locker {
			return tokenless{&queueLock{conn: conn, dir: path}}
		}, []Option{WithFencing(FencingAlways)}, UnfencedWrite, 300},
		{"watch left behind", func(conn zktest.Conn, path string) Locker {
			return watchLeaker{&queueLock{conn: conn, dir: path}}
		}, nil, Leak, 20},
		{"node left behind", func(conn zktest.Conn, path string) Locker {
			return nodeLeaker{&queueLock{conn: conn, dir: path}}
		}, nil, Leak, 20},
		{"panic", func(conn zktest.Conn, path string) Locker {
			return &panicker{queueLock: &queueLock{conn: conn, dir: path}}
		}, nil, Panic, 20},
		{"token kept after Unlock", func(conn zktest.Conn, path string) Locker {
			return &tokenKeeper{recipeMutex: RecipeMutex(conn, path).(recipeMutex)}
		}, nil, StateReport, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			for _, o := range c.opts {
				o(&cfg)
			}
			e := newEngine(Lock(c.newLocker).subject(), cfg.normalized())
			e.survey = true
			withRapid(t, c.budget, 1, func() { rapid.Check(t, e.property) })
			f := e.lastFinding()
			if f == nil {
				t.Fatalf("not found in %d cases", c.budget)
			}
			if f.Detector != c.want {
				t.Fatalf("found by %s, want %s: %s\n%s", f.Detector, c.want, f.Summary, f.Story)
			}
			t.Logf("%s after %d cases: %s", f.Detector, e.firstFail.Load(), f.Summary)
		})
	}
}

// TestSameSeedSameHistory runs campaigns twice with the same seed and
// compares every case's transcript — the story and the fake server's event
// log — as strings: the harness, not the Go scheduler, decides what
// happens. A different seed gives different cases.
//
// The fast tier runs the project's recipes, the mutants' sound lock and
// one mutant of each recipe kind; the long tier runs every mutant.
func TestSameSeedSameHistory(t *testing.T) {
	targets := map[string]Target{"sound queue lock": Lock(soundQueueLock), "recipe.Mutex": Lock(RecipeMutex), "recipe.Election": Election(RecipeElection), "recipe.RWMutex": RWMutex(RecipeRWMutex), "recipe.Semaphore": Semaphore(RecipeSemaphore)}
	kinds := map[string]bool{}
	for _, m := range Mutants() {
		if longTier || !kinds[m.Recipe] {
			targets[m.Name] = m.Target
		}
		kinds[m.Recipe] = true
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			run := func(seed uint64) []string {
				var transcripts []string
				e := newEngine(target.subject(), Config{}.normalized())
				e.survey = true
				e.onCase = func(c *caseResult) { transcripts = append(transcripts, c.transcript()) }
				withRapid(t, sameSeedCases(), seed, func() { rapid.Check(t, e.property) })
				return transcripts
			}
			first, second := run(42), run(42)
			if len(first) != len(second) {
				t.Fatalf("same seed, %d cases then %d", len(first), len(second))
			}
			for i := range first {
				if first[i] != second[i] {
					t.Fatalf("same seed, case %d differs:\n--- first\n%s\n--- second\n%s", i+1, first[i], second[i])
				}
			}
			other := run(43)
			same := len(other) == len(first)
			for i := 0; same && i < len(first); i++ {
				same = other[i] == first[i]
			}
			if same {
				t.Fatal("seeds 42 and 43 gave the same cases: the seed is not used")
			}
			t.Logf("%d cases, each the same twice", len(first))
		})
	}
}

// TestPartitionsEndBothWays checks that partitions are drawn to end both
// ways — some healed in time for the session to survive, some after it
// expired — in at least a fifth of the partitions each, and that some
// survive a cut their client noticed (the session resumed on reconnect,
// watches re-armed), which is the path where a holder goes from suspended
// back to held.
func TestPartitionsEndBothWays(t *testing.T) {
	f, cases := defaultFaultCounts(t)
	if f.Partitions < 100 {
		t.Fatalf("only %d partitions in %d cases", f.Partitions, cases)
	}
	if 5*f.PartitionsSurvived() < f.Partitions || 5*f.PartitionsExpired < f.Partitions {
		t.Errorf("of %d partitions, %d survived and %d expired: want at least a fifth each", f.Partitions, f.PartitionsSurvived(), f.PartitionsExpired)
	}
	if f.PartitionsResumed == 0 {
		t.Errorf("no session resumed after its client noticed a partition")
	}
	if f.PausesSurvived == 0 || f.PausesExpired == 0 {
		t.Errorf("pauses: %d thawed in time, %d expired: want some of each", f.PausesSurvived, f.PausesExpired)
	}
}

// defaultFaultCounts runs 300 cases of a default campaign against the
// sound queue lock, counting the faults drawn, and returns the counts and
// how many cases ran. The campaign is the same for every test that asks,
// and runs once.
func defaultFaultCounts(t *testing.T) (Faults, int64) {
	faultCounts.once.Do(func() {
		e := newEngine(Lock(soundQueueLock).subject(), Config{}.normalized())
		e.countOnly = true
		withRapid(t, 300, 1, func() { rapid.Check(t, e.property) })
		faultCounts.f, faultCounts.cases = e.faultCounts(), e.runs.Load()
	})
	t.Logf("%d cases: %s", faultCounts.cases, faultCounts.f)
	return faultCounts.f, faultCounts.cases
}

// faultCounts keeps defaultFaultCounts's campaign.
var faultCounts struct {
	once  sync.Once
	f     Faults
	cases int64
}

// TestFaultsOfMinutesDrawn checks that a default campaign draws every
// fault that outlasts a recipe's timers, or reaches it late, and that each
// ends each way it can: quorum losses, some over a minute; partitions over
// a minute, some survived; new sessions on a lagging follower; watch
// events held back, some until a later reply; sessions over a minute; and
// cases near a sequence wrap.
func TestFaultsOfMinutesDrawn(t *testing.T) {
	f, cases := defaultFaultCounts(t)
	for name, n := range map[string]int{
		"quorum losses": f.QuorumLosses, "quorum losses over a minute": f.QuorumLossesLong,
		"partitions over a minute": f.LongPartitions, "partitions over a minute survived": f.LongPartitionsSurvived,
		"new sessions on a lagging follower": f.LaggingNewSessions,
		"late watch events":                  f.LateEvents, "late watch events after a later reply": f.LateEventsAfterReply,
		"sessions over a minute": f.LongSessions, "cases near a wrap": f.WrapCases,
	} {
		if n == 0 {
			t.Errorf("no %s in %d cases", name, cases)
		}
	}
}

// TestHelperCheckMutex is run by TestCheckMutexFailsAndReplays in a child
// process, where failing is its purpose.
func TestHelperCheckMutex(t *testing.T) {
	name := os.Getenv("ZKFUZZ_HELPER_MUTANT")
	if name == "" {
		t.Skip("runs only as TestCheckMutexFailsAndReplays's child")
	}
	m, ok := mutantOrExample(name)
	if !ok {
		t.Fatalf("no mutant %q", name)
	}
	Check(t, m.Target, append(m.Options, WithHTMLDir(os.Getenv("ZKFUZZ_HELPER_HTML")))...)
}

// TestCheckMutexFailsAndReplays runs CheckMutex against every mutant in a
// child test process, in a directory of its own, and checks what a person
// gets: the test fails naming the mutant's detector, with the shrunk
// story, the HTML report written where asked, and rapid's fail file under
// testdata/rapid; and a plain rerun replays that fail file first.
//
// The fast tier runs one mutant for each detector that finds one; the
// long tier runs them all.
func TestCheckMutexFailsAndReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("shrinks findings of mutants in child processes")
	}
	detectors := map[Detector]bool{}
	for _, m := range withExamples() {
		t.Run(m.Name, func(t *testing.T) {
			if !longTier && detectors[m.Detector] {
				t.Skip("another mutant of this detector runs in the fast tier; the long tier (-tags long) runs them all")
			}
			detectors[m.Detector] = true
			t.Parallel()
			dir, html := t.TempDir(), t.TempDir()
			child := func(args ...string) (string, error) {
				cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperCheckMutex$", "-rapid.shrinktime=3s"}, args...)...)
				cmd.Dir = dir
				// ZK_SERVERS names no ensemble that answers: CheckMutex
				// must not look at it.
				cmd.Env = append(withoutServers(os.Environ()), "ZKFUZZ_HELPER_MUTANT="+m.Name, "ZKFUZZ_HELPER_HTML="+html, ensemble.ServersEnv+"=127.0.0.1:1")
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			out, err := child(fmt.Sprintf("-rapid.checks=%d", mutantBudgets[m.Name]), "-rapid.seed=1")
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("CheckMutex did not fail the test (%v):\n%s", err, out)
			}
			detector := m.Detector
			for _, also := range m.Also {
				if !strings.Contains(out, "✗ "+string(detector)) && strings.Contains(out, "✗ "+string(also)) {
					detector = also
				}
			}
			for _, want := range []string{"[rapid] failed after", string(detector) + ": ", "  1. [+0.000s] ", "✗ " + string(detector)} {
				if !strings.Contains(out, want) {
					t.Fatalf("the failure lacks %q:\n%s", want, out)
				}
			}
			report := regexp.MustCompile(`porcupine's view of the history: (\S+\.html)`).FindStringSubmatch(out)
			if report == nil || filepath.Dir(report[1]) != html {
				t.Fatalf("no HTML report in %s:\n%s", html, out)
			}
			if _, err := os.Stat(report[1]); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "testdata", "rapid", "TestHelperCheckMutex", "*.fail"))
			if len(files) != 1 {
				t.Fatalf("want one fail file under testdata/rapid/TestHelperCheckMutex, have %v:\n%s", files, out)
			}
			// A plain rerun, without the seed, replays the fail file
			// before anything else, and fails at once — on the fake, even
			// with ZK_SERVERS naming an ensemble (one that is not there).
			out, err = child()
			if !errors.As(err, &exit) || !strings.Contains(out, "[rapid] failed after 0 tests") || !strings.Contains(out, string(detector)+": ") {
				t.Fatalf("the rerun did not replay the fail file (%v):\n%s", err, out)
			}
		})
	}
}

// TestEnsembleFindsTimedWait runs, when ZK_SERVERS names an ensemble, a
// campaign against the timed-wait mutant on it: real time, real scheduling,
// faults through the loopback proxy. Holders keep the lock longer than the
// mutant's one-second wait often enough that a few cases find it.
func TestEnsembleFindsTimedWait(t *testing.T) {
	m, _ := MutantByName("timed-wait")
	e := newEngine(m.Target.subject(), Config{Servers: ensemble.Servers(t)}.normalized())
	e.survey = true
	e.realCampaign(t, 8, 1)
	f := e.lastFinding()
	if f == nil {
		t.Fatal("eight cases on the ensemble did not find timed-wait")
	}
	if f.Detector != m.Detector {
		t.Fatalf("found by %s, want %s: %s", f.Detector, m.Detector, f.Summary)
	}
	t.Logf("%s after %d cases: %s", f.Detector, e.firstFail.Load(), f.Summary)
}

// withoutServers drops ZK_SERVERS from an environment.
func withoutServers(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ZK_SERVERS=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestModeIsExplicit checks that the environment does not choose the
// mode: with ZK_SERVERS naming an ensemble that is not there, CheckMutex
// still runs its cases on the fake (on the ensemble, it would fail to
// connect).
func TestModeIsExplicit(t *testing.T) {
	t.Setenv(ensemble.ServersEnv, "127.0.0.1:1")
	CheckMutex(t, soundQueueLock)
	var c Config
	OnEnsemble()(&c)
	if c.Servers != nil {
		t.Errorf("OnEnsemble() set Servers to %v", c.Servers)
	}
	OnEnsemble("127.0.0.1:2181")(&c)
	if len(c.Servers) != 1 {
		t.Errorf("OnEnsemble(one) set Servers to %v", c.Servers)
	}
}

// TestRunRefusesTests checks that Run, which runs a campaign as a test
// suite of its own, refuses to run inside a test binary.
func TestRunRefusesTests(t *testing.T) {
	if _, err := Run(t.Context(), Lock(RecipeMutex), Config{}); !errors.Is(err, ErrInTest) {
		t.Fatalf("Run in a test: %v, want ErrInTest", err)
	}
}

func TestStableElidesGUIDs(t *testing.T) {
	in := "create /lock/_c_0123456789abcdef0123456789ABCDEF-__lock__0000000003 and /lock/_c_x-lock-1 and /a/_c_0123456789abcdef0123456789abcdef-lock-0000000010"
	want := "create /lock/_c_…-__lock__0000000003 and /lock/_c_x-lock-1 and /a/_c_…-lock-0000000010"
	if got := stable(in); got != want {
		t.Fatalf("stable(%q) = %q, want %q", in, got, want)
	}
	const g = "0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		"":                   "",
		"_c_":                "_c_",
		"x_c_" + g:           "x_c_" + g,
		"_c_" + g[1:] + "g-": "_c_" + g[1:] + "g-",
		"_c__c_" + g + "-x":  "_c__c_…-x",
		// A lease named by a GUID alone, as a path and in a listing.
		"delete /semaphores/imports/" + g:      "delete /semaphores/imports/…",
		"[" + g + " " + g + "]":                "[" + g + " " + g + "]",
		g + ", /s/" + g + " (ephemeral)":       "…, /s/… (ephemeral)",
		"/s/" + g + "0 /s/x" + g + " /s/" + g:  "/s/" + g + "0 /s/x" + g + " /s/…",
		"/s/" + g + "-lock /s/" + g[:31] + "/": "/s/" + g + "-lock /s/" + g[:31] + "/",
	} {
		if got := stable(in); got != want {
			t.Errorf("stable(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRecipeMutex is the campaign as a fuzz target: `go test ./fuzz
// -fuzz=FuzzRecipeMutex` lets the fuzzer choose the draws; a plain `go test`
// runs the seed corpus.
func FuzzRecipeMutex(f *testing.F) {
	// rapid reads eight bytes a draw, and a case draws a few hundred
	// times; shorter inputs run out, and the fuzzer skips them.
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		input := make([]byte, 8<<10)
		for i := range input {
			input[i] = byte(r.Uint32())
		}
		f.Add(input)
	}
	f.Fuzz(Fuzz(Lock(RecipeMutex)))
}

func TestAbbreviatedListsLongListingsInPart(t *testing.T) {
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("n%02d", i))
	}
	if got := abbreviated(names[:listedInFull], " "); got != strings.Join(names[:listedInFull], " ") {
		t.Errorf("%d names: %q, want them all", listedInFull, got)
	}
	want := "n00 n01 n02 n03 n04 n05 n06 n07 … 4 more … n12 n13 n14 n15 n16 n17 n18 n19"
	if got := abbreviated(names, " "); got != want {
		t.Errorf("20 names: %q, want %q", got, want)
	}
}
