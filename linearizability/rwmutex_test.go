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

const rwPath = "/rw"

func rwInput(op linearizability.RWMutexOp, session, token int64) linearizability.RWMutexInput {
	return linearizability.RWMutexInput{Op: op, Lock: rwPath, Session: session, Token: token}
}

func rlock(session int64) linearizability.RWMutexInput {
	return rwInput(linearizability.ReadAcquire, session, 0)
}

func runlock(session int64) linearizability.RWMutexInput {
	return rwInput(linearizability.ReadRelease, session, 0)
}

func wlock(session int64) linearizability.RWMutexInput {
	return rwInput(linearizability.WriteAcquire, session, 0)
}

func wunlock(session int64) linearizability.RWMutexInput {
	return rwInput(linearizability.WriteRelease, session, 0)
}

func rwWrite(session, token int64) linearizability.RWMutexInput {
	return rwInput(linearizability.RWWrite, session, token)
}

// rwGot is a successful acquisition, handed token (0: none).
func rwGot(token int64) linearizability.RWMutexOutput {
	return linearizability.RWMutexOutput{OK: true, Token: token}
}

var (
	rwDone    = linearizability.RWMutexOutput{OK: true} // released, or a write accepted
	rwRefused = linearizability.RWMutexOutput{}         // not acquired, a release failed, a write rejected
	rwUnknown = linearizability.RWMutexUnknown{}
)

type rwMutexCase struct {
	name string
	h    *builder
	want linearizability.Outcome
}

