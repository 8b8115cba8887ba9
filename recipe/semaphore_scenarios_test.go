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

// The Semaphore scenarios are written once against zktest.Env and run on
// the fake (TestSemaphoreFake) and on a real ensemble (TestSemaphoreReal),
// as the Mutex's and the Election's are.

var semaphoreScenarios = []zktest.Scenario{
	{Name: "NHoldersAndTheNextWaits", Body: testNHoldersAndTheNextWaits},
	{Name: "ReleaseAdmitsOneAndWakesOnlyIt", Body: testReleaseAdmitsOneAndWakesOnlyIt},
	{Name: "ReleasedBeforeTheWatch", Body: testReleasedBeforeTheWatch},
	{Name: "TryAcquireFullAndFree", Body: testTryAcquireFullAndFree},
	{Name: "CancelLeavesNoNode", Body: testSemaphoreCancelLeavesNoNode},
	{Name: "HolderSessionExpires", Body: testSemaphoreHolderSessionExpires},
	{Name: "WaiterExpiresBetweenCreateAndCount", Body: testWaiterExpiresBetweenCreateAndCount},
	{Name: "LockLostBeforeTheCreate", Body: testLockLostBeforeTheCreate},
	{Name: "LeaseLostWhileLettingGoOfTheLock", Body: testLeaseLostWhileLettingGoOfTheLock},
	{Name: "MaxLeasesMismatch", Body: testMaxLeasesMismatch},
	{Name: "LostAndToken", Body: testLeaseLostAndToken},
	{Name: "BadInput", Body: testSemaphoreBadInput},
	{Name: "FailedReleaseIsPending", Body: testFailedReleaseIsPending},
	{Name: "ClosedConn", Body: testSemaphoreClosedConn},
	{Name: "GhostLeaseNotAdopted", Body: testGhostLeaseNotAdopted},
	{Name: "Traffic", Body: testSemaphoreTraffic},
	{Name: "InteropKazooSemaphore", Body: testInteropKazooSemaphore},
}

func runSemaphoreScenarios(t *testing.T, target zktest.Target) {
	zktest.RunScenarios(t, target, semaphoreScenarios)
}

// lockDirOf is the directory of a semaphore's acquirers' lock, as kazoo
// names it.
func lockDirOf(dir string) string { return dir + "-__lock__" }

// leasesOf lists the semaphore's lease nodes (every child of its
// directory), sorted; none when the directory does not exist.
func leasesOf(t testing.TB, c zktest.Conn, dir string) []string {
	t.Helper()
	children, _, err := c.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("Children(%s): %v", dir, err)
	}
	slices.Sort(children)
	return children
}

// leasesSettle waits until a listing of dir through c shows want leases.
func leasesSettle(t testing.TB, c zktest.Conn, dir string, want int) []string {
	t.Helper()
	var got []string
	eventually(t, fmt.Sprintf("%d leases", want), func() bool {
		got = leasesOf(t, c, dir)
		return len(got) == want
	})
	return got
}

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	lease *recipe.Lease
	err   error
}

func acquireAsync(ctx context.Context, s *recipe.Semaphore) <-chan acquired {
	done := make(chan acquired, 1)
	go func() {
		l, err := s.Acquire(ctx)
		done <- acquired{l, err}
	}()
	return done
}

func mustAcquire(t testing.TB, s *recipe.Semaphore) *recipe.Lease {
	t.Helper()
	l, err := s.Acquire(testCtx(t))
	if err != nil {
		t.Fatalf("Acquire(%s): %v", s.Path(), err)
	}
	return l
}

func mustRelease(t testing.TB, l *recipe.Lease) {
	t.Helper()
	if err := l.Release(); err != nil {
		t.Fatalf("Release(%s): %v", l.Node(), err)
	}
}

