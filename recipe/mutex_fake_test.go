package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// TestMutexFake runs the Mutex scenarios on the fake, each in a synctest
// bubble: time is virtual, and the bubble fails the test if any goroutine
// is left behind.
func TestMutexFake(t *testing.T) {
	runMutexScenarios(t, fake.NewTarget())
}

// The rest needs the fake's own controls: lost replies, crashes and the
// server's count of watch events per session.

func fakeServer(t *testing.T, env zktest.Env) *zkfake.Server {
	t.Helper()
	srv, ok := fake.ServerOf(env)
	if !ok {
		t.Fatal("not a fake environment")
	}
	return srv
}

func runFake(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	fake.NewTarget(zkfake.WithSeed(1)).Run(t, name, body)
}

// The create is applied but its reply is lost: the Mutex finds its node by
// GUID and holds with that one node, without waiting on its own ghost.
func TestMutexFakeLostCreateReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		name := "request lost"
		if applied {
			name = "reply lost, node created"
		}
		runFake(t, name, func(t *testing.T, env zktest.Env) {
			srv := fakeServer(t, env)
			dir := env.Base() + "/lock"
			conn, _ := env.Connect(t, sessionTimeout)
			other, _ := env.Connect(t, sessionTimeout)
			remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: dir + "/_c_", Nth: 1, Applied: applied})
			defer remove()
			m := recipe.NewMutex(conn, dir)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := m.Lock(ctx); err != nil {
				t.Fatalf("Lock with a lost create reply: %v", err)
			}
			ids := contenders(t, conn, dir)
			if len(ids) != 1 {
				t.Fatalf("contenders %v, want the one node", ids)
			}
			if got := srv.Ephemerals(conn.SessionID()); !slices.Equal(got, []string{dir + "/" + ids[0]}) {
				t.Fatalf("session's ephemerals %v", got)
			}
			if ok, _ := recipe.NewMutex(other, dir).TryLock(ctx); ok {
				t.Fatal("another handle got the lock while it is held")
			}
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			if ids := contenders(t, conn, dir); len(ids) != 0 {
				t.Fatalf("left behind: %v", ids)
			}
		})
	}
}

// A lost reply to Unlock's Delete: the node is gone when Unlock retries,
// which is a release, not a loss.
func TestMutexFakeLostDeleteReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		runFake(t, map[bool]string{true: "applied", false: "not applied"}[applied], func(t *testing.T, env zktest.Env) {
			srv := fakeServer(t, env)
			dir := env.Base() + "/lock"
			conn, _ := env.Connect(t, sessionTimeout)
			m := recipe.NewMutex(conn, dir)
			if err := m.Lock(context.Background()); err != nil {
				t.Fatal(err)
			}
			remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "delete", PathPrefix: dir + "/", Nth: 1, Applied: applied})
			defer remove()
			if err := m.Unlock(); err != nil {
				t.Fatalf("Unlock with a lost delete reply: %v", err)
			}
			if m.State() != recipe.MutexUnlocked {
				t.Fatalf("state %v", m.State())
			}
			if ids := contenders(t, conn, dir); len(ids) != 0 {
				t.Fatalf("left behind: %v", ids)
			}
		})
	}
}

// A waiter in the middle of the queue crashes: its session expires after
// the timeout and the waiter behind it must look again.
func TestMutexFakeWaiterCrashes(t *testing.T) {
	runFake(t, "crash", func(t *testing.T, env zktest.Env) {
		middleGoes(t, env, func(t *testing.T, c zktest.Conn) { c.(*zkfake.Conn).Crash() })
	})
}

