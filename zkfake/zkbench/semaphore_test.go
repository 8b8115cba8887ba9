package zkbench_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/zksim/zksim/zkfake/zkbench"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// The semaphore's own documentation gives its request counts and its
// watch events: Acquire then Release uncontended is the acquirers' lock's
// 3 requests and Delete, the lease's create, listing and GetW, and the
// lease's Delete. A handoff adds the waiter's create, listing and GetW once
// woken, and the next in line's lock listing, create, listing, Delete and
// watched listing; the old holder queueing again costs the lock's create,
// GetW and listing, and a GetW on its predecessor when there is one. A
// release wakes one acquirer by the leases, however many wait. The real
// ensemble must agree with the fake on all of it, watch events included.
func checkSemaphoreMetrics(t *testing.T, target func(testing.TB) *zkbench.Target, inBubble bool) {
	check := func(t *testing.T, r testing.BenchmarkResult, metric string, want float64) {
		t.Helper()
		if got := r.Extra[metric]; got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	run := func(t *testing.T, body func(t *testing.T)) {
		if inBubble {
			synctest.Test(t, body)
		} else {
			body(t)
		}
	}
	t.Run("uncontended", func(t *testing.T) {
		run(t, func(t *testing.T) {
			r := runWorkload(t, func(b *testing.B) { zkbench.SemaphoreUncontended(b, target(b)) }, nil)
			check(t, r, "ops/acquire", 8)
			// The lock's node's and the lease's own watches fire as they go.
			check(t, r, "events/release", 2)
		})
	})
	for _, waiters := range []int{1, 2, 10, 100} {
		t.Run(fmt.Sprintf("waiters=%d", waiters), func(t *testing.T) {
			run(t, func(t *testing.T) {
				r := runWorkload(t, func(b *testing.B) { zkbench.SemaphoreHandoff(b, target(b), waiters) }, nil)
				inLine := 0.0 // acquirers behind the lock's holder
				if waiters > 1 {
					inLine = 1
				}
				check(t, r, "ops/acquire", 12+2*inLine)
				check(t, r, "lease-wakeups/release", 1)
				check(t, r, "wakeups/release", 1+inLine)
				// The releaser's own watch; the lock's holder's on the
				// leases and on its own lock node; the next in line's.
				check(t, r, "events/release", 3+inLine)
			})
		})
	}
}

func TestSemaphoreMetricsOnTheFake(t *testing.T) {
	checkSemaphoreMetrics(t, func(tb testing.TB) *zkbench.Target { return zkbench.Fake(tb) }, true)
}

func TestSemaphoreMetricsOnTheEnsemble(t *testing.T) {
	ensemble.Servers(t)
	checkSemaphoreMetrics(t, zkbench.Real, false)
}
