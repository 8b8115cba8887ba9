package fuzz_test

import (
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// realClientCases is how many cases the real-client tests run per target
// and seed: a case over real clients takes about five times as long as
// one in process, and ten times that again under the race detector.
func realClientCases() int {
	if fuzz.RaceEnabled() {
		return 15
	}
	return 60
}

// TestRealClientsSameSeedSameStory runs campaigns over real go-zookeeper
// clients twice with the same seed and compares every case's transcript,
// under -race too: go-zookeeper's own goroutines (its send and receive
// loops, its pings, its reconnects) must not make a choice the harness
// cannot pin. (go-zookeeper's race on reconnect, #35, is kept from firing
// by the order in which the Pipe answers a reconnecting client.)
func TestRealClientsSameSeedSameStory(t *testing.T) {
	all := builtins()
	all["zk.Lock"] = targets.ZKLock()
	for name, target := range all {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := func(seed uint64) []string {
				return fuzz.Transcripts(t, target, []fuzz.Option{fuzz.WithRealClients()}, realClientCases(), seed)
			}
			first := run(42)
			second := run(42)
			if len(first) != len(second) {
				t.Fatalf("same seed, %d cases then %d", len(first), len(second))
			}
			for i := range first {
				if first[i] != second[i] {
					t.Fatalf("same seed, case %d differs:\n--- first\n%s\n--- second\n%s", i+1, first[i], second[i])
				}
			}
			t.Logf("%d cases over real clients, each the same twice", len(first))
		})
	}
}

// zkLockSeeds is how many seeds TestZKLockDefects tries: one in the fast
// tier, five in the long one.
func zkLockSeeds() uint64 {
	if fuzz.LongTier() {
		return 5
	}
	return 1
}

// TestZKLockDefects holds the harness to finding each of zk.Lock's
// defects, in go-zookeeper's code as it is, over real clients, within
// 2,000 cases of its campaign, by its detector, with a story that tells
// it. The orphan's campaign is samuel/go-zookeeper#229's in the catalogue,
// which TestCatalogue runs with more seeds.
func TestZKLockDefects(t *testing.T) {
	inCatalogue := map[string]bool{}
	for _, b := range targets.Catalogue() {
		inCatalogue[b.Mark] = true
	}
	for _, d := range targets.ZKLockDefects() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if inCatalogue[d.Mark] {
				t.Skip("the catalogue's entry runs this campaign (TestCatalogue)")
			}
			findsOwn(t, targets.ZKLock(), d.Options, d.Detectors, d.Mark, zkLockSeeds())
		})
	}
}

// TestMutantsFoundOverRealClients runs TestMutantsFound's campaigns with
// every client a real go-zookeeper client (WithRealClients): each mutant
// must be found there too, by its detector, within three times the budget
// it has in process (3,000 cases at most). The fast tier runs one mutant
// of each recipe kind with one seed; the long tier every mutant, with
// three seeds.
func TestMutantsFoundOverRealClients(t *testing.T) {
	t.Parallel()
	kinds := map[string]bool{}
	for _, m := range withExamples() {
		if kinds[m.Recipe] && !fuzz.LongTier() {
			continue
		}
		kinds[m.Recipe] = true
		t.Run(m.Name, func(t *testing.T) {
			budget := min(3*mutantBudgets[m.Name], 3000)
			seeds := uint64(1)
			if fuzz.LongTier() {
				seeds = 3
			}
			opts := append([]fuzz.Option{fuzz.WithRealClients()}, m.Options...)
			for seed := uint64(1); seed <= seeds; seed++ {
				f, cases := fuzz.Survey(t, m.Target, opts, budget, seed, byDetector(m.Detector))
				if f == nil {
					t.Fatalf("seed %d: %s not found by %s in %d cases over real clients", seed, m.Name, m.Detector, budget)
				}
				t.Logf("seed %d: %s after %d cases over real clients: %s", seed, f.Detector, cases, f.Summary)
			}
		})
	}
}
