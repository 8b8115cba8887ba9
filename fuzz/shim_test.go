package fuzz

import (
	"flag"
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

// TestFlagsPutBackOnceRead holds checkReadingFlags to putting rapid's
// flags back as soon as rapid has read them: a campaign's cases then run
// with the command line's values in the flags, and a Check in a test
// running beside it reads those, not the campaign's.
func TestFlagsPutBackOnceRead(t *testing.T) {
	read := func() [2]string {
		flagsMu.Lock()
		defer flagsMu.Unlock()
		return [2]string{flag.Lookup("rapid.checks").Value.String(), flag.Lookup("rapid.seed").Value.String()}
	}
	before := read()
	if before == [2]string{"7", "987654321"} {
		t.Skip("the command line set the very values this test sets")
	}
	checks := 0
	RapidCheck(t, 7, 987654321, func(*rapid.T) {
		checks++
		if during := read(); during != before {
			t.Fatalf("while the campaign runs, -rapid.checks and -rapid.seed are %q, not the command line's %q", during, before)
		}
	})
	if checks != 7 {
		t.Fatalf("rapid ran %d checks, want the 7 set", checks)
	}
	if after := read(); after != before {
		t.Fatalf("after the campaign, -rapid.checks and -rapid.seed are %q, not the command line's %q", after, before)
	}
}