// acquiredIn waits for a background Acquire and fails unless it got a
// lease.
func acquiredIn(t testing.TB, what string, done <-chan acquired) *recipe.Lease {
	t.Helper()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a.lease
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// acquireFailed waits for a background Acquire and returns its error,
// failing if it got a lease.
func acquireFailed(t testing.TB, what string, done <-chan acquired) error {
	t.Helper()
	select {
	case a := <-done:
		if a.err == nil {
			t.Fatalf("%s got lease %s, want an error", what, a.lease.Node())
		}
		return a.err
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// stillWaiting fails if a background Acquire returns within a short while.
func stillWaiting(t testing.TB, what string, done <-chan acquired) {
	t.Helper()
	select {
	case a := <-done:
		t.Fatalf("%s returned (lease %v, %v) while it should still wait", what, a.lease != nil, a.err)
	case <-time.After(300 * time.Millisecond):
	}
}

// watchingLeases waits until c's last watch is a children watch on dir:
// the lock's holder waiting for a lease.
func watchingLeases(t testing.TB, c *countingConn, dir string) {
	t.Helper()
	eventually(t, "the acquirer watching the leases", func() bool {
		op, path := c.lastWatch()
		return op == "getChildren" && path == dir
	})
}

// N acquirers hold leases at once; the next waits, holding the acquirers'
// lock, until one is released; the directory records N.
func testNHoldersAndTheNextWaits(t *testing.T, env zktest.Env) {
	const n = 3
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	var leases []*recipe.Lease
	for range n {
		c, _ := env.Connect(t, sessionTimeout)
		leases = append(leases, mustAcquire(t, recipe.NewSemaphore(c, dir, n)))
	}
	nodes := leasesSettle(t, admin, dir, n)
	for _, l := range leases {
		if !slices.Contains(nodes, baseName(l.Node())) || l.State() != recipe.MutexHeld || l.Token() == 0 {
			t.Fatalf("lease %s: state %v token %d; leases %v", l.Node(), l.State(), l.Token(), nodes)
		}
	}
	if data, _, err := admin.Get(dir); err != nil || string(data) != fmt.Sprint(n) {
		t.Fatalf("the directory's data %q (%v), want %q", data, err, fmt.Sprint(n))
	}

	raw, _ := env.Connect(t, sessionTimeout)
	next := countRequests(raw)
	done := acquireAsync(testCtx(t), recipe.NewSemaphore(next, dir, n))
	watchingLeases(t, next, dir)
	stillWaiting(t, "the fourth Acquire", done)
	if got := leasesOf(t, admin, dir); !slices.Equal(got, nodes) {
		t.Fatalf("a waiting acquirer changed the leases: %v, were %v", got, nodes)
	}
	settles(t, admin, lockDirOf(dir), 1) // it holds the lock while it waits

	mustRelease(t, leases[1])
	fourth := acquiredIn(t, "the fourth Acquire", done)
	settles(t, admin, lockDirOf(dir), 0)
	if got := leasesSettle(t, admin, dir, n); !slices.Contains(got, baseName(fourth.Node())) {
		t.Fatalf("leases %v without the fourth's %s", got, fourth.Node())
	}
	for _, l := range []*recipe.Lease{leases[0], leases[2], fourth} {
		mustRelease(t, l)
	}
	leasesSettle(t, admin, dir, 0)
}

// A release admits exactly one waiter — the first in line — and wakes only
// it: only the holder of the acquirers' lock watches the leases, and each
// waiter behind it watches only its predecessor in the lock's line. Each
// waiter is woken once by a released lease, and at most once by the lock.
func testReleaseAdmitsOneAndWakesOnlyIt(t *testing.T, env zktest.Env) {
	const n, waiters = 2, 5
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	var holding []*recipe.Lease
	for range n {
		c, _ := env.Connect(t, sessionTimeout)
		holding = append(holding, mustAcquire(t, recipe.NewSemaphore(c, dir, n)))
	}

	var leaseWakes, lockWakes [waiters]atomic.Int64
	var totalLeaseWakes atomic.Int64
	results := make([]<-chan acquired, waiters)
	conns := make([]*countingConn, waiters)
	for i := range waiters {
		raw, _ := env.Connect(t, sessionTimeout)
		c := countRequests(raw)
		conns[i] = c
		s := recipe.NewSemaphore(c, dir, n, recipe.WithWakeHook(func(ev zk.Event) {
			if ev.Type == zk.EventNodeChildrenChanged && ev.Path == dir {
				leaseWakes[i].Add(1)
				totalLeaseWakes.Add(1)
			} else {
				lockWakes[i].Add(1)
			}
		}))
		results[i] = acquireAsync(testCtx(t), s)
		queue := settles(t, admin, lockDirOf(dir), i+1)
		if i == 0 {
			watchingLeases(t, c, dir)
		} else {
			pred := lockDirOf(dir) + "/" + queue[i-1]
			eventually(t, "a waiter watching its predecessor", func() bool { return c.watching(pred) })
		}
	}
	if got := totalLeaseWakes.Load(); got != 0 {
		t.Fatalf("%d wakeups before any release", got)
	}

	for k := range waiters {
		// The oldest lease goes; waiter k, and no other, gets one.
		mustRelease(t, holding[0])
		holding = holding[1:]
		holding = append(holding, acquiredIn(t, fmt.Sprintf("waiter %d", k), results[k]))
		if got := totalLeaseWakes.Load(); got != int64(k+1) {
			t.Fatalf("after %d releases, %d acquirers woken by the leases", k+1, got)
		}
		if k+1 < waiters {
			// The next in line holds the lock now, and watches the leases.
			watchingLeases(t, conns[k+1], dir)
			stillWaiting(t, fmt.Sprintf("waiter %d after release %d", k+1, k+1), results[k+1])
		}
		if got := leasesSettle(t, admin, dir, n); len(got) != n {
			t.Fatalf("leases %v", got)
		}
	}
	for i := range waiters {
		if got := leaseWakes[i].Load(); got != 1 {
			t.Errorf("waiter %d woken %d times by the leases, want 1", i, got)
		}
		if got, want := lockWakes[i].Load(), int64(min(i, 1)); got != want {
			t.Errorf("waiter %d woken %d times by the lock, want %d", i, got, want)
		}
	}
	for _, l := range holding {
		mustRelease(t, l)
	}
	leasesSettle(t, admin, dir, 0)
}

// releasingConn runs before once, right before the first watched listing
// of the leases.
type releasingConn struct {
	recipe.Conn
	before func()
	once   sync.Once
}

func (r *releasingConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	r.once.Do(r.before)
	return r.Conn.ChildrenW(path)
}

// A lease released after the waiter found the leases full and before it
// set its watch is not missed: the watched listing shows the room, and the
// waiter takes the lease without waiting for an event that will not come.
func testReleasedBeforeTheWatch(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	connA, _ := env.Connect(t, sessionTimeout)
	connW, _ := env.Connect(t, sessionTimeout)
	held := mustAcquire(t, recipe.NewSemaphore(connA, dir, 1))
	released := make(chan error, 1)
	w := recipe.NewSemaphore(&releasingConn{Conn: connW, before: func() { released <- held.Release() }}, dir, 1)
	lease := acquiredIn(t, "the Acquire whose lease was released before it watched", acquireAsync(testCtx(t), w))
	if err := mustWait(t, "the release", released); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, lease)
}

// TryAcquire takes a free lease and returns false, touching nothing, when
// the leases are full or when those held and the acquirers queued for the
// lock fill N: a lease about to free up goes to whoever waited first.
func testTryAcquireFullAndFree(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	conns := make([]zktest.Conn, 4)
	sems := make([]*recipe.Semaphore, 4)
	for i := range conns {
		conns[i], _ = env.Connect(t, sessionTimeout)
		sems[i] = recipe.NewSemaphore(conns[i], dir, 2)
	}
	try := func(i int, want bool) *recipe.Lease {
		t.Helper()
		l, ok, err := sems[i].TryAcquire(testCtx(t))
		if ok != want || err != nil || (l != nil) != want {
			t.Fatalf("TryAcquire by %d = %v, %v, %v; want %v", i, l, ok, err, want)
		}
		return l
	}
	a := try(0, true)
	b := try(1, true)
	full := leasesOf(t, admin, dir)
	_, before, _ := admin.Get(dir)
	try(2, false)
	_, after, _ := admin.Get(dir)
	if got := leasesOf(t, admin, dir); !slices.Equal(got, full) || after.Cversion != before.Cversion {
		t.Fatalf("a TryAcquire on full leases changed them: %v (cversion %d), were %v (cversion %d)", got, after.Cversion, full, before.Cversion)
	}
	mustRelease(t, a)
	c := try(2, true)
	if c.Token() <= b.Token() {
		t.Fatalf("token %d of a later lease not above %d", c.Token(), b.Token())
	}
	mustRelease(t, b)

	// One lease held, one free — but an acquirer is queued for the lock
	// (a kazoo Lock contender, say): it comes first.
	if _, err := admin.Create(lockDirOf(dir), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	queued, err := conns[3].Create(lockDirOf(dir)+"/ffffffffffffffffffffffffffffffff__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	try(1, false)
	if err := conns[3].Delete(queued, -1); err != nil {
		t.Fatal(err)
	}
	d := try(1, true)
	try(3, false)
	for _, l := range []*recipe.Lease{c, d} {
		mustRelease(t, l)
	}
	leasesSettle(t, admin, dir, 0)
}

// An Acquire ended by its ctx — while it waits for a lease, while it waits
// for the lock, at its deadline, or before it starts — leaves no node and
// no goroutine, and the handle acquires again afterwards.
func testSemaphoreCancelLeavesNoNode(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	connA, _ := env.Connect(t, sessionTimeout)
	rawB, _ := env.Connect(t, sessionTimeout)
	connB := countRequests(rawB)
	connC, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewSemaphore(connA, dir, 1)
	b := recipe.NewSemaphore(connB, dir, 1)
	c := recipe.NewSemaphore(connC, dir, 1)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Acquire(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire(cancelled) = %v", err)
	}
	if _, ok, err := a.TryAcquire(cancelled); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire(cancelled) = %v, %v", ok, err)
	}
	if ok, _, err := admin.Exists(dir); ok || err != nil {
		t.Fatalf("a cancelled Acquire touched the server: exists %v, %v", ok, err)
	}

	before := mutexGoroutines()
	held := mustAcquire(t, a)
	holder := leasesOf(t, admin, dir)

	bCtx, bCancel := context.WithCancel(testCtx(t))
	bDone := acquireAsync(bCtx, b)
	watchingLeases(t, connB, dir)
	cCtx, cCancel := context.WithCancel(testCtx(t))
	cDone := acquireAsync(cCtx, c)
	settles(t, admin, lockDirOf(dir), 2)

	cCancel() // C waits for the lock
	if err := acquireFailed(t, "C's Acquire", cDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("C's Acquire = %v, want context.Canceled", err)
	}
	settles(t, admin, lockDirOf(dir), 1)
	bCancel() // B holds the lock and waits for a lease
	if err := acquireFailed(t, "B's Acquire", bDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("B's Acquire = %v, want context.Canceled", err)
	}
	settles(t, admin, lockDirOf(dir), 0)
	if got := leasesOf(t, admin, dir); !slices.Equal(got, holder) {
		t.Fatalf("leases after the cancellations: %v, want only the holder's %v", got, holder)
	}

	ctx, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v, want context.DeadlineExceeded", err)
	}
	settles(t, admin, lockDirOf(dir), 0)
	if got := leasesOf(t, admin, dir); !slices.Equal(got, holder) {
		t.Fatalf("leases after the deadline: %v, want only the holder's %v", got, holder)
	}

	mustRelease(t, held)
	for _, s := range []*recipe.Semaphore{b, c} {
		mustRelease(t, mustAcquire(t, s))
	}
	leasesSettle(t, admin, dir, 0)
	eventually(t, "no lease or lock goroutine left", func() bool { return mutexGoroutines() == before })
}

// A holder's session expires: its lease frees up for the waiter, and the
// holder learns that it lost it.
func testSemaphoreHolderSessionExpires(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/sem"
	connA, _ := env.Connect(t, sessionTimeout)
	rawB, _ := env.Connect(t, sessionTimeout)
	connB := countRequests(rawB)
	a := recipe.NewSemaphore(connA, dir, 1)
	b := recipe.NewSemaphore(connB, dir, 1)
	lease := mustAcquire(t, a)
	token, lost := lease.Token(), lease.Lost()
	bDone := acquireAsync(testCtx(t), b)
	watchingLeases(t, connB, dir)

	zktest.Require(t, expirer.Expire(connA))
	next := acquiredIn(t, "B's Acquire after A's session expired", bDone)
	if next.Token() <= token {
		t.Fatalf("B's token %d not above the expired lease's %d", next.Token(), token)
	}
	connA.Exists(dir) // A learns of the expiry at its next contact
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the expired lease's Lost() was not closed")
	}
	if lease.State() != recipe.MutexLost || lease.Token() != 0 {
		t.Fatalf("the expired lease: state %v token %d", lease.State(), lease.Token())
	}
	if err := lease.Release(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Release of the expired lease = %v, want ErrLockLost", err)
	}
	if err := lease.Release(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("a second Release = %v, want ErrNotLocked", err)
	}
	// A acquires again, on its new session, behind B.
	aDone := acquireAsync(testCtx(t), a)
	stillWaiting(t, "A's new Acquire while B holds", aDone)
	mustRelease(t, next)
	mustRelease(t, acquiredIn(t, "A's new Acquire", aDone))
}

// expiringConn runs between once, right after the first lease node's
// create returns: the acquirer's session expires between its create and
// its count.
type expiringConn struct {
	recipe.Conn
	dir     string
	between func()
	once    sync.Once
}

func (e *expiringConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	node, err := e.Conn.Create(path, data, flags, acl)
	if err == nil && flags == zk.FlagEphemeral && strings.HasPrefix(path, e.dir+"/") {
		e.once.Do(e.between)
	}
	return node, err
}

// A waiter's session expires after it created its lease node and before it
// counted: its node goes with the session (and its hold on the lock),
// another acquirer takes the lease meanwhile, and the waiter — counting
// after its create, on its new session — does not take a second one. A
// count made before the create would have seen the lease free.
func testWaiterExpiresBetweenCreateAndCount(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	rawW, _ := env.Connect(t, sessionTimeout)
	connY, _ := env.Connect(t, sessionTimeout)
	y := recipe.NewSemaphore(connY, dir, 1)
	oldSession := rawW.SessionID()
	reached, resume := make(chan struct{}), make(chan struct{})
	var resumeOnce sync.Once
	defer resumeOnce.Do(func() { close(resume) })
	w := recipe.NewSemaphore(&expiringConn{Conn: rawW, dir: dir, between: func() {
		close(reached)
		<-resume
	}}, dir, 1)
	wDone := acquireAsync(testCtx(t), w)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("W never created its lease node")
	}
	// W holds the lock and has made its node; Y queues behind it for the
	// lock. W's session expires, and Y takes the lease.
	yDone := acquireAsync(testCtx(t), y)
	settles(t, admin, lockDirOf(dir), 2)
	zktest.Require(t, expirer.Expire(rawW))
	yLease := acquiredIn(t, "Y's Acquire once W's session expired", yDone)
	resumeOnce.Do(func() { close(resume) }) // W counts now
	for range 3 {
		if got := leasesOf(t, admin, dir); !slices.Equal(got, []string{baseName(yLease.Node())}) {
			t.Fatalf("leases %v while Y holds %s (N = 1)", got, yLease.Node())
		}
		stillWaiting(t, "W's Acquire while Y holds", wDone)
	}
	mustRelease(t, yLease)
	wLease := acquiredIn(t, "W's Acquire", wDone)
	if rawW.SessionID() == oldSession {
		t.Fatal("W's session did not change")
	}
	ok, stat, err := admin.Exists(wLease.Node())
	if err != nil || !ok || stat.EphemeralOwner != rawW.SessionID() || stat.Czxid != wLease.Token() {
		t.Fatalf("W's lease node: exists %v, stat %+v, %v; want owned by %#x", ok, stat, err, rawW.SessionID())
	}
	mustRelease(t, wLease)
	leasesSettle(t, admin, dir, 0)
}

