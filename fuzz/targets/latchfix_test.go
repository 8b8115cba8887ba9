package targets

import (
	"testing"

	"github.com/zksim/zksim/fuzz"
)

// TestLatchFixesAreClean runs the LeaderLatch ports with their upstream
// fixes on, under the options their catalogue entries use, and hunts each
// entry's own finding there (fuzz.OnlyFindings(bug.Accepts): its detector,
// its mark): the check that finds CURATOR-460, CURATOR-498, CURATOR-653
// and CURATOR-696 must find nothing of theirs in the code upstream fixed
// them with, or it would fire on any latch. CURATOR-498's fix is 5.3.0's
// latch: 4.1.0's with ProtectedMode. Check's 100 cases are fewer than
// CURATOR-498's hunt takes to find it (449 from seed 1); its fix was also
// run clean over 2,000 (go test ./fuzz/targets -run
// TestLatchFixesAreClean/CURATOR-498 -rapid.checks=2000 -rapid.seed=1). CURATOR-653's fix came after
// CURATOR-644/645's (4b96f18b), which ended RECONNECTED's reset, the
// entry's way to the bug; so its fix is tried on 5.3.0 alone, where that
// way is still open. The ports' other upstream bugs (CURATOR-653 in
// 4.0.2's latch, CURATOR-724 in 5.x's), which those fixes did not touch,
// are passed over.
func TestLatchFixesAreClean(t *testing.T) {
	fixed460 := curatorLatchVersion{resetOnReconnect: true, sessionErrorPolicy: true,
		handling: curatorHandling{expirationPercent: 30}} // 4.0.2: the poll waits 30%
	fixed653 := curatorLatch53
	fixed653.notFirstGivesUp = true // 9b3a1453, 5.4.0
	fixed696 := curatorLatch5
	fixed696.checkOwner = true // 1027c2cd, 5.7.0
	for _, c := range []struct {
		bug   KnownBug
		fixed curatorLatchVersion
	}{{curator460(), fixed460}, {curator498(), curatorLatch53}, {curator653(), fixed653}, {curator696(), fixed696}} {
		t.Run(c.bug.Name, func(t *testing.T) {
			t.Parallel()
			fuzz.Check(t, latchTarget(c.fixed), append([]fuzz.Option{fuzz.OnlyFindings(c.bug.Accepts)}, c.bug.Options...)...)
		})
	}
}
