package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// The RWMutex scenarios are written once against zktest.Env and run on the
// fake (TestRWMutexFake) and on a real ensemble (TestRWMutexReal), as the
// Mutex's and the Election's are.

var rwMutexScenarios = []zktest.Scenario{
	{Name: "ReadersShare", Body: testRWReadersShare},
	{Name: "WriterExcludesAll", Body: testRWWriterExcludesAll},
	{Name: "Exclusion", Body: testRWExclusion},
	{Name: "FIFONoWriterStarvation", Body: testRWFIFO},
	{Name: "WakeupsPerRelease", Body: testRWWakeupsPerRelease},
	{Name: "TryLockBothSides", Body: testRWTryLock},
	{Name: "CancelLeavesNoNode", Body: testRWCancelLeavesNoNode},
	{Name: "HolderSessionExpiresHandsOver", Body: testRWHolderSessionExpires},
	{Name: "NodeDeletedWhileReading", Body: testRWNodeDeletedWhileReading},
	{Name: "TokensOrderWritersAndReaders", Body: testRWTokens},
	{Name: "ExpiredReaderFenced", Body: testRWExpiredReaderFenced},
	{Name: "OneSidePerHandle", Body: testRWOneSidePerHandle},
	{Name: "StateListenerHearsBothSides", Body: testRWStateListener},
	{Name: "BadInput", Body: testRWBadInput},
	{Name: "ExclusiveLocksAreWriters", Body: testRWExclusiveLocksAreWriters},
	{Name: "KazooAndCuratorNames", Body: testRWKazooAndCuratorNames},
	{Name: "InteropKazooReadWriteLock", Body: testInteropKazooRWLock},
}

func runRWMutexScenarios(t *testing.T, target zktest.Target) {
	zktest.RunScenarios(t, target, rwMutexScenarios)
}

// rlockAsync starts rw.RLock(ctx) and returns where its result will
// arrive.
func rlockAsync(ctx context.Context, rw *recipe.RWMutex) <-chan error {
	return lockAsync(ctx, rw.ReadLock())
}

// wlockAsync starts rw.Lock(ctx) and returns where its result will arrive.
func wlockAsync(ctx context.Context, rw *recipe.RWMutex) <-chan error {
	return lockAsync(ctx, rw.WriteLock())
}

// rwHandles opens n sessions and an RWMutex on dir for each.
func rwHandles(t *testing.T, env zktest.Env, dir string, n int, opts ...recipe.RWMutexOption) ([]zktest.Conn, []*recipe.RWMutex) {
	conns := make([]zktest.Conn, n)
	handles := make([]*recipe.RWMutex, n)
	for i := range n {
		conns[i], _ = env.Connect(t, sessionTimeout)
		handles[i] = recipe.NewRWMutex(conns[i], dir, opts...)
	}
	return conns, handles
}

// mustRLock and mustLock take a side of rw or fail the test.
func mustRLock(t testing.TB, rw *recipe.RWMutex) {
	t.Helper()
	if err := rw.RLock(testCtx(t)); err != nil {
		t.Fatalf("RLock: %v", err)
	}
}

func mustLock(t testing.TB, rw *recipe.RWMutex) {
	t.Helper()
	if err := rw.Lock(testCtx(t)); err != nil {
		t.Fatalf("Lock: %v", err)
	}
}

// Several readers hold at once, each with a node of its own and a token;
// a writer waits for the last of them.
func testRWReadersShare(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 4)
	readers, writer := rws[:3], rws[3]
	tokens := map[int64]bool{}
	for i, rw := range readers {
		mustRLock(t, rw)
		r := rw.ReadLock()
		if r.State() != recipe.MutexHeld || r.Token() == 0 || tokens[r.Token()] {
			t.Fatalf("reader %d: state %v token %d (seen %v)", i, r.State(), r.Token(), tokens)
		}
		tokens[r.Token()] = true
	}
	ids := settles(t, conns[3], dir, 3)
	for _, id := range ids {
		if !strings.Contains(id, "-"+recipe.DefaultReadNodeName) {
			t.Errorf("reader node %q does not carry %q", id, recipe.DefaultReadNodeName)
		}
	}
	if ok, err := writer.TryLock(testCtx(t)); ok || err != nil {
		t.Fatalf("writer's TryLock while readers hold = %v, %v", ok, err)
	}
	wDone := wlockAsync(testCtx(t), writer)
	settles(t, conns[3], dir, 4)
	for i, rw := range readers {
		stillBlocked(t, fmt.Sprintf("the writer with %d readers holding", 3-i), wDone)
		if err := rw.RUnlock(); err != nil {
			t.Fatalf("reader %d: RUnlock: %v", i, err)
		}
	}
	if err := mustWait(t, "the writer after the readers left", wDone); err != nil {
		t.Fatal(err)
	}
	if node := settles(t, conns[3], dir, 1)[0]; !strings.Contains(node, "-"+recipe.DefaultNodeName) {
		t.Errorf("writer node %q does not carry %q", node, recipe.DefaultNodeName)
	}
	if err := writer.Unlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, conns[0], dir, 0)
}

