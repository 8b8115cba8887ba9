package linearizability_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zksim/zksim/linearizability"
	"pgregory.net/rapid"
)

const (
	semPath = "/sem"
	semMax  = 2
)

func leaseAcquire(session int64, lease string) linearizability.SemaphoreInput {
	return linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: semPath, Max: semMax, Session: session, Lease: lease}
}

func leaseRelease(session int64, lease string) linearizability.SemaphoreInput {
	return linearizability.SemaphoreInput{Op: linearizability.LeaseRelease, Semaphore: semPath, Max: semMax, Session: session, Lease: lease}
}

var (
	semDone    = linearizability.SemaphoreOutput{OK: true} // acquired, or released
	semRefused = linearizability.SemaphoreOutput{}         // none free, or a release failed
	semUnknown = linearizability.SemaphoreUnknown{}
)

// semFull: sessions 1 and 2 hold leases a and b, both semMax of them,
// from 10 on.
func semFull() *builder {
	return new(builder).
		op(0, 0, 10, leaseAcquire(1, "a"), semDone).
		op(1, 0, 10, leaseAcquire(2, "b"), semDone)
}

type semaphoreCase struct {
	name string
	h    *builder
	want linearizability.Outcome
}

func semaphoreCases() []semaphoreCase {
	return []semaphoreCase{
		// At most Max leases at once.
		{"N holders at once", semFull().
			op(0, 20, 30, leaseRelease(1, "a"), semDone).
			op(1, 20, 30, leaseRelease(2, "b"), semDone),
			linearizability.Ok},
		{"N+1 holders at once", semFull().
			op(2, 20, 30, leaseAcquire(3, "c"), semDone).
			op(0, 40, 50, leaseRelease(1, "a"), semDone),
			linearizability.Illegal},
		{"N+1 holders one after the other", semFull().
			op(0, 20, 30, leaseRelease(1, "a"), semDone).
			op(2, 40, 50, leaseAcquire(3, "c"), semDone),
			linearizability.Ok},
		{"an acquisition concurrent with the release it waited for", semFull().
			op(0, 20, 40, leaseRelease(1, "a"), semDone).
			op(2, 15, 30, leaseAcquire(3, "c"), semDone),
			linearizability.Ok},
		{"one session holding two leases", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 0, 10, leaseAcquire(1, "b"), semDone).
			op(2, 20, 30, leaseAcquire(3, "c"), semDone),
			linearizability.Illegal},

		// Expiry frees leases.
		{"expiry frees a lease", semFull().
			expire(1, 20, 20).
			op(2, 15, 30, leaseAcquire(3, "c"), semDone),
			linearizability.Ok},
		{"a lease held until its session expires", semFull().
			expire(1, 40, 40).
			op(2, 15, 30, leaseAcquire(3, "c"), semDone),
			linearizability.Illegal},
		{"expiry frees all the session's leases", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 0, 10, leaseAcquire(1, "b"), semDone).
			expire(1, 20, 20).
			op(2, 30, 40, leaseAcquire(3, "c"), semDone).
			op(3, 30, 40, leaseAcquire(4, "d"), semDone),
			linearizability.Ok},
		{"an expired session cannot acquire", new(builder).
			expire(1, 5, 5).
			op(0, 10, 20, leaseAcquire(1, "a"), semDone),
			linearizability.Illegal},

		// Releases.
		{"releasing a lease not held", new(builder).
			op(0, 0, 10, leaseRelease(1, "a"), semDone),
			linearizability.Illegal},
		{"releasing another session's lease", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 20, 30, leaseRelease(2, "a"), semDone),
			linearizability.Illegal},
		{"releasing another lease of the session's", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(0, 20, 30, leaseRelease(1, "b"), semDone),
			linearizability.Illegal},
		{"a failed release after the session expired", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			expire(1, 20, 20).
			op(0, 30, 40, leaseRelease(1, "a"), semRefused),
			linearizability.Ok},
		{"a failed release while holding", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(0, 20, 30, leaseRelease(1, "a"), semRefused),
			linearizability.Illegal},

		// TryAcquire that found none free.
		{"none free when full", semFull().
			op(2, 20, 30, leaseAcquire(3, ""), semRefused),
			linearizability.Ok},
		{"none free when not full", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(2, 20, 30, leaseAcquire(3, ""), semRefused),
			linearizability.Illegal},
		{"none free concurrently with a release", semFull().
			op(0, 20, 40, leaseRelease(1, "a"), semDone).
			op(2, 30, 50, leaseAcquire(3, ""), semRefused),
			linearizability.Ok},
		{"none free for an expired session", new(builder).
			expire(3, 5, 5).
			op(2, 10, 20, leaseAcquire(3, ""), semRefused),
			linearizability.Ok},

		// Unknown outcomes.
		{"a crashed acquirer's lease explains a full semaphore", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 5, 0, leaseAcquire(2, ""), nil).
			op(2, 20, 30, leaseAcquire(3, ""), semRefused),
			linearizability.Ok},
		{"a crashed acquirer holds until its session expires", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 5, 0, leaseAcquire(2, ""), nil).
			op(2, 20, 30, leaseAcquire(3, ""), semRefused).
			expire(2, 35, 35).
			op(3, 40, 50, leaseAcquire(4, "d"), semDone),
			linearizability.Ok},
		{"a crashed acquirer whose session never expires", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 5, 0, leaseAcquire(2, ""), nil).
			op(2, 20, 30, leaseAcquire(3, ""), semRefused).
			op(3, 40, 50, leaseAcquire(4, "d"), semDone),
			linearizability.Illegal},
		{"a crashed acquirer may never have held", semFull().
			op(2, 5, 0, leaseAcquire(3, ""), nil).
			op(0, 20, 30, leaseRelease(1, "a"), semDone).
			op(3, 40, 50, leaseAcquire(4, "d"), semDone),
			linearizability.Ok},
		{"an unknown acquisition and release: held and let go", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 0, 10, leaseAcquire(2, "b"), semUnknown).
			op(4, 0, 10, leaseRelease(2, "b"), semUnknown).
			op(2, 2, 8, leaseAcquire(3, ""), semRefused).
			op(3, 20, 30, leaseAcquire(4, "d"), semDone),
			linearizability.Ok},
		{"an unknown acquisition alone holds on", new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 0, 10, leaseAcquire(2, "b"), semUnknown).
			op(2, 2, 8, leaseAcquire(3, ""), semRefused).
			op(3, 20, 30, leaseAcquire(4, "d"), semDone),
			linearizability.Illegal},
		{"an unknown release may have let go", semFull().
			op(1, 20, 0, leaseRelease(2, "b"), nil).
			op(2, 30, 40, leaseAcquire(3, "c"), semDone),
			linearizability.Ok},
		{"an unknown release let go within its call", semFull().
			op(1, 20, 30, leaseRelease(2, "b"), semUnknown).
			op(2, 25, 40, leaseAcquire(3, "c"), semDone),
			linearizability.Ok},
		{"an unknown release lets nothing go before its call", semFull().
			op(2, 12, 15, leaseAcquire(3, "c"), semDone).
			op(1, 20, 0, leaseRelease(2, "b"), nil),
			linearizability.Illegal},

		// Semaphores are checked one at a time.
		{"semaphores are independent", semFull().
			op(2, 20, 30, linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: "/other", Max: 1, Session: 3, Lease: "c"}, semDone),
			linearizability.Ok},
		{"an expiry frees leases of every semaphore", semFull().
			op(0, 0, 10, linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: "/other", Max: 1, Session: 1, Lease: "x"}, semDone).
			expire(1, 20, 20).
			op(2, 30, 40, leaseAcquire(3, "c"), semDone).
			op(2, 50, 60, linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: "/other", Max: 1, Session: 3, Lease: "y"}, semDone),
			linearizability.Ok},
	}
}

