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

const electionPath = "/election"

func campaign(session int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: linearizability.Campaign, Election: electionPath, Session: session}
}

func resign(session int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: linearizability.Resign, Election: electionPath, Session: session}
}

func observe(session int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: linearizability.Observe, Election: electionPath, Session: session}
}

func leaderWrite(session, token int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: linearizability.LeaderWrite, Election: electionPath, Session: session, Token: token}
}

func elected(token int64) linearizability.ElectionOutput {
	return linearizability.ElectionOutput{OK: true, Token: token}
}

// saw is what an Observe saw: the leader's token, 0 for none.
func saw(token int64) linearizability.ElectionOutput {
	return linearizability.ElectionOutput{Token: token}
}

var (
	notElected = linearizability.ElectionOutput{}
	done       = linearizability.ElectionOutput{OK: true} // resigned, or a write accepted
	refused    = linearizability.ElectionOutput{}         // a resignation failed, or a write was rejected
	unknown    = linearizability.ElectionUnknown{}
)

// twoLeaders: session 1 leads with token 1 and resigns, then session 2
// leads with token 2 from 50 on; reads come later.
func twoLeaders() *builder {
	return new(builder).
		op(0, 0, 10, campaign(1), elected(1)).
		op(0, 20, 30, resign(1), done).
		op(1, 40, 50, campaign(2), elected(2))
}

type electionCase struct {
	name string
	h    *builder
	want linearizability.Outcome
}

