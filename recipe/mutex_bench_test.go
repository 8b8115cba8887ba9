package recipe_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// Benchmarks run on the fake outside synctest: what they measure is the
// recipe's traffic (requests per acquisition, watch events per release),
// which must not grow with the queue, and the cost of a handoff in process.

func benchServer(b *testing.B) *zkfake.Server {
	srv := zkfake.NewServer(zkfake.WithoutEventLog())
	b.Cleanup(srv.Close)
	return srv
}

func benchConn(b *testing.B, srv *zkfake.Server) *countingConn {
	raw, _, err := srv.Connect(30 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(raw.Close)
	return countRequests(raw)
}

// BenchmarkMutexUncontended is Lock followed by Unlock with nobody else
// about: 3 requests to acquire (create, exists-and-watch on the own node,
// list) and 1 to release.
func BenchmarkMutexUncontended(b *testing.B) {
	srv := benchServer(b)
	conn := benchConn(b, srv)
	m := recipe.NewMutex(conn, "/bench/lock")
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
}

// BenchmarkMutexHandoff keeps a queue of waiters behind the holder: every
// contender locks, unlocks and queues again at the back. It reports the
// requests per acquisition, the wakeups of waiters per release, and all
// watch events the server delivered per release (the releaser's own-node
// watch included). All three stay flat as the queue grows; what grows is
// the size of the directory listing a contender reads.
func BenchmarkMutexHandoff(b *testing.B) {
	for _, waiters := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("waiters=%d", waiters), func(b *testing.B) { benchmarkHandoff(b, waiters) })
	}
}

func benchmarkHandoff(b *testing.B, waiters int) {
	srv := benchServer(b)
	const dir = "/bench/lock"
	n := waiters + 1
	conns := make([]*countingConn, n)
	handles := make([]*recipe.Mutex, n)
	var wakeups, acquired atomic.Int64
	for i := range n {
		conns[i] = benchConn(b, srv)
		handles[i] = recipe.NewMutex(conns[i], dir, recipe.WithWakeHook(func(zk.Event) { wakeups.Add(1) }))
	}
	ctx := context.Background()
	if err := handles[0].Lock(ctx); err != nil {
		b.Fatal(err)
	}

	// The counters are read when the b.N-th acquisition happens, while the
	// queue is still full: the waiters queued then paid for their queueing
	// inside the window, as those queued at its start did before it.
	ops := func() (sum int64) {
		for _, c := range conns {
			sum += c.Requests.Load()
		}
		return sum
	}
	type counters struct{ ops, wakeups, events int64 }
	snapshot := func() counters {
		return counters{ops(), wakeups.Load(), int64(srv.TotalDeliveredEvents())}
	}
	measured := make(chan counters, 1)

	var target atomic.Int64
	target.Store(1 << 62) // raised to b.N once the queue is full
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := handles[i]
			if i == 0 {
				<-start
				if err := m.Unlock(); err != nil {
					b.Error(err)
					return
				}
			}
			for {
				if err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				k := acquired.Add(1)
				if k == target.Load() {
					measured <- snapshot()
				}
				done := k > target.Load()
				if err := m.Unlock(); err != nil {
					b.Error(err)
					return
				}
				if done {
					return
				}
			}
		})
	}
	// Wait until every waiter is queued and watching its predecessor.
	for i := 1; i < n; {
		if len(conns[i].watches()) >= 2 {
			i++
			continue
		}
		time.Sleep(time.Millisecond)
	}

	acquired.Store(0)
	before := snapshot()
	target.Store(int64(b.N))
	b.ResetTimer()
	close(start)
	after := <-measured
	b.StopTimer()
	wg.Wait()

	per := func(x, y int64) float64 { return float64(y-x) / float64(b.N) }
	b.ReportMetric(per(before.ops, after.ops), "ops/acquire")
	b.ReportMetric(per(before.wakeups, after.wakeups), "wakeups/release")
	b.ReportMetric(per(before.events, after.events), "watch-events/release")
}