func rwMutexCases() []rwMutexCase {
	return []rwMutexCase{
		// Readers share, writers exclude.
		{"readers together", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 5, 15, rlock(2), rwDone).
			op(0, 20, 30, runlock(1), rwDone).
			op(1, 25, 35, runlock(2), rwDone),
			linearizability.Ok},
		{"writers one after the other", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 20, 30, wunlock(1), rwDone).
			op(1, 5, 40, wlock(2), rwGot(2)).
			op(1, 50, 60, wunlock(2), rwDone),
			linearizability.Ok},
		{"two writers at once", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(1, 20, 30, wlock(2), rwGot(2)).
			op(0, 40, 50, wunlock(1), rwDone),
			linearizability.Illegal},
		{"a writer while a reader holds", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 20, 30, wlock(2), rwGot(1)).
			op(0, 40, 50, runlock(1), rwDone),
			linearizability.Illegal},
		{"a reader while a writer holds", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(1, 20, 30, rlock(2), rwDone).
			op(0, 40, 50, wunlock(1), rwDone),
			linearizability.Illegal},
		{"a writer concurrent with the last reader's release", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 0, 10, rlock(2), rwDone).
			op(0, 20, 30, runlock(1), rwDone).
			op(1, 40, 60, runlock(2), rwDone).
			op(2, 5, 50, wlock(3), rwGot(1)),
			linearizability.Ok},
		{"one session holding both sides", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, wlock(1), rwGot(1)),
			linearizability.Illegal},
		{"a session reading twice and releasing once still reads", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, runlock(1), rwDone).
			op(2, 40, 50, wlock(2), rwGot(1)),
			linearizability.Illegal},
		{"a session reading twice and releasing twice", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, runlock(1), rwDone).
			op(1, 20, 30, runlock(1), rwDone).
			op(2, 40, 50, wlock(2), rwGot(1)),
			linearizability.Ok},
		{"releasing a read not held", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 20, 30, runlock(2), rwDone),
			linearizability.Illegal},
		{"a failed read release while reading", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, runlock(1), rwRefused),
			linearizability.Illegal},
		{"a failed write release while writing", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 20, 30, wunlock(1), rwRefused),
			linearizability.Illegal},
		{"a reader releasing the write side", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, wunlock(1), rwDone),
			linearizability.Illegal},

		// Expiry ends holds.
		{"expiry ends a read hold", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			expire(1, 20, 20).
			op(1, 15, 30, wlock(2), rwGot(1)),
			linearizability.Ok},
		{"a read hold lasts until its session expires", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			expire(1, 40, 40).
			op(1, 15, 30, wlock(2), rwGot(1)),
			linearizability.Illegal},
		{"expiry ends the write hold", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			expire(1, 20, 20).
			op(1, 15, 30, rlock(2), rwDone),
			linearizability.Ok},
		{"an expired session cannot read", new(builder).
			expire(1, 5, 5).
			op(0, 10, 20, rlock(1), rwDone),
			linearizability.Illegal},
		{"one reader's expiry leaves the others reading", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 0, 10, rlock(2), rwDone).
			expire(1, 20, 20).
			op(2, 30, 40, wlock(3), rwGot(1)).
			op(1, 50, 60, runlock(2), rwDone),
			linearizability.Illegal},

		// Tokens, for writers only.
		{"write tokens going down", new(builder).
			op(0, 0, 10, wlock(1), rwGot(5)).
			op(0, 20, 30, wunlock(1), rwDone).
			op(1, 40, 50, wlock(2), rwGot(3)),
			linearizability.Illegal},
		{"readers' tokens are not checked", new(builder).
			op(0, 0, 10, wlock(1), rwGot(5)).
			op(0, 20, 30, wunlock(1), rwDone).
			op(1, 40, 50, rlock(2), rwGot(1)),
			linearizability.Ok},

		// Fenced and unfenced writes.
		{"a paused writer's stale write rejected", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			expire(1, 50, 50).
			op(1, 40, 70, wlock(2), rwGot(2)).
			op(1, 80, 90, rwWrite(2, 2), rwDone).
			op(0, 100, 110, rwWrite(1, 1), rwRefused),
			linearizability.Ok},
		{"a paused writer's stale write accepted", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			expire(1, 50, 50).
			op(1, 40, 70, wlock(2), rwGot(2)).
			op(1, 80, 90, rwWrite(2, 2), rwDone).
			op(0, 100, 110, rwWrite(1, 1), rwDone),
			linearizability.Illegal},
		{"an unfenced write by the writer", new(builder).
			op(0, 0, 10, wlock(1), rwGot(0)).
			op(0, 20, 30, rwWrite(1, 0), rwDone),
			linearizability.Ok},
		{"an unfenced write by a reader", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, rwWrite(1, 0), rwDone),
			linearizability.Illegal},
		{"a fenced resource rejecting a fresh token", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 20, 30, rwWrite(1, 1), rwRefused),
			linearizability.Illegal},

		// Acquisitions that found the lock unavailable.
		{"a read found unavailable while a writer holds", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(1, 20, 30, rlock(2), rwRefused),
			linearizability.Ok},
		{"a read found unavailable while only readers hold", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 20, 30, rlock(2), rwRefused),
			linearizability.Illegal},
		{"a write found unavailable while a reader holds", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(1, 20, 30, wlock(2), rwRefused),
			linearizability.Ok},
		{"a write found unavailable while free", new(builder).
			op(0, 0, 10, rlock(1), rwDone).
			op(0, 20, 30, runlock(1), rwDone).
			op(1, 40, 50, wlock(2), rwRefused),
			linearizability.Illegal},
		{"a read found unavailable concurrently with the write release", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 20, 40, wunlock(1), rwDone).
			op(1, 30, 50, rlock(2), rwRefused),
			linearizability.Ok},
		{"an expired session finds the lock unavailable", new(builder).
			expire(1, 5, 5).
			op(0, 10, 20, wlock(1), rwRefused),
			linearizability.Ok},

		// Unknown outcomes.
		{"a crashed reader reads until its session expires", new(builder).
			op(0, 0, 0, rlock(1), nil).
			op(1, 20, 30, wlock(2), rwRefused).
			expire(1, 50, 50).
			op(1, 40, 70, wlock(2), rwGot(1)),
			linearizability.Ok},
		{"a crashed reader whose session never expires", new(builder).
			op(0, 0, 0, rlock(1), nil).
			op(1, 20, 30, wlock(2), rwRefused).
			op(1, 40, 70, wlock(2), rwGot(1)),
			linearizability.Illegal},
		{"a crashed writer may never have written", new(builder).
			op(0, 0, 0, wlock(1), nil).
			op(1, 20, 30, rlock(2), rwDone),
			linearizability.Ok},
		{"an unknown read acquisition and release: read and let go", new(builder).
			op(0, 0, 10, rlock(1), rwUnknown).
			op(3, 0, 10, runlock(1), rwUnknown).
			op(1, 2, 8, wlock(2), rwRefused).
			op(1, 20, 30, wlock(2), rwGot(1)),
			linearizability.Ok},
		{"an unknown read acquisition alone reads on", new(builder).
			op(0, 0, 10, rlock(1), rwUnknown).
			op(1, 2, 8, wlock(2), rwRefused).
			op(1, 20, 30, wlock(2), rwGot(1)),
			linearizability.Illegal},
		{"an unknown write release", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 20, 0, wunlock(1), nil).
			op(1, 30, 40, rlock(2), rwDone),
			linearizability.Ok},

		// Locks are checked one at a time.
		{"locks are independent", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(1, 20, 30, linearizability.RWMutexInput{Op: linearizability.WriteAcquire, Lock: "/other", Session: 2}, rwGot(1)).
			op(2, 20, 30, linearizability.RWMutexInput{Op: linearizability.ReadAcquire, Lock: "/third", Session: 3}, rwDone),
			linearizability.Ok},
		{"an expiry ends holds on every lock", new(builder).
			op(0, 0, 10, wlock(1), rwGot(1)).
			op(0, 0, 10, linearizability.RWMutexInput{Op: linearizability.ReadAcquire, Lock: "/other", Session: 1}, rwDone).
			expire(1, 20, 20).
			op(1, 30, 40, rlock(2), rwDone).
			op(1, 30, 40, linearizability.RWMutexInput{Op: linearizability.WriteAcquire, Lock: "/other", Session: 2}, rwGot(1)),
			linearizability.Ok},
	}
}