// A writer excludes readers and writers; they queue behind it and get the
// lock in their order.
func testRWWriterExcludesAll(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 3)
	w1, r, w2 := rws[0], rws[1], rws[2]
	mustLock(t, w1)
	if ok, err := r.TryRLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryRLock while a writer holds = %v, %v", ok, err)
	}
	if ok, err := w2.TryLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryLock while a writer holds = %v, %v", ok, err)
	}
	rDone := rlockAsync(testCtx(t), r)
	settles(t, conns[0], dir, 2)
	wDone := wlockAsync(testCtx(t), w2)
	settles(t, conns[0], dir, 3)
	stillBlocked(t, "the reader while a writer holds", rDone)
	stillBlocked(t, "the second writer while a writer holds", wDone)
	if err := w1.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the reader", rDone); err != nil {
		t.Fatal(err)
	}
	stillBlocked(t, "the second writer while the reader holds", wDone)
	if err := r.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the second writer", wDone); err != nil {
		t.Fatal(err)
	}
	if err := w2.Unlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, conns[0], dir, 0)
}

// Readers and writers on a few sessions take turns: a writer is never
// inside with anyone, and readers do get in together.
func testRWExclusion(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	const handles, rounds = 12, 5
	sessions := make([]zktest.Conn, 4)
	for i := range sessions {
		sessions[i], _ = env.Connect(t, sessionTimeout)
	}
	var readers, writers, violations, together, total atomic.Int64
	var wg sync.WaitGroup
	for i := range handles {
		rw := recipe.NewRWMutex(sessions[i%len(sessions)], dir)
		wg.Go(func() {
			for round := range rounds {
				write := (i+round)%3 == 0
				var err error
				if write {
					err = rw.Lock(testCtx(t))
				} else {
					err = rw.RLock(testCtx(t))
				}
				if err != nil {
					t.Errorf("handle %d round %d: %v", i, round, err)
					return
				}
				if write {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						violations.Add(1)
					}
				} else {
					if readers.Add(1) > 1 {
						together.Add(1)
					}
					if writers.Load() != 0 {
						violations.Add(1)
					}
				}
				total.Add(1)
				time.Sleep(2 * time.Millisecond)
				if write {
					writers.Add(-1)
					err = rw.Unlock()
				} else {
					readers.Add(-1)
					err = rw.RUnlock()
				}
				if err != nil {
					t.Errorf("handle %d round %d: release: %v", i, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := violations.Load(); n != 0 {
		t.Errorf("%d holds overlapped a writer", n)
	}
	if got := total.Load(); got != handles*rounds {
		t.Errorf("%d holds, want %d", got, handles*rounds)
	}
	if together.Load() == 0 {
		t.Errorf("no reader ever held together with another")
	}
	settles(t, sessions[0], dir, 0)
}

// FIFO across the kinds: a writer queued behind readers waits for them,
// and a reader that comes after the waiting writer waits for it too,
// though readers hold: a stream of readers cannot starve a writer.
func testRWFIFO(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 5)
	r1, r2, w, r3, r4 := rws[0], rws[1], rws[2], rws[3], rws[4]
	mustRLock(t, r1)
	mustRLock(t, r2)
	wDone := wlockAsync(testCtx(t), w)
	settles(t, conns[0], dir, 3)
	r3Done := rlockAsync(testCtx(t), r3)
	settles(t, conns[0], dir, 4)
	stillBlocked(t, "the writer while two readers hold", wDone)
	stillBlocked(t, "a reader behind the waiting writer", r3Done)
	if ok, err := r4.TryRLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryRLock with a writer waiting = %v, %v", ok, err)
	}
	if err := r1.RUnlock(); err != nil {
		t.Fatal(err)
	}
	stillBlocked(t, "the writer while one reader holds", wDone)
	if err := r2.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the writer", wDone); err != nil {
		t.Fatal(err)
	}
	stillBlocked(t, "the reader while the writer holds", r3Done)
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the reader behind the writer", r3Done); err != nil {
		t.Fatal(err)
	}
	if err := r3.RUnlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, conns[0], dir, 0)
}

