package zkbench_test

import (
	"fmt"
	"testing"

	"github.com/zksim/zksim/zkfake/zkbench"
)

// A workload is a function of a *testing.B and a Target. Here it runs on
// the fake through testing.Benchmark; in a _test.go file it would be the
// body of a benchmark. A lock handoff with ten waiters parked costs six
// ZooKeeper requests per acquisition and wakes one waiter per release.
func Example() {
	r := testing.Benchmark(func(b *testing.B) {
		zkbench.LockHandoff(b, zkbench.Fake(b), 10)
	})
	fmt.Printf("%.0f requests per acquisition, %.0f waiter woken per release\n",
		r.Extra["ops/acquire"], r.Extra["wakeups/release"])
	// Output: 6 requests per acquisition, 1 waiter woken per release
}

// The same workload measured on the fake and on the ensemble in
// ZK_SERVERS, as sub-benchmarks "fake" and "real" (Real skips the
// benchmark when ZK_SERVERS is unset). cmd/zkbench pairs them up by name.
func ExampleReal() {
	benchmarkGet := func(b *testing.B) {
		b.Run("fake", func(b *testing.B) { zkbench.Get(b, zkbench.Fake(b)) })
		b.Run("real", func(b *testing.B) { zkbench.Get(b, zkbench.Real(b)) })
	}
	fmt.Println(testing.Benchmark(benchmarkGet))
}
