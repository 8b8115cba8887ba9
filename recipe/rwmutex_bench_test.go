package recipe_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zkbench"
)

// BenchmarkRWMutexUncontended is either side's Lock followed by Unlock
// with nobody else about: what a Mutex costs, 3 requests to acquire and 1
// to release, whichever the side.
func BenchmarkRWMutexUncontended(b *testing.B) {
	for _, side := range []struct {
		name string
		of   func(*recipe.RWMutex) *recipe.Mutex
	}{
		{"read", (*recipe.RWMutex).ReadLock},
		{"write", (*recipe.RWMutex).WriteLock},
	} {
		b.Run(side.name, func(b *testing.B) {
			srv := benchServer(b)
			conn := benchConn(b, srv)
			m := side.of(recipe.NewRWMutex(conn, "/bench/rw"))
			ctx := context.Background()
			if err := m.Lock(ctx); err != nil { // makes the parents
				b.Fatal(err)
			}
			if err := m.Unlock(); err != nil {
				b.Fatal(err)
			}
			ops, events := conn.Requests.Load(), srv.TotalDeliveredEvents()
			n := 0
			for b.Loop() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(conn.Requests.Load()-ops)/float64(n), "ops/acquire")
			b.ReportMetric(float64(srv.TotalDeliveredEvents()-events)/float64(n), "watch-events/release")
		})
	}
}

// BenchmarkRWMutexHandoff hands the lock from a writer to readers readers
// and on to the next writer, round after round, on the fake: it is
// zkbench's RWLockHandoff (which `make bench` also runs on the ensemble),
// so that the round's choreography is written once. A write release wakes
// every reader behind it and nobody else ("wakeups/write-release" equals
// readers), a read release at most the writer that watches it
// ("wakeups/read-release" at most 1).
func BenchmarkRWMutexHandoff(b *testing.B) {
	for _, readers := range []int{1, 100} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			zkbench.RWLockHandoff(b, zkbench.Fake(b), readers)
		})
	}
}