// turnstile makes the lease traffic of two acquirers take turns, one
// request each: their creates and deletes of lease nodes and their
// listings of the leases. That is the interleaving in which two acquirers
// that both run the create/count loop count each other's node, step back
// together, see the room each other's deletion made, and start again, for
// ever (found by zkfuzz -recipe=semaphore -seed=2). A party whose turn it
// is not waits for the other's request or for a quiet moment (the other
// has no lease traffic to send), whichever comes first; on the fake that
// moment is virtual. Past limit creates the turnstile fails every request
// with zk.ErrClosing, which ends a spinning loop.
type turnstile struct {
	dir   string
	limit int64
	quiet time.Duration

	creates atomic.Int64
	spun    atomic.Bool
	off     atomic.Bool // the test is over: no more turns

	mu    sync.Mutex
	turn  int           // whose turn it is: 0 or 1
	moved chan struct{} // closed, and replaced, at every request
}

// newTurnstile returns a turnstile for the leases under dir, open again
// once the test ends, so that no acquirer is left waiting for its turn.
func newTurnstile(t testing.TB, dir string) *turnstile {
	ts := &turnstile{dir: dir, limit: 40, quiet: 200 * time.Millisecond, moved: make(chan struct{})}
	t.Cleanup(func() {
		ts.off.Store(true)
		ts.pass(0)
	})
	return ts
}

