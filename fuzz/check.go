package fuzz

import (
	"testing"

	"pgregory.net/rapid"
)

// This file is the test's entry points: Check runs a campaign under a
// test, Fuzz gives go test -fuzz a target.

// Check runs a campaign of cases against target — a Recipe of your own,
// a lock (Lock), or a built-in target of package fuzz/targets
// (targets.Election(targets.RecipeElection)...) — and
// fails t with the shrunk counterexample: its detector, its story, the
// path of porcupine's HTML report, and rapid's instructions to replay it
// (rapid also saves a fail file under testdata/rapid/<test name>, which
// every later `go test` replays first). The number of cases and the seed
// come from rapid's flags (-rapid.checks, default 100, and -rapid.seed),
// as does the time spent shrinking (-rapid.shrinktime) and the fail file:
// of the options, Check heeds WithClients, WithSteps, WithFencing,
// WithHTMLDir and OnEnsemble; the others are Run's.
//
// With OnEnsemble naming an ensemble, Check runs a lock's campaign,
// RealCases cases, against it instead, in real time (see the package
// documentation); it never chooses that mode by itself. A Recipe runs on
// the fake only: against an ensemble, Check skips the test.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	e := newEngine(target.subject(), configure(opts))
	if len(e.cfg.Servers) > 0 {
		if !e.sub.isLock() {
			t.Skipf("fuzz: the %s recipe runs on the fake only; a real ensemble runs the lock loop", e.sub.name)
		}
		e.realCampaign(t, RealCases, 0)
		return
	}
	checkReadingFlags(t, nil, e.property)
	if note := e.tokenlessNote(); note != "" {
		t.Logf("fuzz: what this lock cannot promise, as it hands out no fencing token (reported once; the campaign went on): %s", note)
	}
}

// tokenlessNote returns the campaign's account of what a lock without
// fencing tokens cannot promise, "" if no case showed it.
func (e *engine) tokenlessNote() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tokenless
}

// Fuzz returns a fuzz target running one case of the campaign per input,
// for `go test -fuzz` (rapid.MakeFuzz turns the fuzzer's bytes into the
// case's draws):
//
//	func FuzzMutex(f *testing.F) {
//		f.Add(seedBytes) // a few kilobytes: rapid reads 8 bytes a draw
//		f.Fuzz(fuzz.Fuzz(fuzz.Lock(fuzz.RecipeMutex)))
//	}
//
// Of the options it heeds WithClients, WithSteps and WithFencing. Coverage-guided mutation of rapid's bytes finds bugs far more slowly than
// Check's own campaign; the target is there for long unattended runs.
func Fuzz(target Target, opts ...Option) func(*testing.T, []byte) {
	e := newEngine(target.subject(), configure(opts))
	return rapid.MakeFuzz(e.property)
}
