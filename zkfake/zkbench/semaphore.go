package zkbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// semaphoreLeases is the N of the semaphores the Semaphore workloads
// measure.
const semaphoreLeases = 2

// SemaphoreUncontended measures Acquire then Release of a lease of a
// recipe.Semaphore (of 2 leases) that nobody else uses. It reports the
// ZooKeeper requests per acquisition and its release ("ops/acquire": 7 to
// acquire — the acquirers' lock's 3, the lease's create, listing and GetW,
// the lock's Delete — and 1 to release) and the watch events delivered per
// release ("events/release": the lock's node's and the lease's own watches
// fire as their nodes go).
func SemaphoreUncontended(b *testing.B, t *Target) {
	var ops atomic.Int64
	conn := countRequests(t.Connect(b), &ops, nil)
	s := recipe.NewSemaphore(conn, t.Base()+"/sem", semaphoreLeases)
	ctx := context.Background()
	cycle := func() {
		l, err := s.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
	// The first acquisition makes the directories and reads N, as a
	// semaphore in steady use has done long ago: it is not counted.
	cycle()
	ops0, events0 := ops.Load(), t.WatchEvents()
	for b.Loop() {
		cycle()
	}
	b.ReportMetric(float64(ops.Load()-ops0)/float64(b.N), "ops/acquire")
	b.ReportMetric(float64(t.WatchEvents()-events0)/float64(b.N), "events/release")
}

// SemaphoreHandoff measures the handoff of a lease of a recipe.Semaphore of
// 2 leases with waiters acquirers waiting behind its 2 holders: the first
// in line holds the acquirers' lock and watches the leases, the others
// wait for the lock, each watching its predecessor there. Each iteration
// releases the older lease and ends when the first in line holds it:
// ns/op is the time from Release's call to that Acquire's return. Then,
// off the clock, the old holder acquires again at the back of the line,
// and the next in line takes over the lock and parks on the leases, so
// that waiters acquirers wait at every release. The acquirers share up to
// 16 sessions, as LockHandoff's contenders do.
//
// It reports, per release, every ZooKeeper request the acquirers made on
// the clock or off it ("ops/acquire"), the watch events delivered to all
// sessions ("events/release"), the acquirers woken ("wakeups/release",
// counted with recipe.WithWakeHook: the lock's holder by the leases'
// change and, with 2 waiters or more, the next in the lock's line when the
// lock changes hands) and those woken by the leases alone
// ("lease-wakeups/release"). A herd-free semaphore wakes one acquirer per
// released lease, however many wait.
func SemaphoreHandoff(b *testing.B, t *Target, waiters int) {
	if waiters < 1 {
		b.Fatalf("waiters = %d, want at least 1", waiters)
	}
	acquirers := semaphoreLeases + waiters
	sessions := handoffSessions(acquirers)
	var ops, wakeups, leaseWakeups atomic.Int64
	// q follows the acquirers parked, onLeases the one parked on the
	// leases: when the old holder queues again the count of all may be
	// whole again before the next in line, woken by the lock, has parked
	// on the leases.
	q, onLeases := newQueueWatch(), newQueueWatch()
	conns := make([]zktest.Conn, sessions)
	for i := range conns {
		conns[i] = countSemaphoreRequests(t.Connect(b), &ops, q.parked, onLeases.parked)
	}
	await := func(parked int, failed <-chan error) error {
		if err := onLeases.await(1, failed); err != nil {
			return err
		}
		return q.await(parked, failed)
	}
	path := t.Base() + "/sem"
	ctx, cancel := context.WithCancel(context.Background())

	acquired := make(chan int)
	failed := make(chan error, acquirers)
	release := make([]chan struct{}, acquirers)
	again := make([]chan struct{}, acquirers)
	var running sync.WaitGroup
	acquire := func(i int) {
		release[i], again[i] = make(chan struct{}), make(chan struct{})
		s := recipe.NewSemaphore(conns[i%sessions], path, semaphoreLeases, recipe.WithWakeHook(func(ev zk.Event) {
			wakeups.Add(1)
			if ev.Type == zk.EventNodeChildrenChanged {
				leaseWakeups.Add(1)
				onLeases.woken()
			}
			q.woken()
		}))
		running.Go(func() { acquireLoop(ctx, s, i, acquired, release[i], again[i], failed) })
	}
	stop := func() {
		cancel()
		running.Wait()
	}
	defer stop()

	// The line forms one acquirer at a time, so that its order is the
	// acquirers' order: 0 and 1 hold, 2 holds the lock, 3 waits for 2's
	// lock node, and so on; a holder that acquires again joins at the back.
	var holders []int // oldest first
	for i := range acquirers {
		acquire(i)
		if i < semaphoreLeases {
			select {
			case id := <-acquired:
				holders = append(holders, id)
			case err := <-failed:
				b.Fatal(err)
			}
			continue
		}
		if err := await(i-semaphoreLeases+1, failed); err != nil {
			b.Fatalf("queueing waiter %d of %d: %v", i-semaphoreLeases+1, waiters, err)
		}
	}

	ops0, events0, wakeups0, leaseWakeups0 := ops.Load(), t.WatchEvents(), wakeups.Load(), leaseWakeups.Load()
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
		again[old] <- struct{}{}
		if err := await(waiters, failed); err != nil {
			b.Fatalf("waiting for the old holder to queue again: %v", err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(ops.Load()-ops0)/n, "ops/acquire")
	b.ReportMetric(float64(t.WatchEvents()-events0)/n, "events/release")
	b.ReportMetric(float64(wakeups.Load()-wakeups0)/n, "wakeups/release")
	b.ReportMetric(float64(leaseWakeups.Load()-leaseWakeups0)/n, "lease-wakeups/release")

	stop()
	close(failed)
	for err := range failed {
		b.Error(err)
	}
}

// acquireLoop is one acquirer of SemaphoreHandoff: it acquires a lease,
// reports it, waits to be told to release, releases, waits to be told to
// acquire again, and so on until ctx ends.
func acquireLoop(ctx context.Context, s *recipe.Semaphore, id int, acquired chan<- int, release, again <-chan struct{}, failed chan<- error) {
	for {
		l, err := s.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				failed <- fmt.Errorf("acquirer %d: Acquire: %w", id, err)
			}
			return
		}
		select {
		case acquired <- id:
		case <-ctx.Done():
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		if err := l.Release(); err != nil {
			failed <- fmt.Errorf("acquirer %d: Release: %w", id, err)
			return
		}
		select {
		case <-again:
		case <-ctx.Done():
			return
		}
	}
}

// countSemaphoreRequests is countRequests for a semaphore's acquirers: it
// calls onPark for every watch with which an acquirer parks — a GetW on a
// node the connection did not create (a predecessor in the acquirers'
// lock's line) or a children watch (the lock's holder on the leases), for
// which it calls onLeases too — and not for the GetWs on the acquirer's
// own lock and lease nodes.
func countSemaphoreRequests(conn zktest.Conn, ops *atomic.Int64, onPark, onLeases func()) *zktest.CountingConn {
	c := zktest.CountRequests(conn, ops)
	var mu sync.Mutex
	own := map[string]bool{} // nodes this connection created
	c.OnCreate = func(path string) {
		mu.Lock()
		defer mu.Unlock()
		own[path] = true
	}
	c.OnWatch = func(op, path string) {
		mu.Lock()
		mine := own[path]
		mu.Unlock()
		switch {
		case op == "getChildren":
			onPark()
			onLeases()
		case op == "getData" && !mine:
			onPark()
		}
	}
	return c
}