// pass gives the turn to the other party and wakes whoever waits.
func (ts *turnstile) pass(party int) {
	ts.mu.Lock()
	ts.turn = 1 - party
	close(ts.moved)
	ts.moved = make(chan struct{})
	ts.mu.Unlock()
}

// do runs a request of party's lease traffic in its turn.
func (ts *turnstile) do(party int, create bool, op func() error) error {
	if create && ts.creates.Add(1) > ts.limit {
		ts.spun.Store(true)
	}
	if ts.spun.Load() {
		return zk.ErrClosing
	}
	for {
		ts.mu.Lock()
		if ts.turn == party || ts.off.Load() {
			ts.mu.Unlock()
			break
		}
		moved := ts.moved
		ts.mu.Unlock()
		select {
		case <-moved:
			continue
		case <-time.After(ts.quiet):
		}
		break
	}
	err := op()
	ts.pass(party)
	return err
}

// turnConn is one party's Conn through a turnstile. beforeCreate, if set,
// runs once, before the party's first lease create is sent.
type turnConn struct {
	recipe.Conn
	ts           *turnstile
	party        int
	beforeCreate func()
	once         sync.Once
}

func (c *turnConn) lease(path string) bool { return strings.HasPrefix(path, c.ts.dir+"/") }

func (c *turnConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (node string, err error) {
	if !c.lease(path) {
		return c.Conn.Create(path, data, flags, acl)
	}
	if c.beforeCreate != nil {
		c.once.Do(c.beforeCreate)
	}
	err = c.ts.do(c.party, true, func() (err error) {
		node, err = c.Conn.Create(path, data, flags, acl)
		return err
	})
	return node, err
}

func (c *turnConn) Delete(path string, version int32) error {
	if !c.lease(path) {
		return c.Conn.Delete(path, version)
	}
	return c.ts.do(c.party, false, func() error { return c.Conn.Delete(path, version) })
}

func (c *turnConn) Children(path string) (children []string, stat *zk.Stat, err error) {
	if path != c.ts.dir {
		return c.Conn.Children(path)
	}
	err = c.ts.do(c.party, false, func() (err error) {
		children, stat, err = c.Conn.Children(path)
		return err
	})
	return children, stat, err
}

func (c *turnConn) ChildrenW(path string) (children []string, stat *zk.Stat, watch <-chan zk.Event, err error) {
	if path != c.ts.dir {
		return c.Conn.ChildrenW(path)
	}
	err = c.ts.do(c.party, false, func() (err error) {
		children, stat, watch, err = c.Conn.ChildrenW(path)
		return err
	})
	return children, stat, watch, err
}

// W holds the acquirers' lock, and its session expires just before it
// sends its lease create, which goes out on W's new session: W holds the
// lock no more, and Y, next in the lock's line, holds it now. A stale
// lease (C's) takes one of the N = 2. W must not carry on counting as if
// it still held the lock: it gives up its node and queues behind Y, and Y
// takes the free lease. Had W carried on, W and Y, their requests taking
// turns, would each count three leases — C's, W's, Y's — delete their own,
// see the room the other's deletion made, and create again, for ever.
func testLockLostBeforeTheCreate(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	connC, _ := env.Connect(t, sessionTimeout)
	rawW, _ := env.Connect(t, sessionTimeout)
	countedW := countRequests(rawW)
	rawY, _ := env.Connect(t, sessionTimeout)
	stale := mustAcquire(t, recipe.NewSemaphore(connC, dir, 2))

	ts := newTurnstile(t, dir)
	oldSession := rawW.SessionID()
	reached, resume := make(chan struct{}), make(chan struct{})
	var resumeOnce sync.Once
	defer resumeOnce.Do(func() { close(resume) })
	connW := &turnConn{Conn: countedW, ts: ts, party: 0, beforeCreate: func() {
		close(reached)
		<-resume
		// The create goes out once the client has its new session, as
		// go-zookeeper sends a request queued across an expiry.
		// (Not eventually: this runs on W's goroutine, which must not
		// fail the test; W's Acquire times out instead.)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if id := rawW.SessionID(); id != 0 && id != oldSession {
				break
			}
		}
	}}
	wDone := acquireAsync(testCtx(t), recipe.NewSemaphore(connW, dir, 2))
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("W never came to create its lease node")
	}
	settles(t, admin, lockDirOf(dir), 1) // W holds the lock
	yDone := acquireAsync(testCtx(t), recipe.NewSemaphore(&turnConn{Conn: rawY, ts: ts, party: 1}, dir, 2))
	settles(t, admin, lockDirOf(dir), 2)
	zktest.Require(t, expirer.Expire(rawW))
	resumeOnce.Do(func() { close(resume) })

	var yLease *recipe.Lease
	select {
	case a := <-yDone:
		if ts.spun.Load() {
			t.Fatalf("W and Y ran the create/count loop in lockstep: %d lease creates (Y's Acquire: %v)", ts.creates.Load(), a.err)
		}
		if a.err != nil {
			t.Fatalf("Y's Acquire: %v", a.err)
		}
		yLease = a.lease
	case <-time.After(time.Minute):
		t.Fatal("timed out waiting for Y's Acquire")
	}
	// W queues behind Y, holds the lock once Y lets go of it, and waits
	// for a lease.
	watchingLeases(t, countedW, dir)
	stillWaiting(t, "W's Acquire while C and Y hold the two leases", wDone)
	if got, want := leasesOf(t, admin, dir), []string{baseName(stale.Node()), baseName(yLease.Node())}; !slices.Equal(got, sorted(want)) {
		t.Fatalf("leases %v, want C's and Y's %v", got, want)
	}
	mustRelease(t, stale)
	wLease := acquiredIn(t, "W's Acquire once C's lease was released", wDone)
	ok, stat, err := admin.Exists(wLease.Node())
	if err != nil || !ok || rawW.SessionID() == oldSession || stat.EphemeralOwner != rawW.SessionID() || stat.Czxid != wLease.Token() {
		t.Fatalf("W's lease node: exists %v, %+v, %v; want owned by W's new session %#x (was %#x)", ok, stat, err, rawW.SessionID(), oldSession)
	}
	// W's node on its new session, given up; Y's; W's over N; W's lease.
	if got := ts.creates.Load(); got > 4 {
		t.Fatalf("%d lease creates, want 4 at most", got)
	}
	mustRelease(t, yLease)
	mustRelease(t, wLease)
	leasesSettle(t, admin, dir, 0)
	settles(t, admin, lockDirOf(dir), 0)
}

