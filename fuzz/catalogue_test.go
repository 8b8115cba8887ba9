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
			if b.Title == "" || b.Recipe == "" || b.Mechanism == "" || b.Schedule == "" || b.Symptom == "" || b.Fixed == "" || len(b.Detectors) == 0 {
				t.Fatalf("%s lacks part of its record: %+v", b.Name, b)
			}
			own := func(f *fuzz.Finding) bool {
				return slices.Contains(b.Detectors, f.Detector) && strings.Contains(f.Story, b.Mark)
			}
			for seed := uint64(1); seed <= catalogueSeeds(); seed++ {
				f, cases := fuzz.Survey(t, b.Target, b.Options, 2000, seed, own)
				if f == nil {
					t.Fatalf("seed %d: not found by %v in 2000 cases", seed, b.Detectors)
				}
				t.Logf("seed %d: %s after %d cases: %s", seed, f.Detector, cases, f.Summary)
			}
		})
	}
}