// The holder's process freezes (a long GC pause): its session expires, the
// next waiter gets the lock, and when the holder thaws its Lost() closes.
func TestMutexFakeHolderPaused(t *testing.T) {
	runFake(t, "pause", func(t *testing.T, env zktest.Env) {
		dir := env.Base() + "/lock"
		connA, _ := env.Connect(t, sessionTimeout)
		connB, _ := env.Connect(t, sessionTimeout)
		a, b := recipe.NewMutex(connA, dir), recipe.NewMutex(connB, dir)
		if err := a.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		bDone := lockAsync(context.Background(), b)
		connA.(*zkfake.Conn).Pause()
		if err := mustWait(t, "B's Lock", bDone); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Lost():
			t.Fatal("a frozen client cannot know yet")
		default:
		}
		connA.(*zkfake.Conn).Resume()
		select {
		case <-a.Lost():
		case <-time.After(time.Minute):
			t.Fatal("A's Lost() not closed after it thawed into an expired session")
		}
		if err := a.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
			t.Fatalf("A.Unlock() = %v, want ErrLockLost", err)
		}
		if a.Token() >= b.Token() {
			t.Fatalf("stale holder's token %d not below the new holder's %d", a.Token(), b.Token())
		}
		if err := b.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// The hold is lost while Unlock waits for its Delete, and then Unlock's
// deadline passes: nothing is left to release, so Unlock reports the loss
// and the handle is unlocked. It used to leave a pending release whose
// state was MutexLost, which a failed Unlock never reports.
func TestMutexFakeLostWhileUnlocking(t *testing.T) {
	runFake(t, "lost while unlocking", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/lock"
		conn, _ := env.Connect(t, sessionTimeout)
		slow := &slowDelete{Conn: conn, release: make(chan struct{})}
		states := &stateLog{}
		m := recipe.NewMutex(slow, dir, recipe.WithStateListener(states.add))
		if err := m.Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		unlocked := make(chan error, 1)
		go func() { unlocked <- m.UnlockContext(ctx) }()
		synctest.Wait() // Unlock waits for its Delete
		srv.Expire(conn.SessionID())
		eventually(t, "the hold lost", func() bool { return m.State() == recipe.MutexLost })
		if err := mustWait(t, "UnlockContext", unlocked); !errors.Is(err, recipe.ErrLockLost) {
			t.Errorf("UnlockContext = %v, want ErrLockLost", err)
		}
		close(slow.release)
		if s := m.State(); s != recipe.MutexUnlocked {
			t.Errorf("state after the Unlock %v, want unlocked", s)
		}
		states.want(t, recipe.MutexHeld, recipe.MutexLost, recipe.MutexUnlocked)
	})
}

// A handle's holds share its channels, one hold after another: the word
// that stops a hold's watching and the answer of a release's Delete. Here
// the first hold's watching ends by itself (the session expires) while
// UnlockContext waits for a Delete that it then abandons at its deadline;
// the Delete answers later. The handle's next holds must be watched and
// released as the first: a stop word left over would end a new hold's
// watching at once, and its loss would never be seen; a late answer
// taken for a new release's would report that release as a loss.
func TestMutexFakeHandleReusedAfterLossAndAbandonedDelete(t *testing.T) {
	runFake(t, "reused handle", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/lock"
		conn, _ := env.Connect(t, sessionTimeout)
		other, _ := env.Connect(t, sessionTimeout)
		slow := &slowDelete{Conn: conn, release: make(chan struct{})}
		m := recipe.NewMutex(slow, dir)
		if err := m.Lock(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		unlocked := make(chan error, 1)
		go func() { unlocked <- m.UnlockContext(ctx) }()
		synctest.Wait() // UnlockContext waits for its Delete
		srv.Expire(conn.SessionID())
		if err := mustWait(t, "UnlockContext", unlocked); !errors.Is(err, recipe.ErrLockLost) {
			t.Fatalf("UnlockContext = %v, want ErrLockLost", err)
		}
		close(slow.release) // the abandoned Delete goes through and answers
		synctest.Wait()

		for round := range 3 {
			// A hold whose node someone else deletes is lost, and Lost says so.
			if err := m.Lock(testCtx(t)); err != nil {
				t.Fatalf("round %d: Lock: %v", round, err)
			}
			for _, name := range settles(t, other, dir, 1) {
				if err := other.Delete(dir+"/"+name, -1); err != nil {
					t.Fatalf("round %d: deleting the holder's node: %v", round, err)
				}
			}
			select {
			case <-m.Lost():
			case <-time.After(time.Minute):
				t.Fatalf("round %d: the hold's loss was never seen", round)
			}
			if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
				t.Fatalf("round %d: Unlock of a lost hold = %v, want ErrLockLost", round, err)
			}
			// A hold released by its Unlock is released.
			if err := m.Lock(testCtx(t)); err != nil {
				t.Fatalf("round %d: Lock: %v", round, err)
			}
			if err := m.Unlock(); err != nil {
				t.Fatalf("round %d: Unlock = %v, want nil", round, err)
			}
			settles(t, other, dir, 0)
		}
	})
}

