package recipe_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// TestSemaphoreFake runs the Semaphore scenarios on the fake, each in a
// synctest bubble: time is virtual, and the bubble fails the test if any
// goroutine is left behind.
func TestSemaphoreFake(t *testing.T) {
	runSemaphoreScenarios(t, fake.NewTarget())
}

// The rest needs the fake's own controls: the server's count of watches
// and of watch events per session, lost replies, paused processes.

// Herd check with the server's own counters. Only the holder of the
// acquirers' lock watches the leases: one watch on the directory however
// many wait. A release delivers one event to the releaser (its own node's
// watch) and one to that holder, which takes the lease and lets go of the
// lock: one event to itself (its lock node's watch) and one to the next in
// the lock's line. Nobody else hears anything.
func TestSemaphoreFakeOneWatchEventPerRelease(t *testing.T) {
	runFake(t, "herd", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/sem"
		const n, waiters = 2, 8
		admin, _ := env.Connect(t, sessionTimeout)
		conns := make([]*countingConn, n+waiters)
		results := make([]<-chan acquired, n+waiters)
		leases := make([]*recipe.Lease, n+waiters)
		for i := range conns {
			raw, _ := env.Connect(t, sessionTimeout)
			conns[i] = countRequests(raw)
			s := recipe.NewSemaphore(conns[i], dir, n)
			if i < n {
				leases[i] = mustAcquire(t, s)
				continue
			}
			results[i] = acquireAsync(context.Background(), s)
			settles(t, admin, lockDirOf(dir), i-n+1)
			synctest.Wait()
		}
		if got := srv.WatchCount(dir); got != 1 {
			t.Fatalf("%d watches on the leases with %d acquirers waiting, want 1", got, waiters)
		}
		delivered := func() []int {
			counts := make([]int, len(conns))
			for i, c := range conns {
				counts[i] = srv.DeliveredEvents(c.SessionID())
			}
			return counts
		}
		for k := range waiters {
			releaser, woken := k, n+k
			before, totalBefore := delivered(), srv.TotalDeliveredEvents()
			mustRelease(t, leases[releaser])
			leases[woken] = acquiredIn(t, "the next lease", results[woken])
			synctest.Wait() // the next in line parks
			after := delivered()
			for j := range conns {
				want := 0
				switch j {
				case releaser:
					want = 1 // its own lease node's watch
				case woken:
					want = 2 // the leases' change; its own lock node's watch
				case woken + 1:
					want = 1 // its predecessor in the lock's line
				}
				if got := after[j] - before[j]; got != want {
					t.Fatalf("release %d: session %d got %d watch events, want %d", k, j, got, want)
				}
			}
			if got, want := srv.TotalDeliveredEvents()-totalBefore, 3+min(1, waiters-k-1); got != want {
				t.Fatalf("release %d: %d watch events in all, want %d", k, got, want)
			}
			if got, want := srv.WatchCount(dir), min(1, waiters-k-1); got != want {
				t.Fatalf("release %d: %d watches on the leases, want %d", k, got, want)
			}
		}
		for _, l := range leases[waiters:] {
			mustRelease(t, l)
		}
		if n := srv.TotalWatches(); n != 0 {
			t.Errorf("%d watches left on the server", n)
		}
	})
}

// A lease create whose reply is lost — the node made or not — ends in one
// lease node, found again by its name.
func TestSemaphoreFakeLostCreateReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		runFake(t, map[bool]string{true: "applied", false: "not applied"}[applied], func(t *testing.T, env zktest.Env) {
			srv := fakeServer(t, env)
			dir := env.Base() + "/sem"
			conn, _ := env.Connect(t, sessionTimeout)
			remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: dir + "/", Nth: 1, Applied: applied})
			defer remove()
			lease := mustAcquire(t, recipe.NewSemaphore(conn, dir, 1))
			if got := srv.Ephemerals(conn.SessionID()); !slices.Equal(got, []string{lease.Node()}) {
				t.Fatalf("the session's ephemerals %v, want only the lease %s", got, lease.Node())
			}
			mustRelease(t, lease)
			if got := srv.Ephemerals(conn.SessionID()); len(got) != 0 {
				t.Fatalf("left behind: %v", got)
			}
		})
	}
}

