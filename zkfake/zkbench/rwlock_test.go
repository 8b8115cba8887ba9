package zkbench_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/zksim/zksim/zkfake/zkbench"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// The RWMutex's counts, as its documentation and the Mutex's give them:
// either side uncontended costs what a Mutex does; a write release wakes
// every reader behind it and nobody else, and a read release wakes at most
// the writer watching it. With one reader the round is two Mutex
// handoffs. With more, the readers release at once, and the writer behind
// them wakes once for each of them that was the nearest one left when it
// went: at least once, at most once per reader.
func checkRWLockMetrics(t *testing.T, target func(testing.TB) *zkbench.Target, inBubble bool) {
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
	for name, workload := range map[string]func(*testing.B, *zkbench.Target){
		"read":  zkbench.RWReadUncontended,
		"write": zkbench.RWWriteUncontended,
	} {
		t.Run(name, func(t *testing.T) {
			run(t, func(t *testing.T) {
				r := runWorkload(t, func(b *testing.B) { workload(b, target(b)) }, nil)
				check(t, r, "ops/acquire", 4)
				check(t, r, "events/release", 1)
			})
		})
	}
	t.Run("readers=1", func(t *testing.T) {
		run(t, func(t *testing.T) {
			r := runWorkload(t, func(b *testing.B) { zkbench.RWLockHandoff(b, target(b), 1) }, nil)
			check(t, r, "ops/acquire", 6)
			check(t, r, "events/release", 2)
			check(t, r, "wakeups/release", 1)
			check(t, r, "wakeups/write-release", 1)
			check(t, r, "wakeups/read-release", 1)
		})
	})
	for _, readers := range []int{2, 10} {
		t.Run(fmt.Sprintf("readers=%d", readers), func(t *testing.T) {
			run(t, func(t *testing.T) {
				r := runWorkload(t, func(b *testing.B) { zkbench.RWLockHandoff(b, target(b), readers) }, nil)
				check(t, r, "wakeups/write-release", float64(readers))
				if got := r.Extra["wakeups/read-release"]; got < 1/float64(readers) || got > 1 {
					t.Errorf("wakeups/read-release = %v, want between 1/%d and 1", got, readers)
				}
				if got := r.Extra["ops/acquire"]; got < 6 {
					t.Errorf("ops/acquire = %v, want at least 6", got)
				}
			})
		})
	}
}

func TestRWLockMetricsOnTheFake(t *testing.T) {
	checkRWLockMetrics(t, func(tb testing.TB) *zkbench.Target { return zkbench.Fake(tb) }, true)
}

func TestRWLockMetricsOnTheEnsemble(t *testing.T) {
	ensemble.Servers(t)
	checkRWLockMetrics(t, zkbench.Real, false)
}