// Each waiter watches only the node it waits for, so a write release
// wakes exactly the readers behind it up to the next writer, and a read
// release wakes only the writer that watches it (none if it was not the
// node just ahead of a writer). Queue: W1 (holds), R1 R2 R3, W2, R4 R5.
func testRWWakeupsPerRelease(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	connH, _ := env.Connect(t, sessionTimeout)
	w1 := recipe.NewRWMutex(connH, dir)
	mustLock(t, w1)
	names := []string{"R1", "R2", "R3", "W2", "R4", "R5"}
	writer := map[string]bool{"W2": true}
	var wakes [6]atomic.Int64
	var total atomic.Int64
	conns := make([]*countingConn, len(names))
	rws := make([]*recipe.RWMutex, len(names))
	results := make([]<-chan error, len(names))
	nodes := map[string]string{} // waiter -> its node's path
	nodes["W1"] = dir + "/" + settles(t, connH, dir, 1)[0]
	for i, name := range names {
		raw, _ := env.Connect(t, sessionTimeout)
		conns[i] = countRequests(raw)
		rws[i] = recipe.NewRWMutex(conns[i], dir, recipe.WithWakeHook(func(zk.Event) {
			wakes[i].Add(1)
			total.Add(1)
		}))
		watched := nodes["W1"]
		if i > 3 {
			watched = nodes["W2"]
		}
		if writer[name] {
			results[i] = wlockAsync(testCtx(t), rws[i])
			watched = nodes["R3"]
		} else {
			results[i] = rlockAsync(testCtx(t), rws[i])
		}
		ids := settles(t, connH, dir, i+2)
		nodes[name] = dir + "/" + ids[i+1]
		eventually(t, name+" watching "+watched, func() bool { return conns[i].watching(watched) })
	}
	want := func(what string, counts ...int64) {
		t.Helper()
		var sum int64
		for _, c := range counts {
			sum += c
		}
		eventually(t, what, func() bool { return total.Load() == sum })
		time.Sleep(300 * time.Millisecond) // and no more
		for i, c := range counts {
			if got := wakes[i].Load(); got != c {
				t.Fatalf("%s: %s woke %d times, want %d (all: %v)", what, names[i], got, c, counts)
			}
		}
	}
	want("before any release", 0, 0, 0, 0, 0, 0)

	if err := w1.Unlock(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := mustWait(t, names[i], results[i]); err != nil {
			t.Fatal(err)
		}
	}
	want("W1's release wakes R1, R2, R3", 1, 1, 1, 0, 0, 0)
	stillBlocked(t, "W2 while readers hold", results[3])

	// W2 watches R3, the node just ahead of it; when R3 goes it looks again
	// and watches R2.
	if err := rws[2].RUnlock(); err != nil {
		t.Fatal(err)
	}
	want("R3's release wakes W2", 1, 1, 1, 1, 0, 0)
	eventually(t, "W2 watching R2", func() bool { return conns[3].watching(nodes["R2"]) })
	if err := rws[0].RUnlock(); err != nil {
		t.Fatal(err)
	}
	want("R1's release wakes nobody", 1, 1, 1, 1, 0, 0)
	stillBlocked(t, "W2 while R2 holds", results[3])
	if err := rws[1].RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "W2", results[3]); err != nil {
		t.Fatal(err)
	}
	want("R2's release wakes W2", 1, 1, 1, 2, 0, 0)

	if err := rws[3].Unlock(); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 6; i++ {
		if err := mustWait(t, names[i], results[i]); err != nil {
			t.Fatal(err)
		}
	}
	want("W2's release wakes R4, R5", 1, 1, 1, 2, 1, 1)
	for i := 4; i < 6; i++ {
		if err := rws[i].RUnlock(); err != nil {
			t.Fatal(err)
		}
	}
	want("the last releases wake nobody", 1, 1, 1, 2, 1, 1)
	settles(t, connH, dir, 0)
}