// A lost reply to Release's Delete: the node is gone when Release retries,
// which is a release, not a loss.
func TestSemaphoreFakeLostDeleteReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		runFake(t, map[bool]string{true: "applied", false: "not applied"}[applied], func(t *testing.T, env zktest.Env) {
			srv := fakeServer(t, env)
			dir := env.Base() + "/sem"
			conn, _ := env.Connect(t, sessionTimeout)
			lease := mustAcquire(t, recipe.NewSemaphore(conn, dir, 1))
			remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "delete", PathPrefix: dir + "/", Nth: 1, Applied: applied})
			defer remove()
			mustRelease(t, lease)
			if lease.State() != recipe.MutexUnlocked {
				t.Fatalf("state %v", lease.State())
			}
			if got := leasesOf(t, conn, dir); len(got) != 0 {
				t.Fatalf("left behind: %v", got)
			}
		})
	}
}

// The holder's process freezes (a long GC pause): its session expires, the
// waiter gets the lease, and when the holder thaws its Lost() closes.
func TestSemaphoreFakeHolderPaused(t *testing.T) {
	runFake(t, "pause", func(t *testing.T, env zktest.Env) {
		dir := env.Base() + "/sem"
		connA, _ := env.Connect(t, sessionTimeout)
		connB, _ := env.Connect(t, sessionTimeout)
		lease := mustAcquire(t, recipe.NewSemaphore(connA, dir, 1))
		bDone := acquireAsync(context.Background(), recipe.NewSemaphore(connB, dir, 1))
		connA.(*zkfake.Conn).Pause()
		next := acquiredIn(t, "B's Acquire", bDone)
		select {
		case <-lease.Lost():
			t.Fatal("a frozen client cannot know yet")
		default:
		}
		connA.(*zkfake.Conn).Resume()
		select {
		case <-lease.Lost():
		case <-time.After(time.Minute):
			t.Fatal("A's Lost() not closed after it thawed into an expired session")
		}
		if err := lease.Release(); !errors.Is(err, recipe.ErrLockLost) {
			t.Fatalf("A's Release() = %v, want ErrLockLost", err)
		}
		mustRelease(t, next)
	})
}

// Many acquirers while every tenth request or reply is lost: never more
// than N leases held, every Acquire succeeds, nothing is left behind.
func TestSemaphoreFakeRandomReplyLoss(t *testing.T) {
	runFake(t, "chaos", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/sem"
		const n, handles, rounds = 3, 10, 10
		conns := make([]zktest.Conn, handles)
		for i := range conns {
			conns[i], _ = env.Connect(t, sessionTimeout)
		}
		srv.LoseRandomReplies(0.1)
		var inside, most, total atomic.Int64
		var wg sync.WaitGroup
		for i := range handles {
			s := recipe.NewSemaphore(conns[i], dir, n)
			wg.Go(func() {
				for range rounds {
					l, err := s.Acquire(context.Background())
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					now := inside.Add(1)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					total.Add(1)
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := l.Release(); err != nil {
						t.Errorf("Release: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		srv.LoseRandomReplies(0)
		if got := most.Load(); got != n {
			t.Errorf("at most %d leases held at once, want %d", got, n)
		}
		if total.Load() != handles*rounds {
			t.Errorf("%d acquisitions, want %d", total.Load(), handles*rounds)
		}
		if got := leasesOf(t, conns[0], dir); len(got) != 0 {
			t.Errorf("leases left behind: %v", got)
		}
		if got := contenders(t, conns[0], lockDirOf(dir)); len(got) != 0 {
			t.Errorf("lock nodes left behind: %v", got)
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