// unlockExpiringConn runs before once, right before the first Delete of
// a node in the acquirers' lock's directory: Acquire letting go of the
// lock once it has counted its lease.
type unlockExpiringConn struct {
	recipe.Conn
	lockDir string
	before  func()
	once    sync.Once
}

func (u *unlockExpiringConn) Delete(path string, version int32) error {
	if strings.HasPrefix(path, u.lockDir+"/") {
		u.once.Do(u.before)
	}
	return u.Conn.Delete(path, version)
}

// The acquirer's session expires after it counted its lease and before it
// let go of the acquirers' lock: the lease went with the session. Acquire
// does not return it — a lease of an ended session, held by nobody — but
// queues again, and returns a lease of its new session.
func testLeaseLostWhileLettingGoOfTheLock(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	raw, _ := env.Connect(t, sessionTimeout)
	oldSession := raw.SessionID()
	var expired error
	conn := &unlockExpiringConn{Conn: raw, lockDir: lockDirOf(dir), before: func() {
		if expired = expirer.Expire(raw); expired != nil {
			return
		}
		// The Delete goes out once the client has its new session. (Not
		// eventually: this runs on the acquirer's goroutine.)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if id := raw.SessionID(); id != 0 && id != oldSession {
				break
			}
		}
	}}
	lease := mustAcquire(t, recipe.NewSemaphore(conn, dir, 1))
	zktest.Require(t, expired)
	if raw.SessionID() == oldSession {
		t.Fatal("the session did not change")
	}
	ok, stat, err := admin.Exists(lease.Node())
	if err != nil || !ok || stat.EphemeralOwner != raw.SessionID() || lease.State() != recipe.MutexHeld || lease.Token() != stat.Czxid {
		t.Fatalf("Acquire returned lease %s: state %v, token %d; its node: exists %v, %+v, %v; want held by session %#x", lease.Node(), lease.State(), lease.Token(), ok, stat, err, raw.SessionID())
	}
	mustRelease(t, lease)
	leasesSettle(t, admin, dir, 0)
	settles(t, admin, lockDirOf(dir), 0)
}