// TryLock on either side takes the lock only if nothing it would wait for
// is there, and leaves no node when it fails.
func testRWTryLock(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 3)
	a, b, c := rws[0], rws[1], rws[2]
	ctx := testCtx(t)
	try := func(what string, f func(context.Context) (bool, error), want bool) {
		t.Helper()
		before := contenders(t, conns[0], dir)
		ok, err := f(ctx)
		if ok != want || err != nil {
			t.Fatalf("%s = %v, %v; want %v", what, ok, err, want)
		}
		if !want {
			if after := contenders(t, conns[0], dir); !slices.Equal(after, before) {
				t.Fatalf("%s failed and changed the queue: %v -> %v", what, before, after)
			}
		}
	}
	try("TryRLock on a free lock", a.TryRLock, true)
	try("TryRLock with a reader holding", b.TryRLock, true)
	try("TryLock with readers holding", c.TryLock, false)
	if s, tok := c.WriteLock().State(), c.WriteLock().Token(); s != recipe.MutexUnlocked || tok != 0 {
		t.Fatalf("after a failed TryLock: state %v token %d", s, tok)
	}
	select {
	case <-c.WriteLock().Lost():
	default:
		t.Fatal("Lost() of a side without a hold is not closed")
	}
	if err := a.RUnlock(); err != nil {
		t.Fatal(err)
	}
	try("TryLock with a reader holding", c.TryLock, false)
	if err := b.RUnlock(); err != nil {
		t.Fatal(err)
	}
	try("TryLock on a free lock", c.TryLock, true)
	try("TryRLock with a writer holding", a.TryRLock, false)
	try("TryLock with a writer holding", b.TryLock, false)
	if err := c.Unlock(); err != nil {
		t.Fatal(err)
	}

	// A writer that waits makes TryRLock fail although only readers hold.
	mustRLock(t, a)
	wDone := wlockAsync(ctx, c)
	settles(t, conns[0], dir, 2)
	try("TryRLock with a writer waiting", b.TryRLock, false)
	if err := a.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the writer", wDone); err != nil {
		t.Fatal(err)
	}
	if err := c.Unlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, conns[0], dir, 0)
}

// A waiter that gives up leaves no node; readers queued behind a writer
// that gave up wait for the writer ahead of it, or hold if there is none.
func testRWCancelLeavesNoNode(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 4)
	w1, r1, w2, r2 := rws[0], rws[1], rws[2], rws[3]
	before := mutexGoroutines()

	// A reader waiting for a writer.
	mustLock(t, w1)
	ctx, cancel := context.WithCancel(testCtx(t))
	rDone := rlockAsync(ctx, r1)
	settles(t, conns[0], dir, 2)
	cancel()
	if err := mustWait(t, "the cancelled reader", rDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled RLock = %v, want context.Canceled", err)
	}
	settles(t, conns[0], dir, 1)

	// A writer waiting between a holding writer and a reader: the reader
	// then waits for the holder.
	ctx, cancel = context.WithCancel(testCtx(t))
	wDone := wlockAsync(ctx, w2)
	settles(t, conns[0], dir, 2)
	r2Done := rlockAsync(testCtx(t), r2)
	queued := settles(t, conns[0], dir, 3)
	cancel()
	if err := mustWait(t, "the cancelled writer", wDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
	}
	if got := settles(t, conns[0], dir, 2); !slices.Equal(got, []string{queued[0], queued[2]}) {
		t.Fatalf("after the writer gave up: %v, want %v", got, []string{queued[0], queued[2]})
	}
	stillBlocked(t, "the reader while the first writer holds", r2Done)
	if err := w1.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the reader", r2Done); err != nil {
		t.Fatal(err)
	}

	// A writer waiting for readers, with a deadline.
	dctx, dcancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer dcancel()
	if err := w2.Lock(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past its deadline = %v, want context.DeadlineExceeded", err)
	}
	settles(t, conns[0], dir, 1)
	if err := r2.RUnlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, conns[0], dir, 0)
	for _, rw := range rws {
		if s := rw.ReadLock().State(); s != recipe.MutexUnlocked {
			t.Errorf("read side %v", s)
		}
		if s := rw.WriteLock().State(); s != recipe.MutexUnlocked {
			t.Errorf("write side %v", s)
		}
	}
	eventually(t, "no Mutex goroutines left", func() bool { return mutexGoroutines() == before })
}