// slowDelete is a Conn whose Deletes wait until release is closed.
type slowDelete struct {
	recipe.Conn
	release chan struct{}
}

func (c *slowDelete) Delete(path string, version int32) error {
	<-c.release
	return c.Conn.Delete(path, version)
}

// Herd check with the server's own counters: a release delivers one watch
// event to the next waiter's session and none to any other waiter. The
// releasing session gets one as well, from the watch on its own node that
// tells a holder its node is gone.
func TestMutexFakeOneWatchEventPerRelease(t *testing.T) {
	runFake(t, "herd", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/lock"
		const waiters = 20
		conns := make([]*countingConn, waiters+1)
		handles := make([]*recipe.Mutex, waiters+1)
		results := make([]<-chan error, waiters+1)
		for i := range conns {
			raw, _ := env.Connect(t, sessionTimeout)
			conns[i] = countRequests(raw)
			handles[i] = recipe.NewMutex(conns[i], dir)
			results[i] = lockAsync(context.Background(), handles[i])
			eventually(t, "queued", func() bool { return len(contenders(t, conns[0], dir)) == i+1 })
			if i > 0 {
				pred := dir + "/" + contenders(t, conns[0], dir)[i-1]
				eventually(t, "watching the predecessor", func() bool { return conns[i].watching(pred) })
			}
		}
		if err := mustWait(t, "first Lock", results[0]); err != nil {
			t.Fatal(err)
		}
		delivered := func() []int {
			counts := make([]int, len(conns))
			for i, c := range conns {
				counts[i] = srv.DeliveredEvents(c.SessionID())
			}
			return counts
		}
		for i := range waiters {
			before, totalBefore := delivered(), srv.TotalDeliveredEvents()
			if err := handles[i].Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := mustWait(t, "next Lock", results[i+1]); err != nil {
				t.Fatal(err)
			}
			after := delivered()
			for j := range conns {
				want := 0
				if j == i || j == i+1 {
					want = 1 // the releaser's own-node watch; the successor's wakeup
				}
				if got := after[j] - before[j]; got != want {
					t.Fatalf("release %d: session %d got %d watch events, want %d", i, j, got, want)
				}
			}
			if got := srv.TotalDeliveredEvents() - totalBefore; got != 2 {
				t.Fatalf("release %d: %d watch events in all, want 2", i, got)
			}
		}
		if err := handles[waiters].Unlock(); err != nil {
			t.Fatal(err)
		}
		if n := srv.TotalWatches(); n != 0 {
			t.Errorf("%d watches left on the server", n)
		}
	})
}