// sorted returns s sorted.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// N is fixed per path: the directory's creator records its N there, and a
// contender with another N is refused, whether the directory held another
// N from the start or was set to one since; a refused acquisition leaves
// no node. Data that is no number records nothing, as in kazoo.
func testMaxLeasesMismatch(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewSemaphore(connA, dir, 2)
	held := mustAcquire(t, a)
	if data, _, err := admin.Get(dir); err != nil || string(data) != "2" {
		t.Fatalf("the directory's data %q, %v; want \"2\"", data, err)
	}

	b := recipe.NewSemaphore(connB, dir, 3)
	if _, err := b.Acquire(testCtx(t)); !errors.Is(err, recipe.ErrMaxLeasesMismatch) {
		t.Fatalf("Acquire with N = 3 on a directory of 2: %v, want ErrMaxLeasesMismatch", err)
	}
	if l, ok, err := b.TryAcquire(testCtx(t)); ok || l != nil || !errors.Is(err, recipe.ErrMaxLeasesMismatch) {
		t.Fatalf("TryAcquire with N = 3 on a directory of 2: %v, %v, %v", l, ok, err)
	}
	if got := leasesOf(t, admin, dir); !slices.Equal(got, []string{baseName(held.Node())}) {
		t.Fatalf("leases %v after refusals, want only %s", got, held.Node())
	}
	settles(t, admin, lockDirOf(dir), 0)

	// The data changes under a Semaphore that checked it before: its next
	// listing shows the change.
	if _, err := admin.Set(dir, []byte("5"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(testCtx(t)); !errors.Is(err, recipe.ErrMaxLeasesMismatch) {
		t.Fatalf("Acquire after the directory was set to 5: %v, want ErrMaxLeasesMismatch", err)
	}
	if _, _, err := a.TryAcquire(testCtx(t)); !errors.Is(err, recipe.ErrMaxLeasesMismatch) {
		t.Fatalf("TryAcquire after the directory was set to 5: %v, want ErrMaxLeasesMismatch", err)
	}
	if got := leasesOf(t, admin, dir); !slices.Equal(got, []string{baseName(held.Node())}) {
		t.Fatalf("leases %v after refusals, want only %s", got, held.Node())
	}
	settles(t, admin, lockDirOf(dir), 0)
	if _, err := admin.Set(dir, []byte(" 2\n"), -1); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, mustAcquire(t, a))
	mustRelease(t, held)

	// Directories made by hand: other data is left alone and checks
	// nothing.
	for _, data := range []string{"", "config"} {
		other := env.Base() + "/made-" + data
		if _, err := admin.Create(other, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 4} {
			l, ok, err := recipe.NewSemaphore(connB, other, n).TryAcquire(testCtx(t))
			if !ok || err != nil {
				t.Fatalf("TryAcquire (N = %d) of a directory holding %q: %v, %v", n, data, ok, err)
			}
			mustRelease(t, l)
		}
		if got, _, err := admin.Get(other); err != nil || string(got) != data {
			t.Fatalf("a directory made with %q holds %q (%v)", data, got, err)
		}
	}
}

// A lease's Token is its node's czxid and grows with every lease; Lost
// closes when its node is deleted, and Release then reports ErrLockLost;
// a released lease keeps Lost open and has no token. No lease's goroutine
// outlives it.
func testLeaseLostAndToken(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	conn, _ := env.Connect(t, sessionTimeout)
	s := recipe.NewSemaphore(conn, dir, 2, recipe.WithNodeData([]byte("worker-1")))
	before := mutexGoroutines()
	first := mustAcquire(t, s)
	second := mustAcquire(t, s)
	for _, l := range []*recipe.Lease{first, second} {
		if !strings.HasPrefix(l.Node(), dir+"/") {
			t.Fatalf("lease node %s not under %s", l.Node(), dir)
		}
		data, stat, err := admin.Get(l.Node())
		if err != nil || stat.Czxid != l.Token() || stat.EphemeralOwner != conn.SessionID() || string(data) != "worker-1" {
			t.Fatalf("lease %s: token %d; node %q %+v %v", l.Node(), l.Token(), data, stat, err)
		}
	}
	if second.Token() <= first.Token() {
		t.Fatalf("tokens %d then %d do not grow", first.Token(), second.Token())
	}
	if _, ok, err := s.TryAcquire(testCtx(t)); ok || err != nil {
		t.Fatalf("TryAcquire of a third lease of 2: %v, %v", ok, err)
	}

	if err := admin.Delete(first.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Lost():
	case <-time.After(time.Minute):
		t.Fatal("Lost() not closed after the lease's node was deleted")
	}
	if first.State() != recipe.MutexLost || first.Token() != 0 {
		t.Fatalf("a lost lease: state %v token %d", first.State(), first.Token())
	}
	if err := first.Release(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Release of a lost lease = %v, want ErrLockLost", err)
	}
	select {
	case <-second.Lost():
		t.Fatal("the other lease's Lost() closed")
	default:
	}
	lost := second.Lost()
	mustRelease(t, second)
	select {
	case <-lost:
		t.Fatal("Lost() closed by Release")
	default:
	}
	if second.State() != recipe.MutexUnlocked || second.Token() != 0 {
		t.Fatalf("a released lease: state %v token %d", second.State(), second.Token())
	}
	if err := second.Release(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("a second Release = %v, want ErrNotLocked", err)
	}
	leasesSettle(t, admin, dir, 0)
	eventually(t, "no lease goroutine left", func() bool { return mutexGoroutines() == before })
}

// Bad input gets an error, never a panic, and creates nothing.
func testSemaphoreBadInput(t *testing.T, env zktest.Env) {
	conn, _ := env.Connect(t, sessionTimeout)
	ctx := testCtx(t)
	dir := env.Base() + "/sem"
	for _, n := range []int{0, -1} {
		s := recipe.NewSemaphore(conn, dir, n)
		if s.MaxLeases() != n || s.Path() != dir {
			t.Fatalf("MaxLeases %d, Path %q", s.MaxLeases(), s.Path())
		}
		if _, err := s.Acquire(ctx); !errors.Is(err, recipe.ErrInvalidMaxLeases) {
			t.Errorf("Acquire with %d leases = %v, want ErrInvalidMaxLeases", n, err)
		}
		if l, ok, err := s.TryAcquire(ctx); ok || l != nil || !errors.Is(err, recipe.ErrInvalidMaxLeases) {
			t.Errorf("TryAcquire with %d leases = %v, %v, %v, want ErrInvalidMaxLeases", n, l, ok, err)
		}
	}
	if ok, _, err := conn.Exists(dir); ok || err != nil {
		t.Errorf("a semaphore of no leases made its directory: %v, %v", ok, err)
	}
	for _, bad := range []string{"", "relative", env.Base() + "/trailing/", env.Base() + "//double", env.Base() + "/./x", "/"} {
		s := recipe.NewSemaphore(conn, bad, 2)
		if _, err := s.Acquire(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Acquire(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
		if _, ok, err := s.TryAcquire(ctx); ok || !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("TryAcquire(%q) = %v, %v, want zk.ErrInvalidPath", bad, ok, err)
		}
	}
	slash := recipe.NewSemaphore(conn, dir, 2, recipe.WithNodeName("a/b"))
	if _, err := slash.Acquire(ctx); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("Acquire with node name a/b = %v, want zk.ErrInvalidPath", err)
	}
	for _, p := range []string{env.Base() + "/trailing", dir, lockDirOf(dir)} {
		if ok, _, err := conn.Exists(p); ok || err != nil {
			t.Errorf("bad input created %s: %v, %v", p, ok, err)
		}
	}
}

// A Release that cannot confirm its Delete during a partition leaves the
// release pending: the lease is no longer held (no token), nor silently
// forgotten — its Delete, still queued, applies once the partition heals,
// the waiter gets the lease, and a second Release confirms.
func testFailedReleaseIsPending(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/sem"
	connA, _ := env.Connect(t, 10*time.Second)
	rawB, _ := env.Connect(t, sessionTimeout)
	connB := countRequests(rawB)
	a := recipe.NewSemaphore(connA, dir, 1, recipe.WithStatePollInterval(20*time.Millisecond))
	b := recipe.NewSemaphore(connB, dir, 1)
	lease := mustAcquire(t, a)
	bDone := acquireAsync(testCtx(t), b)
	watchingLeases(t, connB, dir)

	zktest.Require(t, p.Partition(connA))
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	err := lease.ReleaseContext(ctx)
	cancel()
	if err == nil {
		t.Fatal("ReleaseContext during a partition succeeded")
	}
	if lease.State() != recipe.MutexReleasing || lease.Token() != 0 {
		t.Fatalf("after a failed Release: state %v token %d, want releasing, no token", lease.State(), lease.Token())
	}
	select {
	case <-lease.Lost():
		t.Fatal("Lost() closed while the release is pending")
	default:
	}
	stillWaiting(t, "B's Acquire while A's release is pending", bDone)

	zktest.Require(t, p.Heal(connA))
	next := acquiredIn(t, "B's Acquire once A's release went through", bDone)
	eventually(t, "A's pending release ended", func() bool { return lease.State() == recipe.MutexUnlocked })
	if err := lease.Release(); err != nil {
		t.Fatalf("Release after the pending release ended: %v", err)
	}
	mustRelease(t, next)
}

// On a closed Conn, Acquire and TryAcquire fail at once with
// zk.ErrClosing, a held lease is lost, and no goroutine is left.
func testSemaphoreClosedConn(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	conn, _ := env.Connect(t, sessionTimeout)
	before := mutexGoroutines()
	s := recipe.NewSemaphore(conn, dir, 2)
	lease := mustAcquire(t, s)
	conn.Close()
	select {
	case <-lease.Lost():
	case <-time.After(time.Minute):
		t.Fatal("Lost() not closed after the Conn was closed")
	}
	start := time.Now()
	if err := lease.Release(); !errors.Is(err, recipe.ErrLockLost) {
		t.Errorf("Release on a closed Conn = %v, want ErrLockLost", err)
	}
	if _, err := s.Acquire(testCtx(t)); !errors.Is(err, zk.ErrClosing) {
		t.Errorf("Acquire on a closed Conn = %v, want zk.ErrClosing", err)
	}
	if _, ok, err := recipe.NewSemaphore(conn, dir, 2).TryAcquire(testCtx(t)); ok || !errors.Is(err, zk.ErrClosing) {
		t.Errorf("TryAcquire on a closed Conn = %v, %v, want zk.ErrClosing", ok, err)
	}
	// The retry timeout is 15s: a closed Conn retried as a lost one would
	// take that long at least.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("calls on a closed Conn took %v", d)
	}
	leasesSettle(t, admin, dir, 0)
	eventually(t, "no goroutine left", func() bool { return mutexGoroutines() == before })
}