// A holder whose session expires loses the lock and learns so; the lock
// goes to those waiting behind it: readers behind an expired writer, a
// writer behind an expired reader once the other readers are gone.
func testRWHolderSessionExpires(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 4)
	w, r1, r2, w2 := rws[0], rws[1], rws[2], rws[3]
	mustLock(t, w)
	lost, token := w.WriteLock().Lost(), w.WriteLock().Token()
	r1Done := rlockAsync(testCtx(t), r1)
	settles(t, conns[1], dir, 2)
	r2Done := rlockAsync(testCtx(t), r2)
	settles(t, conns[1], dir, 3)

	zktest.Require(t, expirer.Expire(conns[0]))
	for i, done := range []<-chan error{r1Done, r2Done} {
		if err := mustWait(t, fmt.Sprintf("reader %d after the writer expired", i+1), done); err != nil {
			t.Fatal(err)
		}
	}
	conns[0].Exists(dir) // the writer learns of the expiry at its next contact
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the expired writer's Lost() not closed")
	}
	if s, tok := w.WriteLock().State(), w.WriteLock().Token(); s != recipe.MutexLost || tok != 0 {
		t.Fatalf("the expired writer: state %v token %d", s, tok)
	}
	if err := w.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("the expired writer's Unlock = %v, want ErrLockLost", err)
	}
	for _, r := range []*recipe.RWMutex{r1, r2} {
		if r.ReadLock().Token() <= token {
			t.Fatalf("a reader's token %d not above the expired writer's %d", r.ReadLock().Token(), token)
		}
	}

	// A writer behind the two readers watches the second; that one's
	// session expires, and the writer waits on for the first.
	w2Done := wlockAsync(testCtx(t), w2)
	settles(t, conns[3], dir, 3)
	rLost := r2.ReadLock().Lost()
	zktest.Require(t, expirer.Expire(conns[2]))
	settles(t, conns[3], dir, 2)
	stillBlocked(t, "the writer while the first reader holds", w2Done)
	conns[2].Exists(dir)
	select {
	case <-rLost:
	case <-time.After(time.Minute):
		t.Fatal("the expired reader's Lost() not closed")
	}
	if err := r2.RUnlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("the expired reader's RUnlock = %v, want ErrLockLost", err)
	}
	if err := r1.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the writer", w2Done); err != nil {
		t.Fatal(err)
	}
	// The expired writer starts afresh, behind the new one.
	wDone := wlockAsync(testCtx(t), w)
	settles(t, conns[3], dir, 2)
	stillBlocked(t, "the old writer's new Lock", wDone)
	if err := w2.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the old writer's new Lock", wDone); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A reader whose node is deleted learns it lost the lock, and a writer
// waiting for it gets the lock.
func testRWNodeDeletedWhileReading(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 2)
	admin, _ := env.Connect(t, sessionTimeout)
	r, w := rws[0], rws[1]
	mustRLock(t, r)
	wDone := wlockAsync(testCtx(t), w)
	ids := settles(t, conns[1], dir, 2)
	if err := admin.Delete(dir+"/"+ids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.ReadLock().Lost():
	case <-time.After(time.Minute):
		t.Fatal("Lost() not closed after the reader's node was deleted")
	}
	if err := mustWait(t, "the writer", wDone); err != nil {
		t.Fatal(err)
	}
	if err := r.RUnlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("RUnlock = %v, want ErrLockLost", err)
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
	mustRLock(t, r)
	if err := r.RUnlock(); err != nil {
		t.Fatal(err)
	}
}

// rwFence guards a resource with the tokens of both sides: a write must
// carry a token at least the largest accepted, a read one at least the
// largest writer's accepted (readers' tokens say nothing of each other).
type rwFence struct {
	mu                sync.Mutex
	newest, newestW   int64 // the largest token accepted, and the largest writer's
	refused, accepted []string
}

func (f *rwFence) write(token int64, what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.newest {
		f.refused = append(f.refused, what)
		return false
	}
	f.newest, f.newestW = token, token
	f.accepted = append(f.accepted, what)
	return true
}

func (f *rwFence) read(token int64, what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.newestW {
		f.refused = append(f.refused, what)
		return false
	}
	f.newest = max(f.newest, token)
	f.accepted = append(f.accepted, what)
	return true
}

// Tokens are the nodes' czxids: a reader's is above every writer's before
// it and below every writer's after it; writers' grow. A fence that keeps
// both accepts every hold's access in the order the holds came.
func testRWTokens(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 4)
	w1, r1, r2, w2 := rws[0], rws[1], rws[2], rws[3]
	f := &rwFence{}
	mustLock(t, w1)
	t1 := w1.WriteLock().Token()
	ok, stat, err := conns[0].Exists(dir + "/" + contenders(t, conns[0], dir)[0])
	if err != nil || !ok || stat.Czxid != t1 {
		t.Fatalf("the writer's token %d is not its node's czxid (%+v, %v)", t1, stat, err)
	}
	f.write(t1, "w1")
	r1Done := rlockAsync(testCtx(t), r1)
	r2Done := rlockAsync(testCtx(t), r2)
	settles(t, conns[0], dir, 3)
	wDone := wlockAsync(testCtx(t), w2)
	settles(t, conns[0], dir, 4)
	if err := w1.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []<-chan error{r1Done, r2Done} {
		if err := mustWait(t, "a reader", d); err != nil {
			t.Fatal(err)
		}
	}
	tr1, tr2 := r1.ReadLock().Token(), r2.ReadLock().Token()
	if tr1 <= t1 || tr2 <= t1 {
		t.Fatalf("readers' tokens %d, %d not above the writer's before them, %d", tr1, tr2, t1)
	}
	// The readers read in either order.
	f.read(max(tr1, tr2), "r-late")
	f.read(min(tr1, tr2), "r-early")
	if err := r1.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := r2.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the second writer", wDone); err != nil {
		t.Fatal(err)
	}
	t2 := w2.WriteLock().Token()
	if t2 <= max(tr1, tr2) {
		t.Fatalf("the writer's token %d not above the readers' before it (%d, %d)", t2, tr1, tr2)
	}
	f.write(t2, "w2")
	// Holds that have ended are refused once a later writer wrote.
	f.read(tr1, "r1-stale")
	f.write(t1, "w1-stale")
	if err := w2.Unlock(); err != nil {
		t.Fatal(err)
	}
	mustRLock(t, r1)
	if tok := r1.ReadLock().Token(); tok <= t2 {
		t.Fatalf("a reader's token %d not above the writer's before it, %d", tok, t2)
	}
	f.read(r1.ReadLock().Token(), "r1-again")
	if err := r1.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"w1", "r-late", "r-early", "w2", "r1-again"}; !slices.Equal(f.accepted, want) {
		t.Errorf("accepted %v, want %v", f.accepted, want)
	}
	if want := []string{"r1-stale", "w1-stale"}; !slices.Equal(f.refused, want) {
		t.Errorf("refused %v, want %v", f.refused, want)
	}
}