func electionCases() []electionCase {
	return []electionCase{
		// Leadership is a lock's.
		{"leaders one after the other", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(0, 20, 30, resign(1), done).
			op(1, 5, 40, campaign(2), elected(2)).
			op(1, 50, 60, resign(2), done),
			linearizability.Ok},
		{"two leaders at once, both sessions alive", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(1, 20, 30, campaign(2), elected(2)).
			op(0, 40, 50, resign(1), done),
			linearizability.Illegal},
		{"a new leader after the old one's session expired", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			expire(1, 20, 20).
			op(1, 15, 30, campaign(2), elected(2)),
			linearizability.Ok},
		{"leadership lasts until the session expires", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			expire(1, 40, 40).
			op(1, 15, 30, campaign(2), elected(2)),
			linearizability.Illegal},
		{"tokens going down", new(builder).
			op(0, 0, 10, campaign(1), elected(5)).
			op(0, 20, 30, resign(1), done).
			op(1, 40, 50, campaign(2), elected(3)),
			linearizability.Illegal},
		{"resigning without leading", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(1, 20, 30, resign(2), done),
			linearizability.Illegal},
		{"a campaign that gave up constrains nothing", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(1, 5, 30, campaign(2), notElected),
			linearizability.Ok},

		// Reads may be stale, but a session's never go back.
		{"stale but monotonic observations", twoLeaders().
			op(2, 60, 70, observe(3), saw(1)).
			op(2, 80, 90, observe(3), saw(0)).
			op(2, 100, 110, observe(3), saw(1)).
			op(2, 120, 130, observe(3), saw(2)).
			op(3, 140, 150, observe(4), saw(1)), // another session may lag behind
			linearizability.Ok},
		{"an older epoch after a newer", twoLeaders().
			op(2, 60, 70, observe(3), saw(2)).
			op(2, 80, 90, observe(3), saw(1)),
			linearizability.Illegal},
		{"vacancy, then an older epoch", twoLeaders().
			op(2, 60, 70, observe(3), saw(2)).
			op(2, 80, 90, observe(3), saw(0)).
			op(2, 100, 110, observe(3), saw(1)),
			linearizability.Illegal},
		{"concurrent reads of one session, in either order", twoLeaders().
			op(2, 60, 90, observe(3), saw(2)).
			op(3, 70, 80, observe(3), saw(1)),
			linearizability.Ok},
		{"a leader seen before it was elected", new(builder).
			op(2, 0, 5, observe(3), saw(1)).
			op(0, 10, 20, campaign(1), elected(1)),
			linearizability.Illegal},
		{"a leader seen while it is being elected", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(2, 5, 15, observe(3), saw(1)),
			linearizability.Ok},
		{"a token never handed out", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(0, 20, 30, resign(1), done).
			op(1, 40, 50, campaign(2), elected(3)).
			op(2, 60, 70, observe(3), saw(2)),
			linearizability.Illegal},
		{"a read nobody saw the answer to constrains nothing", new(builder).
			op(2, 0, 0, observe(3), nil).
			op(3, 5, 10, observe(4), unknown),
			linearizability.Ok},

		// Campaigns with an unknown outcome.
		{"a crashed campaigner may have led, and been seen", new(builder).
			op(0, 0, 0, campaign(1), nil).
			op(2, 20, 30, observe(3), saw(7)),
			linearizability.Ok},
		{"a crashed campaigner's token comes before the next leader's", new(builder).
			op(0, 0, 0, campaign(1), nil).
			expire(1, 25, 25).
			op(1, 20, 30, campaign(2), elected(5)).
			op(2, 40, 50, observe(3), saw(3)),
			linearizability.Ok},
		{"a crashed campaigner's token after the next leader's", new(builder).
			op(0, 0, 0, campaign(1), nil).
			expire(1, 25, 25).
			op(1, 20, 30, campaign(2), elected(5)).
			op(2, 40, 50, observe(3), saw(7)),
			linearizability.Illegal},
		{"a crashed campaigner that cannot have led before the next leader", new(builder).
			op(0, 0, 0, campaign(1), nil).
			op(1, 20, 30, campaign(2), elected(2)).
			op(2, 40, 50, observe(3), saw(1)),
			linearizability.Illegal},
		{"an unknown campaign and resignation: led and let go", new(builder).
			op(0, 0, 10, campaign(1), unknown).
			op(4, 0, 10, resign(1), unknown).
			op(1, 20, 30, campaign(2), elected(2)).
			op(2, 40, 50, observe(3), saw(1)),
			linearizability.Ok},
		{"an unknown campaign alone leads on", new(builder).
			op(0, 0, 10, campaign(1), unknown).
			op(1, 20, 30, campaign(2), elected(2)),
			linearizability.Illegal},

		// Fenced and unfenced writes.
		{"a paused leader's stale write rejected", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			expire(1, 50, 50).
			op(1, 40, 70, campaign(2), elected(2)).
			op(1, 80, 90, leaderWrite(2, 2), done).
			op(0, 100, 110, leaderWrite(1, 1), refused),
			linearizability.Ok},
		{"a paused leader's stale write accepted", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			expire(1, 50, 50).
			op(1, 40, 70, campaign(2), elected(2)).
			op(1, 80, 90, leaderWrite(2, 2), done).
			op(0, 100, 110, leaderWrite(1, 1), done),
			linearizability.Illegal},
		{"an unfenced write by a session that does not lead", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(1, 20, 30, leaderWrite(2, 0), done),
			linearizability.Illegal},
		{"a fenced resource rejecting a fresh token", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(0, 20, 30, leaderWrite(1, 1), refused),
			linearizability.Illegal},

		// Elections are checked one at a time.
		{"elections are independent", new(builder).
			op(0, 0, 10, campaign(1), elected(1)).
			op(1, 20, 30, linearizability.ElectionInput{Op: linearizability.Campaign, Election: "/other", Session: 2}, elected(1)),
			linearizability.Ok},
		{"another election's token explains no read", new(builder).
			op(1, 0, 10, linearizability.ElectionInput{Op: linearizability.Campaign, Election: "/other", Session: 2}, elected(7)).
			op(2, 20, 30, observe(3), saw(7)),
			linearizability.Illegal},
	}
}

func TestElectionHandBuilt(t *testing.T) {
	for _, tt := range electionCases() {
		t.Run(tt.name, func(t *testing.T) {
			res, err := linearizability.CheckElection(tt.h.h, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, res, tt.want)
		})
	}
}