// ghostLeaseConn makes the first lease create look like CURATOR-604: the
// node is made with our GUID but owned by another session (as a node left
// by our expired session is), and the reply is lost.
type ghostLeaseConn struct {
	recipe.Conn
	other zktest.Conn
	dir   string
	ghost atomic.Value // path of the ghost
}

func (g *ghostLeaseConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags == zk.FlagEphemeral && strings.HasPrefix(path, g.dir+"/") && g.ghost.Load() == nil {
		ghost, err := g.other.Create(path, data, flags, acl)
		if err != nil {
			return "", err
		}
		g.ghost.Store(ghost)
		return "", zk.ErrConnectionClosed
	}
	return g.Conn.Create(path, data, flags, acl)
}

// A lease node found after a lost reply is ours only if the current session
// owns it: a node of another session with our GUID is deleted, and the
// lease is taken with a node of our own.
func testGhostLeaseNotAdopted(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	conn, _ := env.Connect(t, sessionTimeout)
	other, _ := env.Connect(t, sessionTimeout)
	g := &ghostLeaseConn{Conn: conn, other: other, dir: dir}
	lease := mustAcquire(t, recipe.NewSemaphore(g, dir, 1))
	ghost, _ := g.ghost.Load().(string)
	if ghost == "" {
		t.Fatal("no ghost was made")
	}
	if lease.Node() == ghost {
		t.Fatalf("the lease was taken on the ghost %s", ghost)
	}
	got := leasesOf(t, conn, dir)
	ok, stat, err := conn.Exists(lease.Node())
	if !slices.Equal(got, []string{baseName(lease.Node())}) || err != nil || !ok || stat.EphemeralOwner != conn.SessionID() {
		t.Fatalf("leases %v (ghost %s); lease node: exists %v, %+v, %v", got, ghost, ok, stat, err)
	}
	mustRelease(t, lease)
}