// Many contenders while every tenth request or reply is lost: still no
// overlap, every Lock succeeds, nothing is left behind.
func TestMutexFakeRandomReplyLoss(t *testing.T) {
	runFake(t, "chaos", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/lock"
		const handles, rounds = 10, 10
		conns := make([]zktest.Conn, handles)
		for i := range conns {
			conns[i], _ = env.Connect(t, sessionTimeout)
		}
		srv.LoseRandomReplies(0.1)
		var inside, overlaps, total atomic.Int64
		var wg sync.WaitGroup
		for i := range handles {
			m := recipe.NewMutex(conns[i], dir)
			wg.Go(func() {
				for range rounds {
					if err := m.Lock(context.Background()); err != nil {
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
			})
		}
		wg.Wait()
		srv.LoseRandomReplies(0)
		if overlaps.Load() != 0 {
			t.Errorf("%d overlapping holds", overlaps.Load())
		}
		if total.Load() != handles*rounds {
			t.Errorf("%d acquisitions, want %d", total.Load(), handles*rounds)
		}
		if ids := contenders(t, conns[0], dir); len(ids) != 0 {
			t.Errorf("left behind: %v", ids)
		}
		lost := 0
		for _, r := range srv.Log() {
			if r.Kind == zkfake.RecordFault && strings.HasSuffix(r.Result, " lost") {
				lost++
			}
		}
		if lost == 0 {
			t.Error("no request or reply was lost: the test tested nothing")
		}
		t.Logf("%d requests or replies lost", lost)
	})
}

// ZooKeeper's sequence counter is a signed int32 that wraps: past
// 2147483647 names read "-2147483648", and from -999999999 on
// "-000000005". Contenders queued across the wrap get the lock in the order
// they queued, and each finds its own node. (Reading the last ten
// characters as digits used to put "-2147483647" first, so the newest
// contender took the lock while another held it; and a "-000000005" node
// was nobody's, not even its owner's, who queued again and again.)
//
// A node name that ends in a letter ("lock") makes past the wrap names
// that read like positive numbers ("…lock-2147483648"); the Mutex reads its
// own kind of names by their prefix, sign and all.
func TestMutexFakeSequenceWrap(t *testing.T) {
	for _, nodeName := range []string{recipe.DefaultNodeName, "lock-", "lock"} {
		for _, start := range []int32{math.MaxInt32 - 1, -1000000001, -2} {
			testSequenceWrap(t, nodeName, start)
		}
	}
}

func testSequenceWrap(t *testing.T, nodeName string, start int32) {
	{
		runFake(t, fmt.Sprintf("%s from %d", nodeName, start), func(t *testing.T, env zktest.Env) {
			srv := fakeServer(t, env)
			dir := env.Base() + "/lock"
			admin, _ := env.Connect(t, sessionTimeout)
			if _, err := admin.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if err := srv.SetSequence(dir, start); err != nil {
				t.Fatal(err)
			}
			const n = 4
			handles := make([]*recipe.Mutex, n)
			done := make([]<-chan error, n)
			for i := range handles {
				conn, _ := env.Connect(t, sessionTimeout)
				handles[i] = recipe.NewMutex(conn, dir, recipe.WithNodeName(nodeName))
				done[i] = lockAsync(testCtx(t), handles[i])
				queued(t, admin, dir, i+1)
			}
			for i, m := range handles {
				if err := mustWait(t, fmt.Sprintf("handle %d's Lock", i), done[i]); err != nil {
					t.Fatalf("handle %d: %v", i, err)
				}
				for j := i + 1; j < n; j++ {
					stillBlocked(t, fmt.Sprintf("handle %d's Lock while handle %d holds", j, i), done[j])
				}
				queued(t, admin, dir, n-i)
				if err := m.Unlock(); err != nil {
					t.Fatal(err)
				}
			}
			queued(t, admin, dir, 0)
		})
	}
}

// queued waits until dir has want children. Contenders reads names by
// their end alone, and "…lock-1000000000" past the wrap is a name it
// cannot tell from a positive number: the wrap test counts children.
func queued(t *testing.T, conn zktest.Conn, dir string, want int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d children of %s", want, dir), func() bool {
		children, _, err := conn.Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(children) == want
	})
}

// A create applied on the leader whose reply was lost can show up later
// on a follower the client reconnects to: the client never saw the write's
// zxid, so a lagging follower takes it. A Lock that gives up after such a
// create keeps the GUID and sweeps for it after a sync, so that the node,
// once it shows, does not sit in the queue for the rest of the session.
// (It used to be forgotten as soon as one listing lacked it, and the late
// node blocked every other contender for good.)
func TestMutexFakeLateVisibleCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSeed(1), zkfake.WithEnsemble(3))
		defer srv.Close()
		dir := "/lock"
		connA, _, err := srv.Connect(sessionTimeout, zkfake.WithMember(0))
		if err != nil {
			t.Fatal(err)
		}
		defer connA.Close()
		connB, _, err := srv.Connect(sessionTimeout, zkfake.WithMember(1))
		if err != nil {
			t.Fatal(err)
		}
		defer connB.Close()
		if _, err := connA.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		srv.SetLagging(2, true)
		remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: dir + "/_c_", Nth: 1, Applied: true})
		connA.ReconnectTo(2)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		err = recipe.NewMutex(connA, dir).Lock(ctx)
		cancel()
		remove()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock after a lost create reply, on a lagging follower: %v, want the deadline", err)
		}
		if got := srv.Ephemerals(connA.SessionID()); len(got) != 1 {
			t.Fatalf("A's session owns %v, want the one node its lost create made", got)
		}
		// The sweep in the background finds the node after a sync, and
		// deletes it.
		time.Sleep(time.Second)
		srv.SetLagging(2, false)
		if got := srv.Ephemerals(connA.SessionID()); len(got) != 0 {
			t.Fatalf("A's session still owns %v: the late node was never swept", got)
		}
		b := recipe.NewMutex(connB, dir)
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Lock(ctx); err != nil {
			t.Fatalf("B's Lock behind the late node: %v", err)
		}
		if err := b.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// TryLock on a lagging follower looks at the queue after a sync: the