func TestRWMutexHandBuilt(t *testing.T) {
	for _, tt := range rwMutexCases() {
		t.Run(tt.name, func(t *testing.T) {
			res, err := linearizability.CheckRWMutex(tt.h.h, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, res, tt.want)
		})
	}
}

// TestRWMutexMutantsAreCaught: each rule of the model matters — with any
// one of them broken, some case of the table gets the wrong outcome.
func TestRWMutexMutantsAreCaught(t *testing.T) {
	cases := rwMutexCases()
	run := func(t *testing.T, model porcupine.Model, c rwMutexCase) linearizability.Outcome {
		t.Helper()
		res, err := linearizability.Check(c.h.h, model, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return res.Outcome
	}
	t.Run("real model", func(t *testing.T) {
		for _, c := range cases {
			if got := run(t, linearizability.RWMutexModel(), c); got != c.want {
				t.Errorf("%s: got %v through Check, want %v", c.name, got, c.want)
			}
		}
	})
	mutants := linearizability.RWMutexMutants()
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

func TestRWMutexReport(t *testing.T) {
	h := new(builder).
		op(0, 0, 10, rlock(1), rwDone).
		op(1, 0, 10, rlock(2), rwDone).
		op(1, 12, 14, rlock(2), rwDone).
		op(2, 20, 30, wlock(3), rwGot(4)).
		op(0, 40, 50, runlock(1), rwDone)
	h.h.Faults = []linearizability.Fault{{Kind: linearizability.FaultPartition, ClientID: 0, Detail: "reader cut off", Start: 15, End: 35}}
	res, err := linearizability.CheckRWMutex(h.h, 10*time.Second)
	if err != nil || res.Outcome != linearizability.Illegal {
		t.Fatalf("got %v, %v; want Illegal", res, err)
	}
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(path), "rwmutex-") {
		t.Errorf("report written to %s, want an rwmutex-*.html file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"reader cut off",                  // the fault
		"0x1 read-acquire /rw → acquired", // operations
		"write-acquire /rw → acquired, token 4",
		"read side held by 0x1, 0x2 ×2", // states
		"rwmutex: Illegal",              // the outcome
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report does not contain %q", want)
		}
	}
}

func TestCheckRWMutexRejectsBadInput(t *testing.T) {
	for name, h := range map[string]*builder{
		"a mutex input":    new(builder).op(0, 0, 10, acquire(1), rwGot(0)),
		"a mutex output":   new(builder).op(0, 0, 10, rlock(1), ok(0)),
		"an unknown op":    new(builder).op(0, 0, 10, linearizability.RWMutexInput{Op: 9}, rwDone),
		"a mutex unknown":  new(builder).op(0, 0, 10, wlock(1), linearizability.MutexUnknown{}),
		"no op":            new(builder).op(0, 0, 10, linearizability.RWMutexInput{}, rwDone),
		"a foreign string": new(builder).op(0, 0, 10, "read-acquire", rwDone),
	} {
		if _, err := linearizability.CheckRWMutex(h.h, time.Second); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestPropertySimulatedRWMutexesAreLegal: concurrent histories of a correct
// read/write lock, with tries, crashed clients and expiries, check Ok; and
// histories of a lock that lets a writer in beside readers check Illegal
// whenever they show a writer's hold overlapping another's beyond doubt.
func TestPropertySimulatedRWMutexesAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		unknown := rapid.IntRange(0, 4).Draw(t, "unknown")
		if res, err := linearizability.CheckRWMutex(simulateRWMutex(seed, ops, unknown, false), time.Minute); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("got %v, %v; want Ok", res, err)
		}
		h := simulateRWMutex(seed, ops, unknown, true)
		if !writerShares(rwHolds(h)) {
			return
		}
		if res, err := linearizability.CheckRWMutex(h, time.Minute); err != nil || res.Outcome != linearizability.Illegal {
			t.Fatalf("a writer beside a reader: got %v, %v; want Illegal", res, err)
		}
	})
}

// TestSimulatedLaxRWMutexShows: the property above is not vacuous — a lock
// that lets writers in beside readers shows it beyond doubt in most long
// histories.
func TestSimulatedLaxRWMutexShows(t *testing.T) {
	shown := 0
	for seed := range uint64(20) {
		if writerShares(rwHolds(simulateRWMutex(seed, 300, 2, true))) {
			shown++
		}
	}
	if shown < 10 {
		t.Fatalf("%d of 20 histories show a writer beside another hold beyond doubt, want at least 10", shown)
	}
}
