package fuzz_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// catalogueSeeds is how many seeds TestCatalogue tries for each known bug:
// two in the fast tier, twenty in the long one.
func catalogueSeeds() uint64 {
	if fuzz.LongTier() {
		return 20
	}
	return 2
}

// raceCases is the budget of TestCatalogue's one seed under the race
// detector, which slows a case about tenfold: the ports' own goroutines
// are checked for races in the cases it runs, and a bug that takes more
// cases to find is left to the tiers without it, which run every entry
// with 2,000 cases a seed.
const raceCases = 60

// TestCatalogue holds the harness to finding each known bug of the
// catalogue (targets.Catalogue) in its port, with every seed tried, within
// 2,000 cases, by one of its detectors, with its mark in the story. A
// port may have other bugs of the original besides (WriteLock stops
// waiting when the node ahead goes between its listing and its watch, for
// one): the campaign passes over their findings, as the entry's own
// campaign options cannot always keep them out.
func TestCatalogue(t *testing.T) {
	for _, b := range targets.Catalogue() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			if b.Title == "" || b.Recipe == "" || b.Mechanism == "" || b.Schedule == "" || b.Symptom == "" || b.Fixed == "" || len(b.Detectors) == 0 {
				t.Fatalf("%s lacks part of its record: %+v", b.Name, b)
			}
			if fuzz.RaceEnabled() && !fuzz.LongTier() {
				own := func(f *fuzz.Finding) bool { return b.Accepts(f) }
				if f, cases := fuzz.Survey(t, b.Target, b.Options, raceCases, 1, own); f != nil {
					t.Logf("seed 1: %s after %d cases", f.Detector, cases)
				} else {
					t.Skipf("not found in %d cases of seed 1 under the race detector; the tiers without it hold it to 2,000 cases a seed", raceCases)
				}
				return
			}
			findsOwn(t, b.Target, b.Options, b.Detectors, b.Mark, catalogueSeeds())
		})
	}
}

// findsOwn runs target's campaign with opts from each seed of 1 to seeds,
// and fails t unless every one finds, within 2,000 cases, a finding of
// one of detectors with mark in its story, passing over the findings of
// the target's other bugs that a case trips first.
func findsOwn(t *testing.T, target fuzz.Target, opts []fuzz.Option, detectors []fuzz.Detector, mark string, seeds uint64) {
	t.Helper()
	own := func(f *fuzz.Finding) bool {
		return slices.Contains(detectors, f.Detector) && strings.Contains(f.Story, mark)
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		f, cases := fuzz.Survey(t, target, opts, 2000, seed, own)
		if f == nil {
			t.Fatalf("seed %d: not found by %v, with %q in the story, in 2000 cases", seed, detectors, mark)
		}
		t.Logf("seed %d: %s after %d cases: %s", seed, f.Detector, cases, f.Summary)
	}
}