// The requests a Semaphore sends, as its documentation gives them:
// uncontended, the lock's 3, the lease's create, listing and GetW, the
// lock's Delete (and one read of the directory on the handle's first
// acquisition); Release 1; a TryAcquire 3 to look and 3 to take.
func testSemaphoreTraffic(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/sem"
	raw, _ := env.Connect(t, sessionTimeout)
	c := countRequests(raw)
	s := recipe.NewSemaphore(c, dir, 2)
	mustRelease(t, mustAcquire(t, s)) // makes the directories
	for _, step := range []struct {
		what string
		do   func() *recipe.Lease
		want int64
	}{
		{"Acquire", func() *recipe.Lease { return mustAcquire(t, s) }, 7},
		{"TryAcquire", func() *recipe.Lease {
			l, ok, err := s.TryAcquire(testCtx(t))
			if !ok || err != nil {
				t.Fatalf("TryAcquire = %v, %v", ok, err)
			}
			return l
		}, 6},
	} {
		before := c.Requests.Load()
		l := step.do()
		if got := c.Requests.Load() - before; got != step.want {
			t.Errorf("%s sent %d requests, want %d", step.what, got, step.want)
		}
		before = c.Requests.Load()
		mustRelease(t, l)
		if got := c.Requests.Load() - before; got != 1 {
			t.Errorf("Release sent %d requests, want 1", got)
		}
	}
	fresh := countRequests(raw)
	mustRelease(t, mustAcquire(t, recipe.NewSemaphore(fresh, dir, 2)))
	if got := fresh.Requests.Load(); got != 9 {
		t.Errorf("a new handle's first Acquire and Release sent %d requests, want 9 (a read of the directory more)", got)
	}
}