func TestSemaphoreHandBuilt(t *testing.T) {
	for _, tt := range semaphoreCases() {
		t.Run(tt.name, func(t *testing.T) {
			res, err := linearizability.CheckSemaphore(tt.h.h, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, res, tt.want)
		})
	}
}

// TestSemaphoreMutantsAreCaught: each rule of the model matters — with any
// one of them broken, some case of the table gets the wrong outcome.
func TestSemaphoreMutantsAreCaught(t *testing.T) {
	cases := semaphoreCases()
	run := func(t *testing.T, model porcupine.Model, c semaphoreCase) linearizability.Outcome {
		t.Helper()
		res, err := linearizability.Check(c.h.h, model, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return res.Outcome
	}
	t.Run("real model", func(t *testing.T) {
		for _, c := range cases {
			if got := run(t, linearizability.SemaphoreModel(), c); got != c.want {
				t.Errorf("%s: got %v through Check, want %v", c.name, got, c.want)
			}
		}
	})
	mutants := linearizability.SemaphoreMutants()
	for _, name := range slices.Sorted(maps.Keys(mutants)) {
		t.Run(name, func(t *testing.T) {
			var caughtBy []string
			for _, c := range cases {
				if got := run(t, mutants[name], c); got != c.want {
					caughtBy = append(caughtBy, c.name+" ("+string(got)+")")
				}
			}
			if len(caughtBy) == 0 {
				t.Fatal("no case tells the mutant from the model")
			}
			t.Logf("caught by: %s", strings.Join(caughtBy, "; "))
		})
	}
}

func TestSemaphoreReport(t *testing.T) {
	h := semFull().
		op(2, 20, 30, leaseAcquire(3, "c"), semDone).
		op(0, 40, 50, leaseRelease(1, "a"), semDone)
	h.h.Faults = []linearizability.Fault{{Kind: linearizability.FaultExpiry, ClientID: 2, Detail: "holder paused", Start: 15, End: 35}}
	res, err := linearizability.CheckSemaphore(h.h, 10*time.Second)
	if err != nil || res.Outcome != linearizability.Illegal {
		t.Fatalf("got %v, %v; want Illegal", res, err)
	}
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(path), "semaphore-") {
		t.Errorf("report written to %s, want a semaphore-*.html file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"holder paused", // the fault
		"0x3 lease-acquire /sem lease c (max 2) → acquired", // operations
		"2 leases held: 0x1 a, 0x2 b",                       // states
		"semaphore: Illegal",                                // the outcome
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report does not contain %q", want)
		}
	}
}

