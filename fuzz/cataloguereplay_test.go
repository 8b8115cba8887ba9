package fuzz_test

import (
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// TestCatalogueSameSeedSameHistory runs each known bug's hunt twice with
// one seed, past its findings, and compares every case's transcript: what
// TestSameSeedSameHistory holds the project's recipes to, over ports of
// other libraries, whose goroutines meet the fake's timers at the same
// instants (CURATOR-696's LeaderLatch retries on a second's rhythm as the
// Conn redials). The long tier runs it: 400 cases of every entry are too
// many for the fast tier's race detector.
func TestCatalogueSameSeedSameHistory(t *testing.T) {
	if !fuzz.LongTier() {
		t.Skip("runs in the long tier (make test-long)")
	}
	for _, b := range targets.Catalogue() {
		t.Run(b.Name, func(t *testing.T) {
			first := fuzz.AllTranscripts(t, b.Target, b.Options, 200, 5)
			second := fuzz.AllTranscripts(t, b.Target, b.Options, 200, 5)
			if len(first) != len(second) {
				t.Fatalf("same seed, %d cases then %d", len(first), len(second))
			}
			for i := range first {
				if first[i] != second[i] {
					t.Fatalf("same seed, case %d differs:\n--- first\n%s\n--- second\n%s", i+1, first[i], second[i])
				}
			}
		})
	}
}
