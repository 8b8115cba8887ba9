package zkbench_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zkbench"
)

func BenchmarkSemaphoreUncontended(b *testing.B) { onBoth(b, zkbench.SemaphoreUncontended) }

func BenchmarkSemaphoreHandoff(b *testing.B) {
	onBothWith(b, "waiters", []int{1, 10, 100}, zkbench.SemaphoreHandoff)
}
