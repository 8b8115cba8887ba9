package zkbench_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/zksim/zksim/zkfake/zkbench"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// onBoth runs workload as the sub-benchmarks "fake" and "real", each on a
// Target of its own; "real" is skipped when ZK_SERVERS is unset.
func onBoth(b *testing.B, workload func(*testing.B, *zkbench.Target)) {
	b.Run("fake", func(b *testing.B) { workload(b, zkbench.Fake(b)) })
	b.Run("real", func(b *testing.B) {
		skipWithoutEnsemble(b)
		workload(b, zkbench.Real(b))
	})
}

// onBothWith is onBoth for a workload with a parameter, run for each value
// as a sub-benchmark "<name>=<value>" of "fake" and of "real".
func onBothWith(b *testing.B, name string, values []int, workload func(*testing.B, *zkbench.Target, int)) {
	each := func(b *testing.B, target func(testing.TB) *zkbench.Target) {
		for _, v := range values {
			b.Run(fmt.Sprintf("%s=%d", name, v), func(b *testing.B) { workload(b, target(b), v) })
		}
	}
	b.Run("fake", func(b *testing.B) {
		each(b, func(tb testing.TB) *zkbench.Target { return zkbench.Fake(tb) })
	})
	b.Run("real", func(b *testing.B) {
		skipWithoutEnsemble(b)
		each(b, zkbench.Real)
	})
}

// skipWithoutEnsemble skips the real side once, rather than once per
// parameter, when ZK_SERVERS is unset.
func skipWithoutEnsemble(b *testing.B) {
	if os.Getenv(ensemble.ServersEnv) == "" {
		b.Skip(ensemble.ServersEnv + " is unset: no real ensemble to measure")
	}
}

func BenchmarkCreate(b *testing.B)       { onBoth(b, zkbench.Create) }
func BenchmarkGet(b *testing.B)          { onBoth(b, zkbench.Get) }
func BenchmarkSet(b *testing.B)          { onBoth(b, zkbench.Set) }
func BenchmarkDelete(b *testing.B)       { onBoth(b, zkbench.Delete) }
func BenchmarkChildren(b *testing.B)     { onBoth(b, zkbench.Children) }
func BenchmarkMulti(b *testing.B)        { onBoth(b, zkbench.Multi) }
func BenchmarkCreateDelete(b *testing.B) { onBoth(b, zkbench.CreateDelete) }

func BenchmarkReads(b *testing.B) {
	onBothWith(b, "goroutines", []int{1, 16}, zkbench.Reads)
}

func BenchmarkReadWriteMix(b *testing.B) {
	onBothWith(b, "goroutines", []int{1, 16}, zkbench.ReadWriteMix)
}

func BenchmarkLockUncontended(b *testing.B) { onBoth(b, zkbench.LockUncontended) }
func BenchmarkLockRequests(b *testing.B)    { onBoth(b, zkbench.LockRequests) }

func BenchmarkLockHandoff(b *testing.B) {
	onBothWith(b, "waiters", []int{1, 10, 100, 1000}, zkbench.LockHandoff)
}

func BenchmarkRWReadUncontended(b *testing.B)  { onBoth(b, zkbench.RWReadUncontended) }
func BenchmarkRWWriteUncontended(b *testing.B) { onBoth(b, zkbench.RWWriteUncontended) }

func BenchmarkRWLockHandoff(b *testing.B) {
	onBothWith(b, "readers", []int{1, 100}, zkbench.RWLockHandoff)
}

func BenchmarkZnodeMemory(b *testing.B) {
	onBothWith(b, "znodes", []int{1_000_000}, zkbench.ZnodeMemory)
}
