package fuzz

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestCaseSeedsAreRapids holds rapid to what Run's campaign assumes of it
// (caseSeed): the k-th check of a rapid.Check from a seed draws what a
// rapid.Check of one check from caseSeed(seed, k) draws. If a new rapid
// seeded its checks otherwise, Run's case k would no longer be the test's
// case k, and a finding of zkfuzz would not replay under go test.
func TestCaseSeedsAreRapids(t *testing.T) {
	const seed, checks = 12345, 30
	draws := func(checks int, seed uint64) [][]uint64 {
		var all [][]uint64
		RapidCheck(t, checks, seed, func(t *rapid.T) {
			all = append(all, rapid.SliceOfN(rapid.Uint64(), 5, 5).Draw(t, "draws"))
		})
		return all
	}
	campaign := draws(checks, seed)
	if len(campaign) != checks {
		t.Fatalf("rapid ran %d checks, want %d", len(campaign), checks)
	}
	for k, want := range campaign {
		alone := draws(1, caseSeed(seed, k))
		if len(alone) != 1 || !slices.Equal(alone[0], want) {
			t.Fatalf("check %d of seed %d drew %v; one check of caseSeed %d drew %v", k, seed, want, caseSeed(seed, k), alone)
		}
	}
}
