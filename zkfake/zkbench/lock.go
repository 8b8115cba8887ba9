package zkbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// LockUncontended measures Lock then Unlock of a recipe.Mutex that nobody
// else wants. It reports the ZooKeeper requests per acquisition
// ("ops/acquire") and the watch events delivered per release
// ("events/release": the holder's own watch on its node fires as Unlock
// deletes it).
func LockUncontended(b *testing.B, t *Target) {
	var ops atomic.Int64
	conn := countRequests(t.Connect(b), &ops, nil)
	// The lock's directory exists beforehand, as it does for a lock in
	// steady use, so that the first Lock's making of it is not counted.
	m := recipe.NewMutex(conn, mkdir(b, conn, t.Base()+"/lock"))
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

// LockRequests sends the four requests of an uncontended Lock then Unlock
// itself, with no recipe around them: the create of a protected ephemeral
// sequential node, a GetW on it, a listing of the directory and the
// node's Delete, then it takes the event of the node's watch. It is what
// LockUncontended costs the server and the client library; the difference
// is the recipe's own.
func LockRequests(b *testing.B, t *Target) {
	conn := t.Connect(b)
	dir := mkdir(b, conn, t.Base()+"/requests")
	// One GUID for every node: the sequence number tells them apart, and
	// the recipe's making of a new one is the recipe's cost.
	prefix := dir + "/_c_0123456789abcdef0123456789abcdef-" + recipe.DefaultNodeName
	acl := zk.WorldACL(zk.PermAll)
	for b.Loop() {
		node, err := conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			b.Fatal(err)
		}
		_, _, watch, err := conn.GetW(node)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := conn.Children(dir); err != nil {
			b.Fatal(err)
		}
		if err := conn.Delete(node, -1); err != nil {
			b.Fatal(err)
		}
		<-watch
	}
}

// maxHandoffSessions bounds how many sessions LockHandoff's contenders
// share: many waiters on one session is what a process with many lock
// handles does, and a thousand sessions would measure the ensemble's
// session bookkeeping (pings) rather than the lock.
const maxHandoffSessions = 16

// settleWait bounds how long LockHandoff waits for its queue to form or to
// settle; on loopback it takes milliseconds per waiter. The bound only turns
// a hang into a clear failure.
const settleWait = 2 * time.Minute

