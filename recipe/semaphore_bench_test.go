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
)

// The Semaphore's benchmarks, as the Mutex's: on the fake outside synctest,
// measuring its traffic (requests per acquisition, acquirers woken and watch
// events per release), which must not grow with the number waiting, and the
// cost of a handoff in process.

// BenchmarkSemaphoreUncontended is Acquire followed by Release with nobody
// else about: 7 requests to acquire (the lock's create, GetW and listing;
// the lease's create, listing and GetW; the lock's Delete) and 1 to
// release; 2 watch events, the lock's node's and the lease's own watches
// firing as their nodes go.
func BenchmarkSemaphoreUncontended(b *testing.B) {
	srv := benchServer(b)
	conn := benchConn(b, srv)
	s := recipe.NewSemaphore(conn, "/bench/sem", 2)
	ctx := context.Background()
	release := func(l *recipe.Lease, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
	release(s.Acquire(ctx)) // makes the directories and reads N
	ops, events := conn.Requests.Load(), srv.TotalDeliveredEvents()
	n := 0
	for b.Loop() {
		release(s.Acquire(ctx))
		n++
	}
	b.ReportMetric(float64(conn.Requests.Load()-ops)/float64(n), "ops/acquire")
	b.ReportMetric(float64(srv.TotalDeliveredEvents()-events)/float64(n), "watch-events/release")
}

// BenchmarkSemaphoreHandoff keeps waiters acquirers waiting behind the 2
// holders of a semaphore of 2 leases: the first in line holds the
// acquirers' lock and watches the leases, the rest wait for the lock. Each
// iteration releases the older lease and ends when the first in line holds
// it: ns/op is the time from Release's call to that Acquire's return.
// Then, off the clock, the old holder acquires again at the back of the
// line and the next in line takes over the lock and parks on the leases.
//
// It reports per release the requests every acquirer made, on the clock or
// off it ("ops/acquire"), the acquirers woken ("wakeups/release": the
// lock's holder by the leases' change, and, with 2 waiters or more, the
// next in the lock's line as it changes hands), those woken by the leases
// alone ("lease-wakeups/release": one, however many wait), and every watch
// event delivered ("watch-events/release"). All stay flat as the line
// grows.
func BenchmarkSemaphoreHandoff(b *testing.B) {
	for _, waiters := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("waiters=%d", waiters), func(b *testing.B) { benchmarkSemaphoreHandoff(b, waiters) })
	}
}

func benchmarkSemaphoreHandoff(b *testing.B, waiters int) {
	const leases = 2
	const dir = "/bench/sem"
	srv := benchServer(b)
	n := leases + waiters
	conns := make([]*countingConn, n)
	var wakeups, leaseWakeups atomic.Int64
	ops := func() (sum int64) {
		for _, c := range conns {
			sum += c.Requests.Load()
		}
		return sum
	}
	// parked waits until k acquirers wait: the lock's holder with a watch
	// on the leases and one on its own lock node, each other waiter with
	// one on its predecessor in the lock's line and one on its own, and
	// each holder with one on its lease node.
	parked := func(k int) {
		for srv.TotalWatches() != leases+2*k || srv.WatchCount(dir) != 1 {
			time.Sleep(50 * time.Microsecond)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	acquired := make(chan int)
	failed := make(chan error, n)
	release := make([]chan struct{}, n)
	requeue := make([]chan struct{}, n)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	contend := func(i int) {
		conns[i] = benchConn(b, srv)
		release[i], requeue[i] = make(chan struct{}), make(chan struct{})
		s := recipe.NewSemaphore(conns[i], dir, leases, recipe.WithWakeHook(func(ev zk.Event) {
			wakeups.Add(1)
			if ev.Type == zk.EventNodeChildrenChanged {
				leaseWakeups.Add(1)
			}
		}))
		wg.Go(func() {
			for {
				l, err := s.Acquire(ctx)
				if err != nil {
					if ctx.Err() == nil {
						failed <- err
					}
					return
				}
				select {
				case acquired <- i:
				case <-ctx.Done():
				}
				select {
				case <-release[i]:
				case <-ctx.Done():
				}
				if err := l.Release(); err != nil {
					failed <- err
					return
				}
				select {
				case <-requeue[i]:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	var holders []int // oldest first
	for i := range n {
		contend(i)
		if i < leases {
			holders = append(holders, <-acquired)
			continue
		}
		parked(i - leases + 1) // the line forms in the order the acquirers come
	}

	type counters struct{ ops, wakeups, leaseWakeups, events int64 }
	snapshot := func() counters {
		return counters{ops(), wakeups.Load(), leaseWakeups.Load(), int64(srv.TotalDeliveredEvents())}
	}
	before := snapshot()
	for b.Loop() {
		old := holders[0]
		release[old] <- struct{}{}
		select {
		case next := <-acquired:
			holders = append(holders[1:], next)
		case err := <-failed:
			b.Fatal(err)
		}
		b.StopTimer()
		requeue[old] <- struct{}{}
		parked(waiters)
		b.StartTimer()
	}
	after := snapshot()
	per := func(x, y int64) float64 { return float64(y-x) / float64(b.N) }
	b.ReportMetric(per(before.ops, after.ops), "ops/acquire")
	b.ReportMetric(per(before.wakeups, after.wakeups), "wakeups/release")
	b.ReportMetric(per(before.leaseWakeups, after.leaseWakeups), "lease-wakeups/release")
	b.ReportMetric(per(before.events, after.events), "watch-events/release")
}
