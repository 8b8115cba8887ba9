package zkbench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// RWReadUncontended measures RLock then RUnlock of a recipe.RWMutex that
// nobody else wants, with the metrics of LockUncontended.
func RWReadUncontended(b *testing.B, t *Target) {
	rwUncontended(b, t, (*recipe.RWMutex).ReadLock)
}

// RWWriteUncontended measures Lock then Unlock of a recipe.RWMutex that
// nobody else wants, with the metrics of LockUncontended.
func RWWriteUncontended(b *testing.B, t *Target) {
	rwUncontended(b, t, (*recipe.RWMutex).WriteLock)
}

func rwUncontended(b *testing.B, t *Target, side func(*recipe.RWMutex) *recipe.Mutex) {
	var ops atomic.Int64
	conn := countRequests(t.Connect(b), &ops, nil)
	m := side(recipe.NewRWMutex(conn, mkdir(b, conn, t.Base()+"/rwlock")))
	ctx := context.Background()
	ops0, events0 := ops.Load(), t.WatchEvents()
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ops.Load()-ops0)/float64(b.N), "ops/acquire")
	b.ReportMetric(float64(t.WatchEvents()-events0)/float64(b.N), "events/release")
}

// RWLockHandoff measures a round of a recipe.RWMutex from a writer to
// readers readers and on to the next writer. At the start of every
// iteration writer A holds, the readers wait behind it (each watching A),
// and writer B waits behind them (watching the last reader). An iteration
// is A's release, all readers holding together, their releases (each from
// its own goroutine, at once), and B holding: ns/op is that whole round.
// Then, off the clock, the readers queue again behind B, and A behind
// them, so that the next iteration is the same round with A and B
// swapped. The readers share up to 14 sessions; each writer has one of its
// own, so that no waiter watches a node of its own session.
//
// It reports every ZooKeeper request per acquisition ("ops/acquire", on
// the clock and off it), the watch events delivered per release
// ("events/release": ZooKeeper delivers one event per session and node, so
// readers that share a session and watch the same writer share one), the
// waiters woken per release ("wakeups/release"),
// and apart: per write release, the readers it woke
// ("wakeups/write-release": all of them and no one else, if the lock is
// herd-free), and per read release, the writers it woke
// ("wakeups/read-release": at most one; B wakes when the reader it watches
// goes, and watches the nearest reader left).
func RWLockHandoff(b *testing.B, t *Target, readers int) {
	if readers < 1 {
		b.Fatalf("readers = %d, want at least 1", readers)
	}
	readerSessions := min(readers, maxHandoffSessions-2)
	var ops, wakeups atomic.Int64
	q := newQueueWatch()
	connect := func() zktest.Conn { return countRequests(t.Connect(b), &ops, q.parked) }
	writerConns := []zktest.Conn{connect(), connect()}
	readerConns := make([]zktest.Conn, readerSessions)
	for i := range readerConns {
		readerConns[i] = connect()
	}
	path := mkdir(b, writerConns[0], t.Base()+"/rwhandoff")
	ctx, cancel := context.WithCancel(context.Background())

	// Contenders 0 and 1 are the writers, 2.. the readers.
	n := readers + 2
	acquired := make(chan int)
	failed := make(chan error, n)
	release := make([]chan struct{}, n)
	requeue := make([]chan struct{}, n)
	var running sync.WaitGroup
	contend := func(i int) {
		release[i], requeue[i] = make(chan struct{}), make(chan struct{})
		conn := writerConns[min(i, 1)]
		if i >= 2 {
			conn = readerConns[(i-2)%readerSessions]
		}
		rw := recipe.NewRWMutex(conn, path, recipe.WithWakeHook(func(zk.Event) {
			wakeups.Add(1)
			q.woken()
		}))
		m := rw.WriteLock()
		if i >= 2 {
			m = rw.ReadLock()
		}
		running.Go(func() { contendLoop(ctx, m, i, acquired, release[i], requeue[i], failed) })
	}
	stop := func() {
		cancel()
		running.Wait()
	}
	defer stop()
	await := func(what string, parked int) {
		if err := q.await(parked, failed); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
	}
	acquire := func(what string) int {
		select {
		case id := <-acquired:
			return id
		case err := <-failed:
			b.Fatalf("%s: %v", what, err)
		case <-time.After(settleWait):
			b.Fatalf("%s: timed out", what)
		}
		return -1
	}

	// The queue forms in order: writer 0 holds, the readers wait, then
	// writer 1.
	contend(0)
	if id := acquire("the first writer"); id != 0 {
		b.Fatalf("contender %d acquired first, want 0", id)
	}
	for i := 2; i < n; i++ {
		contend(i)
	}
	await("queueing the readers", readers)
	contend(1)
	await("queueing the second writer", readers+1)

	holder := 0
	ops0, events0, wakeups0 := ops.Load(), t.WatchEvents(), wakeups.Load()
	var fanOut int64 // wakeups while the readers took the lock
	for b.Loop() {
		next := 1 - holder
		w0 := wakeups.Load()
		release[holder] <- struct{}{}
		for range readers {
			if id := acquire("a reader"); id < 2 {
				b.Fatalf("writer %d acquired while readers should", id)
			}
		}
		fanOut += wakeups.Load() - w0
		for i := 2; i < n; i++ {
			release[i] <- struct{}{}
		}
		if id := acquire("the next writer"); id != next {
			b.Fatalf("contender %d acquired, want writer %d", id, next)
		}
		// Off the clock, the readers queue again behind the new holder,
		// then the old holder behind them.
		b.StopTimer()
		for i := 2; i < n; i++ {
			if err := requeueContender(requeue[i], failed); err != nil {
				b.Fatalf("telling reader %d to queue again: %v", i, err)
			}
		}
		await("the readers queueing again", readers)
		if err := requeueContender(requeue[holder], failed); err != nil {
			b.Fatalf("telling the old writer to queue again: %v", err)
		}
		await("the old writer queueing again", readers+1)
		holder = next
		b.StartTimer()
	}
	iterations := float64(b.N)
	acquisitions := iterations * float64(readers+1)
	all := wakeups.Load() - wakeups0
	b.ReportMetric(float64(ops.Load()-ops0)/acquisitions, "ops/acquire")
	b.ReportMetric(float64(t.WatchEvents()-events0)/acquisitions, "events/release")
	b.ReportMetric(float64(all)/acquisitions, "wakeups/release")
	b.ReportMetric(float64(fanOut)/iterations, "wakeups/write-release")
	b.ReportMetric(float64(all-fanOut)/(iterations*float64(readers)), "wakeups/read-release")

	stop()
	close(failed)
	for err := range failed {
		b.Error(err)
	}
}