// follower may still list a node that is gone, and TryLock would report a
// lock taken that was free for the whole call. (Found by the fuzz harness.)
func TestMutexFakeTryLockOnLaggingFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSeed(1), zkfake.WithEnsemble(3))
		defer srv.Close()
		holderConn, _, err := srv.Connect(sessionTimeout, zkfake.WithMember(0))
		if err != nil {
			t.Fatal(err)
		}
		defer holderConn.Close()
		tryConn, _, err := srv.Connect(sessionTimeout, zkfake.WithMember(2))
		if err != nil {
			t.Fatal(err)
		}
		defer tryConn.Close()
		holder := recipe.NewMutex(holderConn, "/lock")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := tryConn.Children("/lock"); err != nil { // member 2 has seen the holder's node
			t.Fatal(err)
		}
		srv.SetLagging(2, true)
		if err := holder.Unlock(); err != nil {
			t.Fatal(err)
		}
		m := recipe.NewMutex(tryConn, "/lock")
		ok, err := m.TryLock(ctx)
		if err != nil || !ok {
			t.Fatalf("TryLock on a free lock, from a lagging follower: %v, %v; want true", ok, err)
		}
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// slowRearmConn holds every GetW of node, once armed, until release is
// closed: a call made as the connection drops waits for go-zookeeper's
// next reconnect round.
type slowRearmConn struct {
	recipe.Conn
	node    string
	armed   atomic.Bool
	release chan struct{}
}

func (c *slowRearmConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if path == c.node && c.armed.Load() {
		<-c.release
	}
	return c.Conn.GetW(path)
}

// The holder's node changes, so the Mutex sets its watch again; that call
// hangs as the connection drops. The hold must still go to suspended: a
// holder whose connection is down cannot know that its session lives.
// (The watching goroutine made the call itself, and polled the connection
// only once it returned: the hold said held throughout.)
func TestMutexFakeSuspendedWhileRearming(t *testing.T) {
	runFake(t, "rearm hangs", func(t *testing.T, env zktest.Env) {
		dir := env.Base() + "/lock"
		conn, _ := env.Connect(t, sessionTimeout)
		admin, _ := env.Connect(t, sessionTimeout)
		slow := &slowRearmConn{Conn: conn, release: make(chan struct{})}
		m := recipe.NewMutex(slow, dir)
		if err := m.Lock(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		ids := contenders(t, admin, dir)
		slow.node = dir + "/" + ids[0]
		slow.armed.Store(true)
		if _, err := admin.Set(slow.node, []byte("touched"), -1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the Mutex hears the change, and sets its watch again: that call hangs
		conn.(*zkfake.Conn).Partition()
		time.Sleep(3 * time.Second) // the client notices the cut at two thirds of its 4s
		synctest.Wait()
		if conn.State() == zk.StateHasSession {
			t.Fatal("the client has not noticed the partition")
		}
		if st := m.State(); st != recipe.MutexSuspended {
			t.Fatalf("hold's state with the connection down and a call under way: %v, want suspended", st)
		}
		close(slow.release)
		conn.(*zkfake.Conn).Heal()
		time.Sleep(2 * time.Second)
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}
