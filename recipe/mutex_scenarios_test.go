package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

// The Mutex scenarios are written once against zktest.Env and run on every
// target: the fake (in a synctest bubble, where every sleep is virtual) and a
// real ensemble.

var mutexScenarios = []zktest.Scenario{
	{Name: "Exclusion/2", Body: func(t *testing.T, env zktest.Env) { testExclusion(t, env, 2, 20) }},
	{Name: "Exclusion/10", Body: func(t *testing.T, env zktest.Env) { testExclusion(t, env, 10, 5) }},
	{Name: "Exclusion/100", Body: func(t *testing.T, env zktest.Env) { testExclusion(t, env, 100, 2) }},
	{Name: "FirstComeFirstServed", Body: testFirstComeFirstServed},
	{Name: "CancelWhileWaiting", Body: testCancelWhileWaiting},
	{Name: "DeadlineWhileWaiting", Body: testDeadlineWhileWaiting},
	{Name: "WaiterCrashes", Body: testWaiterCrashes},
	{Name: "WaiterSessionExpires", Body: testWaiterSessionExpires},
	{Name: "HolderSessionExpires", Body: testHolderSessionExpires},
	{Name: "NodeDeletedWhileHeld", Body: testNodeDeletedWhileHeld},
	{Name: "Reentrancy", Body: testReentrancy},
	{Name: "TryLock", Body: testTryLock},
	{Name: "OneWakeupPerRelease", Body: testOneWakeupPerRelease},
	{Name: "ForeignAndKazooNodes", Body: testForeignAndKazooNodes},
	{Name: "InteropZkLock", Body: testInteropZkLock},
	{Name: "ParentsAndBadInput", Body: testParentsAndBadInput},
	{Name: "SuspendedDuringPartition", Body: testSuspendedDuringPartition},
	{Name: "FailedUnlockIsNoHold", Body: testFailedUnlockIsNoHold},
	{Name: "FailedUnlockFinishedByLock", Body: testFailedUnlockFinishedByLock},
	{Name: "ListenerHearsOneChangeAtATime", Body: testListenerHearsOneChangeAtATime},
	{Name: "CloseAfterFailedUnlock", Body: testCloseAfterFailedUnlock},
	{Name: "ClosedConnFailsPromptly", Body: testClosedConnFailsPromptly},
	{Name: "FencingTokensGrow", Body: testFencingTokensGrow},
	{Name: "GhostOfAnotherSessionNotAdopted", Body: testGhostOfAnotherSessionNotAdopted},
	{Name: "LateCreateStrayRemoved", Body: testLateCreateStrayRemoved},
	{Name: "ListedAfterSessionChange", Body: testListedAfterSessionChange},
	{Name: "ConnClosedWhileHeld", Body: testConnClosedWhileHeld},
	{Name: "CancelledBeforeLock", Body: testCancelledBeforeLock},
	{Name: "ErrorAfterCreateCleansUp", Body: testErrorAfterCreateCleansUp},
	{Name: "FailedUnlockOutlivesQuorumLoss", Body: testFailedUnlockOutlivesQuorumLoss},
	{Name: "UnlockAfterUnseenDeletion", Body: testUnlockAfterUnseenDeletion},
	{Name: "AbandonedUnlockAfterUnseenDeletion", Body: testAbandonedUnlockAfterUnseenDeletion},
	{Name: "UnlockAfterOwnClose", Body: testUnlockAfterOwnClose},
}

func runMutexScenarios(t *testing.T, target zktest.Target) {
	zktest.RunScenarios(t, target, mutexScenarios)
}

const sessionTimeout = 4 * time.Second

// eventually polls cond until it holds, failing the test after a minute
// (virtual on the fake, where polling costs nothing).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func contenders(t testing.TB, c zktest.Conn, dir string) []string {
	t.Helper()
	ids, err := recipe.Contenders(c, dir)
	if err != nil {
		t.Fatalf("Contenders(%s): %v", dir, err)
	}
	return ids
}

// settles waits until a listing of dir through c has want contenders.
// Sessions on different members of a real ensemble see each other's writes
// only eventually, so a check made through another session waits for them.
func settles(t testing.TB, c zktest.Conn, dir string, want int) []string {
	t.Helper()
	var ids []string
	eventually(t, fmt.Sprintf("%d contenders", want), func() bool {
		ids = contenders(t, c, dir)
		return len(ids) == want
	})
	return ids
}

// testCtx bounds a scenario's Lock calls, so that a Lock that never returns
// fails the test instead of hanging it (the bound is virtual on the fake).
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// lockAsync starts m.Lock(ctx) and returns where its result will arrive.
func lockAsync(ctx context.Context, m *recipe.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// mustWait fails unless a result arrives on done.
func mustWait(t testing.TB, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// stillBlocked fails if a result arrives on done within a short while.
func stillBlocked(t testing.TB, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while it should still wait", what, err)
	case <-time.After(300 * time.Millisecond):
	}
}

// mutexGoroutines counts goroutines running code of a recipe.Mutex.
func mutexGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "zksim/recipe.(*Mutex)") {
			count++
		}
	}
	return count
}