func TestCheckSemaphoreRejectsBadInput(t *testing.T) {
	for name, h := range map[string]*builder{
		"a mutex input":     new(builder).op(0, 0, 10, acquire(1), semDone),
		"a mutex output":    new(builder).op(0, 0, 10, leaseAcquire(1, "a"), ok(0)),
		"an unknown op":     new(builder).op(0, 0, 10, linearizability.SemaphoreInput{Op: 9, Max: 1}, semDone),
		"a mutex's unknown": new(builder).op(0, 0, 10, leaseAcquire(1, "a"), linearizability.MutexUnknown{}),
		"no Max":            new(builder).op(0, 0, 10, linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: semPath, Session: 1}, semDone),
		"two Maxes for one semaphore": new(builder).
			op(0, 0, 10, leaseAcquire(1, "a"), semDone).
			op(1, 0, 10, linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: semPath, Max: semMax + 1, Session: 2, Lease: "b"}, semDone),
	} {
		if _, err := linearizability.CheckSemaphore(h.h, time.Second); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestPropertySimulatedSemaphoresAreLegal: concurrent histories of a
// correct semaphore, with tries, crashed clients and expiries, check Ok;
// and histories of one that hands out a lease too many check Illegal
// whenever they show more than Max leases held at once beyond doubt.
func TestPropertySimulatedSemaphoresAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		unknown := rapid.IntRange(0, 4).Draw(t, "unknown")
		max := rapid.IntRange(1, 3).Draw(t, "max")
		if res, err := linearizability.CheckSemaphore(simulateSemaphore(seed, ops, unknown, max, false), time.Minute); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("got %v, %v; want Ok", res, err)
		}
		h := simulateSemaphore(seed, ops, unknown, max, true)
		if mostAtOnce(semaphoreHolds(h)) <= max {
			return
		}
		if res, err := linearizability.CheckSemaphore(h, time.Minute); err != nil || res.Outcome != linearizability.Illegal {
			t.Fatalf("%d leases at once: got %v, %v; want Illegal", max+1, res, err)
		}
	})
}

// TestSimulatedLaxSemaphoreShows: the property above is not vacuous — a
// semaphore that hands out a lease too many shows it beyond doubt in most
// long histories.
func TestSimulatedLaxSemaphoreShows(t *testing.T) {
	shown := 0
	for seed := range uint64(20) {
		if mostAtOnce(semaphoreHolds(simulateSemaphore(seed, 300, 2, 2, true))) > 2 {
			shown++
		}
	}
	if shown < 10 {
		t.Fatalf("%d of 20 histories show 3 leases at once beyond doubt, want at least 10", shown)
	}
}