// TestElectionMutantsAreCaught: each rule of the model matters — with any
// one of them broken, some case of the table gets the wrong outcome. The
// mutants run through Check, which the real model passes too.
func TestElectionMutantsAreCaught(t *testing.T) {
	cases := electionCases()
	run := func(t *testing.T, model porcupine.Model, c electionCase) linearizability.Outcome {
		t.Helper()
		res, err := linearizability.Check(c.h.h, model, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return res.Outcome
	}
	t.Run("real model", func(t *testing.T) {
		for _, c := range cases {
			if got := run(t, linearizability.ElectionModel(), c); got != c.want {
				t.Errorf("%s: got %v through Check, want %v", c.name, got, c.want)
			}
		}
	})
	mutants := linearizability.ElectionMutants()
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

// TestPropertySimulatedElectionsAreLegal: concurrent histories of a correct
// election, with crashed campaigners, expiries and reads that lag, check
// Ok; and making a read that follows one of a newer leader, in the same
// session, see the first leader makes it illegal.
func TestPropertySimulatedElectionsAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		unknown := rapid.IntRange(0, 4).Draw(t, "unknown")
		h := simulateElection(seed, ops, unknown)
		if res, err := linearizability.CheckElection(h, time.Minute); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("got %v, %v; want Ok", res, err)
		}
		later := goingBack(h)
		if later < 0 {
			return
		}
		h.Operations[later].Output = saw(1)
		if res, err := linearizability.CheckElection(h, time.Minute); err != nil || res.Outcome != linearizability.Illegal {
			t.Fatalf("with operation %d seeing token 1 after a newer leader: got %v, %v; want Illegal", later, res, err)
		}
	})
}

// goingBack returns the index of a read that comes after one of the same
// session that saw a leader newer than the first (token 2 or more), or -1.
func goingBack(h linearizability.History) int {
	newest := map[int64]int64{} // session → Return of its first read of a token from 2 on
	for i, op := range h.Operations {
		in, ok := op.Input.(linearizability.ElectionInput)
		if !ok || in.Op != linearizability.Observe || op.Unknown() {
			continue
		}
		if ret, seen := newest[in.Session]; seen && op.Call > ret {
			return i
		}
		if _, seen := newest[in.Session]; !seen && op.Output.(linearizability.ElectionOutput).Token >= 2 {
			newest[in.Session] = op.Return
		}
	}
	return -1
}

func TestElectionReport(t *testing.T) {
	var illegal *builder
	for _, c := range electionCases() {
		if c.name == "an older epoch after a newer" {
			illegal = c.h
		}
	}
	illegal.h.Faults = []linearizability.Fault{{Kind: linearizability.FaultPartition, ClientID: 2, Detail: "reader cut off", Start: 55, End: 75}}
	res, err := linearizability.CheckElection(illegal.h, 10*time.Second)
	if err != nil || res.Outcome != linearizability.Illegal {
		t.Fatalf("got %v, %v; want Illegal", res, err)
	}
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(path), "election-") {
		t.Errorf("report written to %s, want an election-*.html file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"reader cut off", // the fault
		"campaign /election → elected, token 2", // operations
		"observe /election → leader with token 1",
		"led by 0x2",        // states
		"0x3 saw token 2",   // a session's floor
		"election: Illegal", // the outcome
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report does not contain %q", want)
		}
	}
}

func TestCheckElectionRejectsBadInput(t *testing.T) {
	for name, h := range map[string]*builder{
		"a mutex input":     new(builder).op(0, 0, 10, acquire(1), ok(0)),
		"a mutex output":    new(builder).op(0, 0, 10, campaign(1), ok(0)),
		"an unknown op":     new(builder).op(0, 0, 10, linearizability.ElectionInput{Op: 9}, elected(1)),
		"a mutex's unknown": new(builder).op(0, 0, 10, campaign(1), linearizability.MutexUnknown{}),
	} {
		if _, err := linearizability.CheckElection(h.h, time.Second); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}