func testExclusion(t *testing.T, env zktest.Env, handles, rounds int) {
	dir := env.Base() + "/lock"
	sessions := make([]zktest.Conn, min(handles, 10))
	for i := range sessions {
		sessions[i], _ = env.Connect(t, sessionTimeout)
	}
	var inside, overlaps, total atomic.Int64
	var wg sync.WaitGroup
	for i := range handles {
		m := recipe.NewMutex(sessions[i%len(sessions)], dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := m.Lock(testCtx(t)); err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				total.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := m.Unlock(); err != nil {
					t.Errorf("Unlock: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d acquisitions overlapped another holder", n)
	}
	if got, want := total.Load(), int64(handles*rounds); got != want {
		t.Errorf("%d acquisitions, want %d", got, want)
	}
	settles(t, sessions[0], dir, 0)
}

func testFirstComeFirstServed(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	holder := recipe.NewMutex(conn, dir)
	if err := holder.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var mu sync.Mutex
	var order []int
	results := make([]<-chan error, n)
	for i := range n {
		c, _ := env.Connect(t, sessionTimeout)
		m := recipe.NewMutex(c, dir)
		done := make(chan error, 1)
		results[i] = done
		go func() {
			err := m.Lock(testCtx(t))
			if err == nil {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				err = m.Unlock()
			}
			done <- err
		}()
		// The next contender starts only once this one is queued.
		eventually(t, fmt.Sprintf("contender %d queued", i), func() bool {
			return len(contenders(t, conn, dir)) == i+2
		})
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	for i, done := range results {
		if err := mustWait(t, fmt.Sprintf("contender %d", i), done); err != nil {
			t.Errorf("contender %d: %v", i, err)
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
		t.Errorf("acquisition order %v, want %v", order, want)
	}
}

func testCancelWhileWaiting(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	connC, _ := env.Connect(t, sessionTimeout)
	a, b, c := recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir), recipe.NewMutex(connC, dir)
	before := mutexGoroutines()
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	bDone := lockAsync(ctx, b)
	eventually(t, "B queued", func() bool { return len(contenders(t, connA, dir)) == 2 })
	cDone := lockAsync(testCtx(t), c)
	eventually(t, "C queued", func() bool { return len(contenders(t, connA, dir)) == 3 })
	queued := contenders(t, connA, dir)

	cancel()
	if err := mustWait(t, "B's Lock", bDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("B's Lock = %v, want context.Canceled", err)
	}
	if got, want := contenders(t, connB, dir), []string{queued[0], queued[2]}; !slices.Equal(got, want) {
		t.Fatalf("after B cancelled: contenders %v, want %v", got, want)
	}
	if b.State() != recipe.MutexUnlocked {
		t.Errorf("B state %v after cancel", b.State())
	}
	stillBlocked(t, "C's Lock", cDone)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "C's Lock", cDone); err != nil {
		t.Fatalf("C's Lock: %v", err)
	}
	if err := c.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := contenders(t, connC, dir); len(got) != 0 {
		t.Errorf("nodes left: %v", got)
	}
	eventually(t, "no Mutex goroutines left", func() bool { return mutexGoroutines() == before })
}

func testDeadlineWhileWaiting(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a, b := recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer cancel()
	if err := b.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past deadline = %v, want context.DeadlineExceeded", err)
	}
	if got := contenders(t, connB, dir); len(got) != 1 {
		t.Fatalf("after the deadline: contenders %v, want only the holder", got)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	// B's handle is usable again.
	if err := b.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A waiter in the middle of the queue goes away while the one behind it
// watches it: the one behind must look again, find the holder still there,
// and wait for it.
func testWaiterCrashes(t *testing.T, env zktest.Env) {
	middleGoes(t, env, func(t *testing.T, conn zktest.Conn) { conn.Close() })
}

func testWaiterSessionExpires(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	middleGoes(t, env, func(t *testing.T, conn zktest.Conn) { zktest.Require(t, expirer.Expire(conn)) })
}

func middleGoes(t *testing.T, env zktest.Env, kill func(*testing.T, zktest.Conn)) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	rawC, _ := env.Connect(t, sessionTimeout)
	connC := countRequests(rawC)
	var wakes atomic.Int64
	a := recipe.NewMutex(connA, dir)
	b := recipe.NewMutex(connB, dir)
	c := recipe.NewMutex(connC, dir, recipe.WithWakeHook(func(zk.Event) { wakes.Add(1) }))
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctxB, cancelB := context.WithCancel(testCtx(t))
	defer cancelB()
	bDone := lockAsync(ctxB, b)
	eventually(t, "B queued", func() bool { return len(contenders(t, connA, dir)) == 2 })
	cDone := lockAsync(testCtx(t), c)
	eventually(t, "C queued", func() bool { return len(contenders(t, connA, dir)) == 3 })
	queue := contenders(t, connA, dir)
	holderNode := queue[0]
	eventually(t, "C watching B", func() bool { return connC.watching(dir + "/" + queue[1]) })

	kill(t, connB)
	// B's own node goes; after an expiry B queues again under its new
	// session, so the queue's length says nothing.
	eventually(t, "B's node gone", func() bool { return !slices.Contains(contenders(t, connA, dir), queue[1]) })
	eventually(t, "C woken by B's departure", func() bool { return wakes.Load() == 1 })
	stillBlocked(t, "C's Lock while A holds", cDone)
	if got := contenders(t, connA, dir); got[0] != holderNode {
		t.Fatalf("holder changed: %v", got)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "C's Lock", cDone); err != nil {
		t.Fatalf("C's Lock: %v", err)
	}
	if got := wakes.Load(); got != 2 {
		t.Errorf("C woke %d times, want 2 (B's departure, A's release)", got)
	}
	if err := c.Unlock(); err != nil {
		t.Fatal(err)
	}
	cancelB()
	<-bDone // B's Lock ends one way or another once its ctx is done
}

func testHolderSessionExpires(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	var states []recipe.MutexState
	var statesMu sync.Mutex
	a := recipe.NewMutex(connA, dir, recipe.WithStateListener(func(s recipe.MutexState) {
		statesMu.Lock()
		states = append(states, s)
		statesMu.Unlock()
	}))
	b := recipe.NewMutex(connB, dir)
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	lost := a.Lost()
	oldToken := a.Token()
	bDone := lockAsync(testCtx(t), b)
	eventually(t, "B queued", func() bool { return len(contenders(t, connB, dir)) == 2 })

	oldSession := connA.SessionID()
	zktest.Require(t, expirer.Expire(connA))
	if err := mustWait(t, "B's Lock after A's session expired", bDone); err != nil {
		t.Fatalf("B's Lock: %v", err)
	}
	// A learns of the expiry at its next contact with the server.
	connA.Exists(dir)
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatalf("A's Lost() not closed after its session expired")
	}
	if connA.SessionID() == oldSession {
		t.Errorf("A's client kept the expired session id")
	}
	if s := a.State(); s != recipe.MutexLost {
		t.Errorf("A state %v, want lost", s)
	}
	if tok := a.Token(); tok != 0 {
		t.Errorf("A's Token() = %d after loss, want 0", tok)
	}
	if err := a.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("A.Unlock() = %v, want ErrLockLost", err)
	}
	if err := a.Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("second A.Unlock() = %v, want ErrNotLocked", err)
	}
	statesMu.Lock()
	gotStates := slices.Clone(states)
	statesMu.Unlock()
	// Suspended may come and go before the loss, depending on how the
	// client noticed; the hold starts Held and ends Lost, Unlocked.
	if len(gotStates) < 3 || gotStates[0] != recipe.MutexHeld ||
		!slices.Equal(gotStates[len(gotStates)-2:], []recipe.MutexState{recipe.MutexLost, recipe.MutexUnlocked}) {
		t.Errorf("A's states %v", gotStates)
	}

	// A starts afresh, behind B.
	aDone := lockAsync(testCtx(t), a)
	stillBlocked(t, "A's new Lock while B holds", aDone)
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "A's new Lock", aDone); err != nil {
		t.Fatal(err)
	}
	if a.Token() <= oldToken {
		t.Errorf("new token %d not above the lost hold's %d", a.Token(), oldToken)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func testNodeDeletedWhileHeld(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	admin, _ := env.Connect(t, sessionTimeout)
	m := recipe.NewMutex(conn, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ids := contenders(t, conn, dir)
	if err := admin.Delete(dir+"/"+ids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	case <-time.After(time.Minute):
		t.Fatal("Lost() not closed after the node was deleted")
	}
	if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Unlock() = %v, want ErrLockLost", err)
	}
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func testReentrancy(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a, b := recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)
	ctx := testCtx(t)
	for range 3 {
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("reentrant TryLock = %v, %v", ok, err)
	}
	if got := contenders(t, connA, dir); len(got) != 1 {
		t.Fatalf("reentrant locks made nodes: %v", got)
	}
	token := a.Token()
	for i := range 3 {
		if err := a.Unlock(); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("after %d of 4 Unlocks, another handle's TryLock = %v, %v", i+1, ok, err)
		}
		if a.Token() != token || a.State() != recipe.MutexHeld {
			t.Fatalf("hold changed while counting down: token %d state %v", a.Token(), a.State())
		}
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("after the last Unlock, TryLock = %v, %v", ok, err)
	}
	if err := a.Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("extra Unlock = %v, want ErrNotLocked", err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func testTryLock(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a, b := recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)
	ctx := testCtx(t)
	ok, err := a.TryLock(ctx)
	if !ok || err != nil {
		t.Fatalf("TryLock on a free lock = %v, %v", ok, err)
	}
	if a.Token() == 0 || a.State() != recipe.MutexHeld {
		t.Fatalf("after TryLock: token %d state %v", a.Token(), a.State())
	}
	before := contenders(t, connA, dir)
	ok, err = b.TryLock(ctx)
	if ok || err != nil {
		t.Fatalf("TryLock on a held lock = %v, %v", ok, err)
	}
	if after := contenders(t, connB, dir); !slices.Equal(after, before) {
		t.Fatalf("failed TryLock changed the queue: %v -> %v", before, after)
	}
	if b.State() != recipe.MutexUnlocked || b.Token() != 0 {
		t.Fatalf("failed TryLock: state %v token %d", b.State(), b.Token())
	}
	select {
	case <-b.Lost():
	default:
		t.Fatal("Lost() of a handle without a hold is not closed")
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after release = %v, %v", ok, err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Every release wakes exactly one waiter: with a queue of waiters, each is
// woken once in all, when its predecessor releases.
func testOneWakeupPerRelease(t *testing.T, env zktest.Env) {
	checkOneWakeupPerHandover(t, env, env.Base()+"/lock", 10, func(conn recipe.Conn, wake func(zk.Event)) handover {
		m := recipe.NewMutex(conn, env.Base()+"/lock", recipe.WithWakeHook(wake))
		return handover{take: m.Lock, give: m.Unlock}
	})
}

// handover is what a wakeup scenario takes and gives up: a Mutex's Lock
// and Unlock, an Election's Campaign and Resign.
type handover struct {
	take func(context.Context) error
	give func() error
}

// checkOneWakeupPerHandover queues n contenders behind a holder on dir,
// each on a session of its own and watching its predecessor before the
// next queues, then has each give up in turn: every handover wakes exactly
// the next contender, and nobody wakes before the first. newHandover
// gives its handle wake as the wake hook (WithWakeHook; nil for none).
func checkOneWakeupPerHandover(t *testing.T, env zktest.Env, dir string, n int, newHandover func(conn recipe.Conn, wake func(zk.Event)) handover) {
	connH, _ := env.Connect(t, sessionTimeout)
	holder := newHandover(connH, nil)
	if err := holder.take(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wakes := make([]atomic.Int64, n)
	var total atomic.Int64
	handles := make([]handover, n)
	results := make([]<-chan error, n)
	for i := range n {
		raw, _ := env.Connect(t, sessionTimeout)
		c := countRequests(raw)
		handles[i] = newHandover(c, func(zk.Event) {
			wakes[i].Add(1)
			total.Add(1)
		})
		done := make(chan error, 1)
		go func() { done <- handles[i].take(testCtx(t)) }()
		results[i] = done
		pred := dir + "/" + settles(t, connH, dir, i+2)[i]
		eventually(t, "contender watching its predecessor", func() bool { return c.watching(pred) })
	}
	if total.Load() != 0 {
		t.Fatalf("%d wakeups before the first handover", total.Load())
	}
	if err := holder.give(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := mustWait(t, fmt.Sprintf("contender %d", i), results[i]); err != nil {
			t.Fatal(err)
		}
		if got := total.Load(); got != int64(i+1) {
			t.Fatalf("after %d handovers, %d wakeups", i+1, got)
		}
		if err := handles[i].give(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range wakes {
		if got := wakes[i].Load(); got != 1 {
			t.Errorf("contender %d woke %d times, want 1", i, got)
		}
	}
}

// Children without a sequence suffix are ignored; kazoo-style and
// zk.Lock-style nodes are contenders in sequence order.
func testForeignAndKazooNodes(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	other, _ := env.Connect(t, sessionTimeout)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(dir, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config", "readme-123", "v123456789", "x"} {
		if _, err := other.Create(dir+"/"+name, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	m := recipe.NewMutex(conn, dir)
	// Foreign children do not keep the lock from being free.
	if ok, err := m.TryLock(testCtx(t)); !ok || err != nil {
		t.Fatalf("TryLock with only foreign children = %v, %v", ok, err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	// A kazoo contender ("<uuid hex>__lock__<seq>") holds the lock, a
	// zk.Lock-style one waits. By whole name ours ("_c_...") would sort
	// between them; by sequence it comes last.
	kazoo, err := other.Create(dir+"/ffffffffffffffffffffffffffffffff__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	goLock, err := other.Create(dir+"/00000000000000000000000000000000-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := m.TryLock(testCtx(t)); ok || err != nil {
		t.Fatalf("TryLock with a kazoo holder = %v, %v", ok, err)
	}
	done := lockAsync(testCtx(t), m)
	eventually(t, "queued", func() bool { return len(contenders(t, conn, dir)) == 3 })
	ids := contenders(t, conn, dir)
	if ids[0] != baseName(kazoo) || ids[1] != baseName(goLock) || !strings.HasPrefix(ids[2], "_c_") {
		t.Fatalf("queue order %v", ids)
	}
	if err := other.Delete(kazoo, -1); err != nil {
		t.Fatal(err)
	}
	stillBlocked(t, "Lock behind the zk.Lock-style node", done)
	if err := other.Delete(goLock, -1); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "Lock", done); err != nil {
		t.Fatal(err)
	}
	// The node is named so that kazoo and zk.Lock read its sequence.
	node := contenders(t, conn, dir)[0]
	if !strings.Contains(node, "-__lock__") {
		t.Errorf("node %q does not carry kazoo's __lock__ marker", node)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// zk.Lock needs a *zk.Conn, so interop is checked where the target hands
// those out (the real ensemble).
func testInteropZkLock(t *testing.T, env zktest.Env) {
	c1, _ := env.Connect(t, sessionTimeout)
	c2, _ := env.Connect(t, sessionTimeout)
	zc, ok := c2.(*zk.Conn)
	if !ok {
		t.Skipf("target's Conn is %T, zk.Lock needs *zk.Conn", c2)
	}
	for _, nodeName := range []string{recipe.DefaultNodeName, "lock-"} {
		func() {
			dir := env.Base() + "/interop-" + strings.Trim(nodeName, "_-")
			m := recipe.NewMutex(c1, dir, recipe.WithNodeName(nodeName))
			theirs := zk.NewLock(zc, dir, zk.WorldACL(zk.PermAll))

			// zk.Lock holds: the Mutex waits.
			if err := theirs.Lock(); err != nil {
				t.Fatal(err)
			}
			if ok, err := m.TryLock(testCtx(t)); ok || err != nil {
				t.Fatalf("TryLock while zk.Lock holds = %v, %v", ok, err)
			}
			done := lockAsync(testCtx(t), m)
			eventually(t, "Mutex queued", func() bool { return len(contenders(t, c1, dir)) == 2 })
			stillBlocked(t, "Mutex.Lock while zk.Lock holds", done)
			if err := theirs.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := mustWait(t, "Mutex.Lock", done); err != nil {
				t.Fatal(err)
			}

			// The Mutex holds: zk.Lock waits.
			theirsDone := make(chan error, 1)
			go func() { theirsDone <- theirs.Lock() }()
			eventually(t, "zk.Lock queued", func() bool { return len(contenders(t, c1, dir)) == 2 })
			stillBlocked(t, "zk.Lock while the Mutex holds", theirsDone)
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := mustWait(t, "zk.Lock", theirsDone); err != nil {
				t.Fatal(err)
			}
			if err := theirs.Unlock(); err != nil {
				t.Fatal(err)
			}
		}()
	}
}

func testParentsAndBadInput(t *testing.T, env zktest.Env) {
	conn, _ := env.Connect(t, sessionTimeout)
	ctx := testCtx(t)
	deep := env.Base() + "/a/b/c"
	m := recipe.NewMutex(conn, deep)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock with missing parents: %v", err)
	}
	for _, p := range []string{env.Base() + "/a", env.Base() + "/a/b", deep} {
		ok, stat, err := conn.Exists(p)
		if err != nil || !ok || stat.EphemeralOwner != 0 {
			t.Errorf("parent %s: exists %v, stat %+v, err %v (want persistent)", p, ok, stat, err)
		}
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"", "relative", env.Base() + "/trailing/", env.Base() + "//double", env.Base() + "/./x"} {
		m := recipe.NewMutex(conn, bad)
		if err := m.Lock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Lock(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
		if ok, err := m.TryLock(ctx); ok || !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("TryLock(%q) = %v, %v, want zk.ErrInvalidPath", bad, ok, err)
		}
		if _, err := recipe.Contenders(conn, bad); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Contenders(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
	}
	slash := recipe.NewMutex(conn, env.Base()+"/x", recipe.WithNodeName("a/b"))
	if err := slash.Lock(ctx); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("Lock with node name a/b = %v, want zk.ErrInvalidPath", err)
	}
	if err := recipe.NewMutex(conn, deep).Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Errorf("Unlock of a fresh handle = %v, want ErrNotLocked", err)
	}
	if ids, err := recipe.Contenders(conn, env.Base()+"/nothing/here"); err != nil || len(ids) != 0 {
		t.Errorf("Contenders of a missing path = %v, %v, want none", ids, err)
	}
	if ok, _, _ := conn.Exists(env.Base() + "/x"); ok {
		t.Errorf("a Lock that failed on its node name created the lock directory")
	}
}

// A dropped connection suspends the hold, which is held again once the
// session resumes.
func testSuspendedDuringPartition(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/lock"
	// As long a session as the target grants (a real ensemble with a 200ms
	// tick caps it at 4s), so that it outlives the partition.
	conn, _ := env.Connect(t, 10*time.Second)
	admin, _ := env.Connect(t, sessionTimeout)
	states := &stateLog{}
	m := recipe.NewMutex(conn, dir, recipe.WithStatePollInterval(20*time.Millisecond), recipe.WithStateListener(states.add))
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	token := m.Token()
	zktest.Require(t, p.Partition(conn))
	eventually(t, "hold suspended", func() bool { return m.State() == recipe.MutexSuspended })
	if m.Token() != token {
		t.Errorf("a suspended hold's token is %d, want %d", m.Token(), token)
	}
	zktest.Require(t, p.Heal(conn))
	eventually(t, "hold resumed", func() bool { return m.State() == recipe.MutexHeld })
	select {
	case <-m.Lost():
		t.Fatal("Lost() closed by a partition the session survived")
	default:
	}
	if err := m.Unlock(); err != nil {
		t.Fatalf("Unlock after heal: %v", err)
	}
	settles(t, admin, dir, 0)
	states.want(t, recipe.MutexHeld, recipe.MutexSuspended, recipe.MutexHeld, recipe.MutexUnlocked)
}

// partitioner returns env's Partitioner, or skips the test on a target that
// cannot partition.
func partitioner(t *testing.T, env zktest.Env) zktest.Partitioner {
	t.Helper()
	p, ok := env.(zktest.Partitioner)
	if !ok {
		t.Skip("target cannot partition")
	}
	return p
}

// stateLog records what a Mutex's state listener hears.
type stateLog struct {
	mu     sync.Mutex
	states []recipe.MutexState
}

func (l *stateLog) add(s recipe.MutexState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states = append(l.states, s)
}

// withoutSuspended returns the log without its MutexSuspended entries.
func (l *stateLog) withoutSuspended() *stateLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &stateLog{}
	for _, s := range l.states {
		if s != recipe.MutexSuspended {
			out.states = append(out.states, s)
		}
	}
	return out
}

func (l *stateLog) want(t testing.TB, want ...recipe.MutexState) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Equal(l.states, want) {
		t.Errorf("states %v, want %v", l.states, want)
	}
}

// failUnlockInPartition cuts conn, on which m holds its lock, off and calls
// UnlockContext with a short deadline, which fails: its Delete is on its
// way, and applies if the partition heals before the client notices it.
func failUnlockInPartition(t *testing.T, p zktest.Partitioner, conn zktest.Conn, m *recipe.Mutex) {
	t.Helper()
	zktest.Require(t, p.Partition(conn))
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	err := m.UnlockContext(ctx)
	cancel()
	if err == nil {
		t.Fatal("UnlockContext during a partition succeeded")
	}
}

// An Unlock that fails during a partition the session survives leaves a
// release pending, and a pending release is no hold: no token, Lock does
// not re-enter it. The Delete still queued in the client applies once the
// partition heals, the waiter takes the lock, and the first handle's Lock
// waits its turn behind it. (It used to count up on the old hold and
// return at once: two holders.)
func testFailedUnlockIsNoHold(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, 10*time.Second)
	connB, _ := env.Connect(t, sessionTimeout)
	states := &stateLog{}
	a := recipe.NewMutex(connA, dir, recipe.WithStatePollInterval(20*time.Millisecond), recipe.WithStateListener(states.add))
	b := recipe.NewMutex(connB, dir)
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	bDone := lockAsync(testCtx(t), b)
	settles(t, connB, dir, 2)

	failUnlockInPartition(t, p, connA, a)
	if a.State() != recipe.MutexReleasing || a.Token() != 0 {
		t.Fatalf("after a failed Unlock: state %v token %d, want releasing, no token", a.State(), a.Token())
	}
	select {
	case <-a.Lost():
		t.Fatal("Lost() closed while the release is pending")
	default:
	}
	aDone := lockAsync(testCtx(t), a)
	stillBlocked(t, "Lock on a handle whose release is pending", aDone)

	zktest.Require(t, p.Heal(connA))
	bThenA(t, a, b, aDone, bDone)
	settles(t, connB, dir, 0)
	// Whether the hold is seen Suspended before the Unlock gives up depends
	// on how soon the client notices the partition, which differs between
	// targets.
	states.withoutSuspended().want(t, recipe.MutexHeld, recipe.MutexReleasing, recipe.MutexUnlocked, recipe.MutexHeld, recipe.MutexUnlocked)
}

// A listener that takes its time over a failed Unlock is not called again
// meanwhile, though the pending release ends by itself on the Mutex's own
// goroutine: it hears every change once, in order, and one at a time.
func testListenerHearsOneChangeAtATime(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, 10*time.Second)
	admin, _ := env.Connect(t, sessionTimeout)
	states := &stateLog{}
	var inside atomic.Int32
	var overlapped atomic.Bool
	hearing, goOn := make(chan struct{}), make(chan struct{})
	m := recipe.NewMutex(conn, dir, recipe.WithStatePollInterval(20*time.Millisecond), recipe.WithStateListener(func(s recipe.MutexState) {
		if inside.Add(1) > 1 {
			overlapped.Store(true)
		}
		defer inside.Add(-1)
		states.add(s)
		if s == recipe.MutexReleasing {
			close(hearing)
			<-goOn
		}
	}))
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	zktest.Require(t, p.Partition(conn))
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.UnlockContext(ctx) }()
	eventually(t, "the listener hears of the failed Unlock", func() bool {
		select {
		case <-hearing:
			return true
		default:
			return false
		}
	})
	// The Delete that was on its way applies: the release ends by itself
	// while the listener is still busy with it.
	zktest.Require(t, p.Heal(conn))
	settles(t, admin, dir, 0)
	eventually(t, "the pending release ends", func() bool { return m.State() == recipe.MutexUnlocked })
	close(goOn)
	if err := mustWait(t, "UnlockContext", unlocked); err == nil {
		t.Fatal("UnlockContext during a partition succeeded")
	}
	if err := m.Unlock(); err != nil {
		t.Fatalf("Unlock after the release ended by itself: %v", err)
	}
	if overlapped.Load() {
		t.Error("the listener was called while it was still hearing of another change")
	}
	states.withoutSuspended().want(t, recipe.MutexHeld, recipe.MutexReleasing, recipe.MutexUnlocked)
}

// bThenA checks the turn taken after A's release went pending and A called
// Lock again: B, which was waiting behind A's node, gets the lock; A's
// Lock waits its turn, holding nothing meanwhile; once B unlocks A gets
// the lock, and unlocks.
func bThenA(t *testing.T, a, b *recipe.Mutex, aDone, bDone <-chan error) {
	t.Helper()
	if err := mustWait(t, "B's Lock", bDone); err != nil {
		t.Fatalf("B's Lock: %v", err)
	}
	stillBlocked(t, "A's Lock while B holds", aDone)
	if s := a.State(); s == recipe.MutexHeld || s == recipe.MutexSuspended || a.Token() != 0 {
		t.Fatalf("A reports %v with token %d while B holds", s, a.Token())
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "A's Lock", aDone); err != nil {
		t.Fatalf("A's Lock: %v", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// holderAndWaiter makes two sessions' Mutexes on dir: a holds the lock,
// and b's Lock, whose result comes on bDone, waits in the queue behind it.
func holderAndWaiter(t *testing.T, env zktest.Env, dir string) (a, b *recipe.Mutex, connB zktest.Conn, bDone <-chan error) {
	t.Helper()
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ = env.Connect(t, sessionTimeout)
	a, b = recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	bDone = lockAsync(testCtx(t), b)
	settles(t, connB, dir, 2)
	return a, b, connB, bDone
}

// An Unlock that fails before its Delete is sent leaves the node in the
// queue. The next Lock on the handle finishes the release — the waiter
// behind gets the lock — and queues afresh; it used to count up on the old
// hold instead, so that every later Lock/Unlock pair only moved the count
// and the node stayed for as long as the session lived.
func testFailedUnlockFinishedByLock(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	a, b, connB, bDone := holderAndWaiter(t, env, dir)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.UnlockContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("UnlockContext with a cancelled ctx: %v, want context.Canceled", err)
	}
	if a.State() != recipe.MutexReleasing || a.Token() != 0 {
		t.Fatalf("after a failed Unlock: state %v token %d, want releasing, no token", a.State(), a.Token())
	}
	aDone := lockAsync(testCtx(t), a)
	bThenA(t, a, b, aDone, bDone)
	settles(t, connB, dir, 0)
	if err := a.Unlock(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Errorf("a second Unlock: %v, want ErrNotLocked", err)
	}
}

// Closing the Conn of a handle whose release is pending ends every
// goroutine of the Mutex. (The deletion of the node used to be taken for
// the failed Unlock's own Delete, the watch was dropped, and the hold's
// goroutine polled a closed Conn for ever.)
func testCloseAfterFailedUnlock(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, 10*time.Second)
	admin, _ := env.Connect(t, sessionTimeout)
	before := mutexGoroutines()
	// A retry timeout longer than the test's patience: a hold that sits
	// disconnected for that long is taken for a closed Conn's, which would
	// end the goroutine without the fix this test is about.
	m := recipe.NewMutex(conn, dir, recipe.WithStatePollInterval(20*time.Millisecond), recipe.WithRetryTimeout(10*time.Minute))
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	failUnlockInPartition(t, p, conn, m)
	zktest.Require(t, p.Heal(conn))
	// The Delete sent during the partition applies, and its deletion
	// ends the pending release.
	settles(t, admin, dir, 0)
	eventually(t, "the pending release ended", func() bool { return m.State() == recipe.MutexUnlocked })
	conn.Close()
	settles(t, admin, dir, 0)
	eventually(t, "no Mutex goroutines left after Close", func() bool { return mutexGoroutines() == before })
	if s := m.State(); s != recipe.MutexUnlocked {
		t.Errorf("state after Close: %v, want unlocked", s)
	}
	select {
	case <-m.Lost():
	default:
		t.Error("Lost() open after the Conn was closed")
	}
}

// Lock, TryLock and Unlock on a closed Conn fail at once with zk.ErrClosing
// instead of retrying a connection that cannot come back for the whole
// retry timeout.
func testClosedConnFailsPromptly(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	admin, _ := env.Connect(t, sessionTimeout)
	held := recipe.NewMutex(conn, dir+"-held")
	if err := held.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	m := recipe.NewMutex(conn, dir)
	start := time.Now()
	if err := m.Lock(testCtx(t)); !errors.Is(err, zk.ErrClosing) {
		t.Errorf("Lock on a closed Conn: %v, want zk.ErrClosing", err)
	}
	if ok, err := m.TryLock(testCtx(t)); ok || !errors.Is(err, zk.ErrClosing) {
		t.Errorf("TryLock on a closed Conn: %v, %v, want zk.ErrClosing", ok, err)
	}
	if err := held.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Errorf("Unlock of a hold on a closed Conn: %v, want ErrLockLost", err)
	}
	// The default retry timeout is 15s: a retried closed connection would
	// take that long at least.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("calls on a closed Conn took %v", d)
	}
	settles(t, admin, dir+"-held", 0)
}

// Each hold's token exceeds every earlier hold's, across handles.
func testFencingTokensGrow(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	conns := []zktest.Conn{connA, connB}
	handles := []*recipe.Mutex{recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)}
	var last int64
	for i := range 6 {
		m, conn := handles[i%2], conns[i%2]
		if err := m.Lock(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		tok := m.Token()
		ok, stat, err := conn.Exists(dir + "/" + contenders(t, conn, dir)[0])
		if err != nil || !ok || stat.Czxid != tok {
			t.Fatalf("token %d is not the node's czxid (%+v, %v)", tok, stat, err)
		}
		if tok <= last {
			t.Fatalf("hold %d: token %d not above %d", i, tok, last)
		}
		last = tok
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

// ghostConn makes the first sequential create look like CURATOR-604: the
// node is created with our GUID but owned by another session (as a node
// left by our expired session is), and the reply is lost.
type ghostConn struct {
	recipe.Conn
	other zktest.Conn
	done  atomic.Bool
	ghost atomic.Value // path of the ghost
}

func (g *ghostConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags&zk.FlagSequence != 0 && !g.done.Load() {
		ghost, err := g.other.Create(path, data, flags, acl)
		if err != nil {
			return "", err // the directory is made first
		}
		g.done.Store(true)
		g.ghost.Store(ghost)
		return "", zk.ErrConnectionClosed
	}
	return g.Conn.Create(path, data, flags, acl)
}

// A node found by GUID after a lost reply is ours only if the current
// session owns it; otherwise the Mutex queues a node of its own.
func testGhostOfAnotherSessionNotAdopted(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	other, _ := env.Connect(t, sessionTimeout)
	g := &ghostConn{Conn: conn, other: other}
	m := recipe.NewMutex(g, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ghost, _ := g.ghost.Load().(string)
	if ghost == "" {
		t.Fatal("no ghost was made")
	}
	ids := contenders(t, conn, dir)
	if len(ids) != 1 || dir+"/"+ids[0] == ghost {
		t.Fatalf("contenders %v (ghost %s): want one node, not the ghost", ids, ghost)
	}
	ok, stat, err := conn.Exists(dir + "/" + ids[0])
	if err != nil || !ok || stat.EphemeralOwner != conn.SessionID() || stat.Czxid != m.Token() {
		t.Fatalf("held node %s: exists %v stat %+v err %v; want owned by %#x with czxid %d",
			ids[0], ok, stat, err, conn.SessionID(), m.Token())
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// lateConn loses the first sequential create before it is applied, and
// applies it after the retry succeeded: a stray twin of our node.
type lateConn struct {
	recipe.Conn
	lost  atomic.Bool
	stray atomic.Value
}

func (l *lateConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags&zk.FlagSequence == 0 {
		return l.Conn.Create(path, data, flags, acl)
	}
	if l.lost.CompareAndSwap(false, true) {
		return "", zk.ErrConnectionClosed
	}
	node, err := l.Conn.Create(path, data, flags, acl)
	if err == nil && l.stray.Load() == nil {
		stray, serr := l.Conn.Create(path, data, flags, acl)
		if serr != nil {
			return "", serr
		}
		l.stray.Store(stray)
	}
	return node, err
}

func testLateCreateStrayRemoved(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	l := &lateConn{Conn: conn}
	m := recipe.NewMutex(l, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if l.stray.Load() == nil {
		t.Fatal("no stray was made")
	}
	if ids := contenders(t, conn, dir); len(ids) != 1 {
		t.Fatalf("contenders %v: the stray twin was left in the queue", ids)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ids := contenders(t, conn, dir); len(ids) != 0 {
		t.Fatalf("left behind: %v", ids)
	}
}

// sessionFlipConn reports another session id once, right after the first
// listing of the lock directory: as if the client had moved to a new
// session between checking its node's owner and listing the queue.
type sessionFlipConn struct {
	recipe.Conn
	listed  atomic.Bool
	flipped atomic.Bool
	first   atomic.Value // the first node created
}

func (f *sessionFlipConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	node, err := f.Conn.Create(path, data, flags, acl)
	if err == nil && flags&zk.FlagSequence != 0 {
		f.first.CompareAndSwap(nil, node)
	}
	return node, err
}

func (f *sessionFlipConn) Children(path string) ([]string, *zk.Stat, error) {
	children, stat, err := f.Conn.Children(path)
	if err == nil && f.first.Load() != nil {
		f.listed.Store(true)
	}
	return children, stat, err
}

func (f *sessionFlipConn) SessionID() int64 {
	if f.listed.Load() && f.flipped.CompareAndSwap(false, true) {
		return f.Conn.SessionID() + 1
	}
	return f.Conn.SessionID()
}

// A listing made after the session changed does not count: the node it
// shows first belongs to the old session (CURATOR-604).
func testListedAfterSessionChange(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	f := &sessionFlipConn{Conn: conn}
	m := recipe.NewMutex(f, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !f.flipped.Load() {
		t.Fatal("the session id never changed: the test tested nothing")
	}
	ids := contenders(t, conn, dir)
	first, _ := f.first.Load().(string)
	if len(ids) != 1 || dir+"/"+ids[0] == first {
		t.Fatalf("holding %v; the node listed in the old session (%s) must not count", ids, first)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Closing the Conn ends the session and with it the hold: Lost closes and
// Unlock reports the loss rather than retrying a closed connection.
func testConnClosedWhileHeld(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	admin, _ := env.Connect(t, sessionTimeout)
	m := recipe.NewMutex(conn, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	select {
	case <-m.Lost():
	case <-time.After(time.Minute):
		t.Fatal("Lost() not closed after the Conn was closed")
	}
	start := time.Now()
	if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Unlock() = %v, want ErrLockLost", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Unlock took %v on a closed Conn", d)
	}
	settles(t, admin, dir, 0)
}

// A Lock whose ctx is already done does nothing.
func testCancelledBeforeLock(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	m := recipe.NewMutex(conn, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock(cancelled) = %v", err)
	}
	if ok, err := m.TryLock(ctx); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryLock(cancelled) = %v, %v", ok, err)
	}
	if ok, _, err := conn.Exists(dir); ok || err != nil {
		t.Fatalf("a cancelled Lock touched the server: exists %v, %v", ok, err)
	}
}

// failingWatchConn fails the watch on the predecessor with an error that
// retrying cannot fix.
type failingWatchConn struct{ recipe.Conn }

func (f failingWatchConn) GetW(string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return nil, nil, nil, zk.ErrNoAuth
}

// An error after the create leaves no node behind.
func testErrorAfterCreateCleansUp(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewMutex(connA, dir)
	if err := a.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	b := recipe.NewMutex(failingWatchConn{connB}, dir)
	if err := b.Lock(testCtx(t)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Lock = %v, want the watch's zk.ErrNoAuth", err)
	}
	if got := contenders(t, connB, dir); len(got) != 1 {
		t.Fatalf("contenders %v: the failed Lock left its node", got)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
}