// A reader cut off past its session timeout is replaced by the writer
// waiting for it; the writer's write is accepted and the old reader's read,
// with its stale token, refused.
func testRWExpiredReaderFenced(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/rw"
	connR, _ := env.Connect(t, sessionTimeout)
	connW, _ := env.Connect(t, sessionTimeout)
	r := recipe.NewRWMutex(connR, dir, recipe.WithStatePollInterval(20*time.Millisecond))
	w := recipe.NewRWMutex(connW, dir)
	f := &rwFence{}
	mustRLock(t, r)
	rToken := r.ReadLock().Token()
	if !f.read(rToken, "r1") {
		t.Fatal("the reader's first read was refused")
	}
	wDone := wlockAsync(testCtx(t), w)
	settles(t, connW, dir, 2)
	zktest.Require(t, p.Partition(connR))
	if err := mustWait(t, "the writer while the reader is cut off", wDone); err != nil {
		t.Fatal(err)
	}
	if s := r.ReadLock().State(); s == recipe.MutexHeld {
		t.Fatalf("the cut-off reader is %v while the writer holds", s)
	}
	if !f.write(w.WriteLock().Token(), "w1") {
		t.Fatal("the writer's write was refused")
	}
	zktest.Require(t, p.Heal(connR))
	select {
	case <-r.ReadLock().Lost():
	case <-time.After(time.Minute):
		t.Fatal("the reader's Lost() not closed once healed into an expired session")
	}
	if f.read(rToken, "r2") {
		t.Fatal("the old reader's read with its stale token was accepted")
	}
	if err := r.RUnlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("the old reader's RUnlock = %v, want ErrLockLost", err)
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Each side is reentrant; a handle holds one side at a time, and asking
// for the other fails at once instead of deadlocking on its own node.
func testRWOneSidePerHandle(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 2)
	rw, other := rws[0], rws[1]
	ctx := testCtx(t)
	for range 2 {
		mustRLock(t, rw)
	}
	if ok, err := rw.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("reentrant TryRLock = %v, %v", ok, err)
	}
	if got := contenders(t, conns[0], dir); len(got) != 1 {
		t.Fatalf("reentrant reads made nodes: %v", got)
	}
	if err := rw.Lock(ctx); !errors.Is(err, recipe.ErrOtherSideHeld) {
		t.Fatalf("Lock while reading = %v, want ErrOtherSideHeld", err)
	}
	if ok, err := rw.TryLock(ctx); ok || !errors.Is(err, recipe.ErrOtherSideHeld) {
		t.Fatalf("TryLock while reading = %v, %v, want ErrOtherSideHeld", ok, err)
	}
	if got := contenders(t, conns[0], dir); len(got) != 1 {
		t.Fatalf("a refused Lock left nodes: %v", got)
	}
	// Another handle on the same session is another holder.
	if ok, err := other.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("another handle's TryRLock = %v, %v", ok, err)
	}
	if err := other.RUnlock(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := rw.RUnlock(); err != nil {
			t.Fatalf("RUnlock %d of 3: %v", i+1, err)
		}
	}
	if err := rw.RUnlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("extra RUnlock = %v, want ErrNotLocked", err)
	}

	mustLock(t, rw)
	mustLock(t, rw)
	if err := rw.RLock(ctx); !errors.Is(err, recipe.ErrOtherSideHeld) {
		t.Fatalf("RLock while writing = %v, want ErrOtherSideHeld", err)
	}
	if ok, err := rw.TryRLock(ctx); ok || !errors.Is(err, recipe.ErrOtherSideHeld) {
		t.Fatalf("TryRLock while writing = %v, %v, want ErrOtherSideHeld", ok, err)
	}
	if err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := rw.RLock(ctx); !errors.Is(err, recipe.ErrOtherSideHeld) {
		t.Fatalf("RLock while still writing once = %v, want ErrOtherSideHeld", err)
	}
	if err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
	// Downgrade the supported way: release, then read.
	mustRLock(t, rw)
	if err := rw.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := rw.Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("extra Unlock = %v, want ErrNotLocked", err)
	}
	settles(t, conns[0], dir, 0)
}

