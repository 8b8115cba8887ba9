package fuzz

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// TestRecipeMutex runs the project's lock through campaigns of every size
// of client group: rapid's -rapid.checks cases each (100 by default, 400
// in all). A longer run: go test ./fuzz -run TestRecipeMutex -rapid.checks=2500.
func TestRecipeMutex(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			t.Parallel()
			Check(t, Lock(RecipeMutex), WithClients(n))
		})
	}
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

// TestRunRefusesTests checks that Run, which runs a campaign as a test
// suite of its own, refuses to run inside a test binary.
func TestRunRefusesTests(t *testing.T) {
	if _, err := Run(t.Context(), Lock(RecipeMutex)); !errors.Is(err, ErrInTest) {
		t.Fatalf("Run in a test: %v, want ErrInTest", err)
	}
}

func TestStableElidesGUIDs(t *testing.T) {
	in := "create /lock/_c_0123456789abcdef0123456789ABCDEF-__lock__0000000003 and /lock/_c_x-lock-1 and /a/_c_0123456789abcdef0123456789abcdef-lock-0000000010"
	want := "create /lock/_c_…-__lock__0000000003 and /lock/_c_x-lock-1 and /a/_c_…-lock-0000000010"
	if got := StableName(in); got != want {
		t.Fatalf("StableName(%q) = %q, want %q", in, got, want)
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
		if got := StableName(in); got != want {
			t.Errorf("StableName(%q) = %q, want %q", in, got, want)
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

// TestStateReportFindsAKeptToken gives the state checks a lock whose
// Token outlives its hold, and checks that they find it.
func TestStateReportFindsAKeptToken(t *testing.T) {
	target := Lock(func(conn zktest.Conn, path string) Locker {
		return &tokenKeeper{recipeMutex: RecipeMutex(conn, path).(recipeMutex)}
	})
	f, cases := Survey(t, target, nil, 20, 1, nil)
	if f == nil {
		t.Fatal("not found in 20 cases")
	}
	if f.Detector != StateReport {
		t.Fatalf("found by %s, want %s: %s\n%s", f.Detector, StateReport, f.Summary, f.Story)
	}
	t.Logf("%s after %d cases: %s", f.Detector, cases, f.Summary)
}

// TestOnEnsembleNeedsServers checks that OnEnsemble chooses the real
// ensemble only when it names one.
func TestOnEnsembleNeedsServers(t *testing.T) {
	if c := configure([]Option{OnEnsemble()}); c.Servers != nil {
		t.Errorf("OnEnsemble() set Servers to %v", c.Servers)
	}
	if c := configure([]Option{OnEnsemble("127.0.0.1:2181")}); len(c.Servers) != 1 {
		t.Errorf("OnEnsemble(one) set Servers to %v", c.Servers)
	}
}
