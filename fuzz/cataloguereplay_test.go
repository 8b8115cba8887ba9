package fuzz_test

import (
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// notReplaying are the catalogue's entries whose cases a seed does not yet
// tell the same way twice, and why.
var notReplaying = map[string]string{
	// Over real clients, when a connection fails at an instant at which
	// go-zookeeper's send loop may or may not have taken a queued request
	// (a session expired while the client was cut off, the partition
	// healing as it reconnects), the request fails as sent
	// (ErrConnectionClosed) or as unsent (ErrNoServer, once every server
	// was tried): which is the Go scheduler's choice. CI saw case 97 of
	// seed 5 told both ways; 10 local runs told it one way.
	"samuel/go-zookeeper#229": "go-zookeeper's send loop and its connection's failure race",
}

// TestCatalogueSameSeedSameHistory runs each known bug's hunt twice with one
// seed, past its findings, and compares every case's transcript: what
// TestSameSeedSameHistory holds the project's recipes to, over ports of
// other libraries, whose goroutines meet the fake's timers at the same
// instants (CURATOR-696's LeaderLatch retries on a second's rhythm as the
// Conn redials). The long tier runs it: 400 cases of every entry are too
// many for the fast tier's race detector. The entries run in parallel, so
// each hunt is told twice under another's load as well.
func TestCatalogueSameSeedSameHistory(t *testing.T) {
	if !fuzz.LongTier() {
		t.Skip("runs in the long tier (make test-long)")
	}
	for _, b := range targets.Catalogue() {
		if why, ok := notReplaying[b.Name]; ok {
			t.Logf("%s: not held: %s", b.Name, why)
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
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