// LockHandoff measures the handoff of a recipe.Mutex with waiters waiters
// parked behind the holder. Each iteration releases the holder and ends
// when the next waiter holds the lock: ns/op is the time from Unlock's call
// to the next Lock's return. Then, off the clock, the old holder queues
// again at the back and parks, so the queue is waiters long at every
// release. The contenders (waiters+1 handles) share up to 16 sessions,
// assigned round robin so that neighbours in the queue are on different
// sessions.
//
// It also reports, per acquisition, every ZooKeeper request the contenders
// made, on the clock or off it ("ops/acquire": the release, the next
// holder's look at the queue, and the old holder's queueing again), and per
// release the watch events delivered to all sessions ("events/release") and
// the waiters woken ("wakeups/release", counted with recipe.WithWakeHook).
// A herd-free lock wakes one waiter per release, however long the queue.
func LockHandoff(b *testing.B, t *Target, waiters int) {
	if waiters < 1 {
		b.Fatalf("waiters = %d, want at least 1", waiters)
	}
	contenders := waiters + 1
	sessions := handoffSessions(contenders)
	var ops, wakeups atomic.Int64
	q := newQueueWatch()
	conns := make([]zktest.Conn, sessions)
	for i := range conns {
		conns[i] = countRequests(t.Connect(b), &ops, q.parked)
	}
	path := mkdir(b, conns[0], t.Base()+"/handoff")
	ctx, cancel := context.WithCancel(context.Background())

	acquired := make(chan int)
	failed := make(chan error, contenders)
	release := make([]chan struct{}, contenders)
	requeue := make([]chan struct{}, contenders)
	var running sync.WaitGroup
	contend := func(i int) {
		release[i], requeue[i] = make(chan struct{}), make(chan struct{})
		m := recipe.NewMutex(conns[i%sessions], path, recipe.WithWakeHook(func(zk.Event) {
			wakeups.Add(1)
			q.woken()
		}))
		running.Go(func() { contendLoop(ctx, m, i, acquired, release[i], requeue[i], failed) })
	}
	stop := func() {
		cancel()
		running.Wait()
	}
	defer stop()

	// The queue forms one contender at a time, so that queue order is
	// contender order: 0 holds, 1 waits for 0, 2 for 1, and so on.
	holder := -1
	contend(0)
	select {
	case holder = <-acquired:
	case err := <-failed:
		b.Fatal(err)
	case <-time.After(settleWait):
		b.Fatal("the first contender did not get the lock")
	}
	for i := 1; i < contenders; i++ {
		contend(i)
		if err := q.await(i, failed); err != nil {
			b.Fatalf("queueing waiter %d of %d: %v", i, waiters, err)
		}
	}

	ops0, events0, wakeups0 := ops.Load(), t.WatchEvents(), wakeups.Load()
	for b.Loop() {
		old := holder
		release[old] <- struct{}{}
		select {
		case holder = <-acquired:
		case err := <-failed:
			b.Fatal(err)
		}
		// Off the clock, the old holder queues again and parks, so that
		// every release finds waiters waiting. It waits to be told: queueing
		// as soon as its Unlock returned, it would list the whole queue
		// while the next holder does, on the clock.
		b.StopTimer()
		if err := requeueContender(requeue[old], failed); err != nil {
			b.Fatalf("telling the old holder to queue again: %v", err)
		}
		if err := q.await(waiters, failed); err != nil {
			b.Fatalf("waiting for the old holder to queue again: %v", err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(ops.Load()-ops0)/n, "ops/acquire")
	b.ReportMetric(float64(t.WatchEvents()-events0)/n, "events/release")
	b.ReportMetric(float64(wakeups.Load()-wakeups0)/n, "wakeups/release")

	stop()
	close(failed)
	for err := range failed {
		b.Error(err)
	}
}

// handoffSessions returns how many sessions contenders handles share: at
// most maxHandoffSessions, and never a number that would put the last
// contender, which queues right before the first, on the first's session.
func handoffSessions(contenders int) int {
	s := min(contenders, maxHandoffSessions)
	for s > 2 && (contenders-1)%s == 0 {
		s--
	}
	return s
}

// contendLoop is one contender of LockHandoff or RWLockHandoff: it takes
// the lock (its side of it), reports it, waits to be told to release,
// releases, and waits to be told to queue again, until ctx ends.
func contendLoop(ctx context.Context, m *recipe.Mutex, id int, acquired chan<- int, release, requeue <-chan struct{}, failed chan<- error) {
	for {
		if err := m.Lock(ctx); err != nil {
			if ctx.Err() == nil {
				failed <- fmt.Errorf("contender %d: Lock: %w", id, err)
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
		if err := m.Unlock(); err != nil {
			failed <- fmt.Errorf("contender %d: Unlock: %w", id, err)
			return
		}
		select {
		case <-requeue:
		case <-ctx.Done():
			return
		}
	}
}

// requeueContender tells a contender that has released to queue again,
// or returns the first contender failure: a contender whose Unlock failed
// has stopped listening.
func requeueContender(requeue chan<- struct{}, failed <-chan error) error {
	timeout := time.NewTimer(settleWait)
	defer timeout.Stop()
	select {
	case requeue <- struct{}{}:
		return nil
	case err := <-failed:
		return err
	case <-timeout.C:
		return errors.New("the contender did not listen")
	}
}

// queueWatch follows how many contenders are parked: waiting on a watch of
// their predecessor (a GetW that set a watch, not yet followed by the wakeup
// that watch brings).
type queueWatch struct {
	mu      sync.Mutex
	count   int
	changed chan struct{} // closed and replaced at every change
}

func newQueueWatch() *queueWatch { return &queueWatch{changed: make(chan struct{})} }

func (q *queueWatch) add(delta int) {
	q.mu.Lock()
	q.count += delta
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

func (q *queueWatch) parked() { q.add(1) }
func (q *queueWatch) woken()  { q.add(-1) }

// await returns once exactly n contenders are parked, or with the first
// contender failure, or after settleWait.
func (q *queueWatch) await(n int, failed <-chan error) error {
	deadline := time.NewTimer(settleWait)
	defer deadline.Stop()
	for {
		q.mu.Lock()
		count, changed := q.count, q.changed
		q.mu.Unlock()
		if count == n {
			return nil
		}
		select {
		case <-changed:
		case err := <-failed:
			return err
		case <-deadline.C:
			return errors.New("timed out with " + fmt.Sprint(count) + " contenders parked, want " + fmt.Sprint(n))
		}
	}
}
