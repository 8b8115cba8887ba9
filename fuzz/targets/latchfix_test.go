package targets

import (
	"testing"

	"github.com/zksim/zksim/fuzz"
)

// TestLatchFixesAreClean runs the LeaderLatch ports with their upstream
// fixes on, under the options their catalogue entries use: the check that
// finds CURATOR-460 and CURATOR-696 (state-report) must find nothing in
// the code upstream fixed them with, or it would fire on any latch. The
// other detectors are left out: they find the ports' other upstream bugs
// (4.1.0's stale watchers wake a herd; 5.x waits on a latch path gone,
// CURATOR-724), which those fixes did not touch.
func TestLatchFixesAreClean(t *testing.T) {
	fixed460 := curatorLatchVersion{resetOnReconnect: true, sessionErrorPolicy: true,
		handling: curatorHandling{expirationPercent: 30}} // 4.0.2: the poll waits 30%
	fixed696 := curatorLatch5
	fixed696.checkOwner = true // 1027c2cd, 5.7.0
	for _, c := range []struct {
		bug   KnownBug
		fixed curatorLatchVersion
	}{{curator460(), fixed460}, {curator696(), fixed696}} {
		t.Run(c.bug.Name, func(t *testing.T) {
			others := fuzz.WithoutDetectors(fuzz.MutualExclusion, fuzz.Herd, fuzz.Polling, fuzz.Liveness,
				fuzz.Leak, fuzz.UnfencedWrite, fuzz.Model, fuzz.Convergence)
			fuzz.Check(t, latchTarget(c.fixed), append([]fuzz.Option{others}, c.bug.Options...)...)
		})
	}
}
