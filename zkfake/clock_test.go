package zkfake

import (
	"testing"
	"testing/synctest"
	"time"
)

// The default clock reads time through time.Since; it must still give the
// time package's time, in a bubble or out of one, wherever it was made.
func TestOrderedClockGivesTheTimePackagesTime(t *testing.T) {
	outside := newOrderedClock()
	if d := outside.Now().Sub(time.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("outside a bubble the clock is %v off time.Now", d)
	}
	synctest.Test(t, func(t *testing.T) {
		inside := newOrderedClock()
		for range 3 {
			now := time.Now()
			if got := outside.Now(); !got.Equal(now) {
				t.Errorf("clock made outside the bubble reads %v, want the bubble's %v", got, now)
			}
			if got := inside.Now(); !got.Equal(now) {
				t.Errorf("clock made in the bubble reads %v, want %v", got, now)
			}
			time.Sleep(time.Hour)
		}
	})
}