// One WithStateListener hears both sides, in order.
func testRWStateListener(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conn, _ := env.Connect(t, sessionTimeout)
	var log stateLog
	rw := recipe.NewRWMutex(conn, dir, recipe.WithStateListener(log.add))
	mustRLock(t, rw)
	if err := rw.RUnlock(); err != nil {
		t.Fatal(err)
	}
	mustLock(t, rw)
	if err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
	log.want(t, recipe.MutexHeld, recipe.MutexUnlocked, recipe.MutexHeld, recipe.MutexUnlocked)
}

// Bad paths and names fail as the Mutex's do, and create nothing.
func testRWBadInput(t *testing.T, env zktest.Env) {
	conn, _ := env.Connect(t, sessionTimeout)
	ctx := testCtx(t)
	for _, bad := range []string{"", "relative", env.Base() + "/trailing/", env.Base() + "//double"} {
		rw := recipe.NewRWMutex(conn, bad)
		if err := rw.RLock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("RLock(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
		if err := rw.Lock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Lock(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
		if ok, err := rw.TryRLock(ctx); ok || !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("TryRLock(%q) = %v, %v, want zk.ErrInvalidPath", bad, ok, err)
		}
		if ok, err := rw.TryLock(ctx); ok || !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("TryLock(%q) = %v, %v, want zk.ErrInvalidPath", bad, ok, err)
		}
	}
	dir := env.Base() + "/x"
	for _, names := range [][2]string{{"a/b", "w"}, {"r", "a/b"}} {
		rw := recipe.NewRWMutex(conn, dir, recipe.WithRWNodeNames(names[0], names[1]))
		if err := rw.RLock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("RLock with node names %q = %v, want zk.ErrInvalidPath", names, err)
		}
		if err := rw.Lock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Lock with node names %q = %v, want zk.ErrInvalidPath", names, err)
		}
	}
	for _, opts := range [][]recipe.RWMutexOption{
		{recipe.WithRWNodeNames("", "w")},
		{recipe.WithRWNodeNames("x", "x")},
		{recipe.WithRWNodeNames("lock__", "__lock__")}, // a writer's name would read as a reader's
	} {
		rw := recipe.NewRWMutex(conn, dir, opts...)
		if err := rw.RLock(ctx); err == nil {
			t.Errorf("RLock with bad names succeeded")
		}
		if ok, err := rw.TryLock(ctx); ok || err == nil {
			t.Errorf("TryLock with bad names = %v, %v", ok, err)
		}
	}
	rw := recipe.NewRWMutex(conn, dir)
	if err := rw.RUnlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Errorf("RUnlock of a fresh handle = %v, want ErrNotLocked", err)
	}
	if err := rw.Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Errorf("Unlock of a fresh handle = %v, want ErrNotLocked", err)
	}
	if rw.Path() != dir || rw.ReadLock().Path() != dir || rw.WriteLock().Path() != dir {
		t.Errorf("paths %q, %q, %q; want %q", rw.Path(), rw.ReadLock().Path(), rw.WriteLock().Path(), dir)
	}
	if ok, _, _ := conn.Exists(dir); ok {
		t.Errorf("a Lock that failed on its node names created the lock directory")
	}
}

// Any exclusive lock on the path is a writer: a plain Mutex, and a
// zk.Lock-style node, exclude readers as writers do.
func testRWExclusiveLocksAreWriters(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 2)
	r := rws[0]
	m := recipe.NewMutex(conns[1], dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.TryRLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryRLock while a Mutex holds = %v, %v", ok, err)
	}
	rDone := rlockAsync(testCtx(t), r)
	settles(t, conns[0], dir, 2)
	stillBlocked(t, "a reader while a Mutex holds", rDone)
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the reader", rDone); err != nil {
		t.Fatal(err)
	}
	mDone := lockAsync(testCtx(t), m)
	settles(t, conns[0], dir, 2)
	stillBlocked(t, "a Mutex while a reader holds", mDone)
	if err := r.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "the Mutex", mDone); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}

	goLock, err := conns[1].Create(dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.TryRLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryRLock behind a zk.Lock node = %v, %v", ok, err)
	}
	if err := conns[1].Delete(goLock, -1); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.TryRLock(testCtx(t)); !ok || err != nil {
		t.Fatalf("TryRLock once the zk.Lock node went = %v, %v", ok, err)
	}
	if err := r.RUnlock(); err != nil {
		t.Fatal(err)
	}
}

// Nodes named as kazoo's and Curator's read/write locks name them, made by
// hand, take part as their kind: with the default names kazoo's, with
// WithRWNodeNames("__READ__", "__WRIT__") Curator's.
func testRWKazooAndCuratorNames(t *testing.T, env zktest.Env) {
	acl := zk.WorldACL(zk.PermAll)
	for _, tc := range []struct {
		name                       string
		opts                       []recipe.RWMutexOption
		foreignReader, foreignWrit string // prefixes of hand-made nodes
		ourReader, ourWriter       string // what our nodes' names carry
	}{
		{
			name:          "kazoo",
			foreignReader: "0123456789abcdef0123456789abcdef__rlock__",
			foreignWrit:   "fedcba9876543210fedcba9876543210__lock__",
			ourReader:     "-__rlock__", ourWriter: "-__lock__",
		},
		{
			name:          "curator",
			opts:          []recipe.RWMutexOption{recipe.WithRWNodeNames("__READ__", "__WRIT__")},
			foreignReader: "_c_01234567-89ab-cdef-0123-456789abcdef-__READ__",
			foreignWrit:   "_c_fedcba98-7654-3210-fedc-ba9876543210-__WRIT__",
			ourReader:     "-__READ__", ourWriter: "-__WRIT__",
		},
	} {
		// One directory per naming; no subtests, which a synctest bubble
		// does not allow.
		func() {
			dir := env.Base() + "/" + tc.name
			conns, rws := rwHandles(t, env, dir, 2, tc.opts...)
			r, w := rws[0], rws[1]
			mustRLock(t, r)
			ids := settles(t, conns[0], dir, 1)
			if !strings.HasPrefix(ids[0], "_c_") || !strings.Contains(ids[0], tc.ourReader) {
				t.Fatalf("reader node %q, want _c_<guid>%s<seq>", ids[0], tc.ourReader)
			}
			// A foreign reader shares with ours.
			theirs, err := conns[1].Create(dir+"/"+tc.foreignReader, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RUnlock(); err != nil {
				t.Fatal(err)
			}
			if ok, err := r.TryRLock(testCtx(t)); !ok || err != nil {
				t.Fatalf("TryRLock beside a %s reader = %v, %v", tc.name, ok, err)
			}
			if ok, err := w.TryLock(testCtx(t)); ok || err != nil {
				t.Fatalf("TryLock beside readers = %v, %v", ok, err)
			}
			if err := r.RUnlock(); err != nil {
				t.Fatal(err)
			}
			if ok, err := w.TryLock(testCtx(t)); ok || err != nil {
				t.Fatalf("TryLock beside a %s reader = %v, %v", tc.name, ok, err)
			}
			wDone := wlockAsync(testCtx(t), w)
			settles(t, conns[0], dir, 2)
			if err := conns[1].Delete(theirs, -1); err != nil {
				t.Fatal(err)
			}
			if err := mustWait(t, "the writer once the foreign reader went", wDone); err != nil {
				t.Fatal(err)
			}
			if node := settles(t, conns[0], dir, 1)[0]; !strings.Contains(node, tc.ourWriter) {
				t.Fatalf("writer node %q, want %s", node, tc.ourWriter)
			}
			if err := w.Unlock(); err != nil {
				t.Fatal(err)
			}

			// A foreign writer excludes ours and is waited for in order.
			theirs, err = conns[1].Create(dir+"/"+tc.foreignWrit, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := r.TryRLock(testCtx(t)); ok || err != nil {
				t.Fatalf("TryRLock behind a %s writer = %v, %v", tc.name, ok, err)
			}
			rDone := rlockAsync(testCtx(t), r)
			settles(t, conns[0], dir, 2)
			stillBlocked(t, "the reader behind a foreign writer", rDone)
			if err := conns[1].Delete(theirs, -1); err != nil {
				t.Fatal(err)
			}
			if err := mustWait(t, "the reader once the foreign writer went", rDone); err != nil {
				t.Fatal(err)
			}
			if err := r.RUnlock(); err != nil {
				t.Fatal(err)
			}
		}()
	}
}
