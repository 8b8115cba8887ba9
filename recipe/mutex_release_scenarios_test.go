package recipe_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Two ways a release used to go wrong, each in a state a short outage or a
// prompt watch event never reaches.

// quorumOutage is how long the ensemble stays without a quorum in
// testFailedUnlockOutlivesQuorumLoss: longer than the minute after which
// the background deletion of a failed release used to give up.
const quorumOutage = 75 * time.Second

// An Unlock that cannot reach the server while the ensemble has lost its
// quorum fails, and its node is deleted in the background. ZooKeeper
// expires no session without a quorum, so the session resumes when the
// quorum comes back, minutes later maybe, with its node still at the head
// of the queue: the background deletion must still be at work then, or
// every other contender waits for ever. (It gave up after a minute.)
func testFailedUnlockOutlivesQuorumLoss(t *testing.T, env zktest.Env) {
	m, ok := env.(zktest.Members)
	if !ok || m.Members() < 3 {
		t.Skip("the environment cannot stop ensemble members")
	}
	dir := env.Base() + "/lock"
	a, b, connB, bDone := holderAndWaiter(t, env, dir)

	// Stop every member but the clients' home: no quorum is left.
	var stopped []int
	for i := range m.Members() {
		if i != m.Home() {
			zktest.Require(t, m.StopMember(i))
			stopped = append(stopped, i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := a.UnlockContext(ctx)
	cancel()
	if err == nil {
		t.Fatal("UnlockContext without a quorum succeeded")
	}
	time.Sleep(quorumOutage)
	for _, i := range stopped {
		zktest.Require(t, m.StartMember(i))
	}
	if err := mustWait(t, "B's Lock once the quorum is back", bDone); err != nil {
		t.Fatalf("B's Lock: %v", err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	settles(t, connB, dir, 0)
}

// lateEventConn holds back the watch events of the Mutex's own node from
// the recipe until its first Delete: go-zookeeper hands events to a
// channel that the recipe's goroutine reads when it is scheduled, so an
// event may reach it after the reply to a later request of the client.
type lateEventConn struct {
	recipe.Conn
	real      bool
	held      chan struct{} // closed to let the events through
	mu        sync.Mutex
	node      string // the node whose events are held back: the first sequential one made
	delivered bool
}

func (l *lateEventConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	node, err := l.Conn.Create(path, data, flags, acl)
	l.mu.Lock()
	if err == nil && flags&zk.FlagSequence != 0 && l.node == "" {
		l.node = node
	}
	l.mu.Unlock()
	return node, err
}

func (l *lateEventConn) heldNode() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

func (l *lateEventConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	data, stat, watch, err := l.Conn.GetW(path)
	return data, stat, l.late(path, watch), err
}

// late forwards the events of watch once they are let through, if path is
// the held node.
func (l *lateEventConn) late(path string, watch <-chan zk.Event) <-chan zk.Event {
	if path != l.heldNode() || watch == nil {
		return watch
	}
	out := make(chan zk.Event, 1)
	go func() {
		defer close(out)
		ev, ok := <-watch
		if !ok {
			return
		}
		<-l.held
		out <- ev
	}()
	return out
}

// Delete lets the held events through and gives the recipe time to read
// them before it sends the Delete: the deletion that another session made
// before this Unlock began reaches the recipe only now.
func (l *lateEventConn) Delete(path string, version int32) error {
	l.mu.Lock()
	first := path == l.node && l.node != "" && !l.delivered
	l.delivered = l.delivered || first
	l.mu.Unlock()
	if first {
		close(l.held)
		if l.real {
			time.Sleep(100 * time.Millisecond)
		} else {
			synctest.Wait()
		}
	}
	return l.Conn.Delete(path, version)
}

// Another session deletes the holder's node, and the watch event that says
// so reaches the holder only once its Unlock has begun. Another contender
// may have held the lock since the deletion, inside the holder's critical
// section: Unlock must say so with ErrLockLost, not return nil as if the
// hold had lasted to its end. (It took an event seen during the release for
// its own Delete's work.)
func testUnlockAfterUnseenDeletion(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	admin, _ := env.Connect(t, sessionTimeout)
	l := &lateEventConn{Conn: conn, real: env.Real(), held: make(chan struct{})}
	m := recipe.NewMutex(l, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ids := contenders(t, admin, dir)
	if len(ids) != 1 || dir+"/"+ids[0] != l.heldNode() {
		t.Fatalf("contenders %v, want only the holder's %s", ids, l.heldNode())
	}
	if err := admin.Delete(l.heldNode(), -1); err != nil {
		t.Fatal(err)
	}
	// Another contender takes the lock while the holder, not told yet,
	// thinks it holds.
	other := recipe.NewMutex(admin, dir)
	if err := other.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Unlock of a hold whose node another session deleted = %v, want ErrLockLost", err)
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// slowDeleteConn holds back the watch events of the handle's node, and
// every Delete of it until deletes is closed; the first Delete answered
// then lets the events through. So an Unlock gives up on its Delete (its
// ctx ends) before the Delete has even reached the server, and the
// deletion that another session made before the Unlock began reaches the
// recipe only after that Delete's answer.
type slowDeleteConn struct {
	*lateEventConn
	deletes chan struct{}
	once    sync.Once
}

func (l *slowDeleteConn) Delete(path string, version int32) error {
	if path != l.heldNode() {
		return l.Conn.Delete(path, version)
	}
	<-l.deletes
	err := l.Conn.Delete(path, version)
	l.once.Do(func() { close(l.held) })
	return err
}

// An Unlock gives up (its ctx ends) while its Delete is still on the way;
// the node was deleted by another session before the Unlock began, and the
// watch event saying so reaches the recipe only after that Delete's answer
// ("no node"). The pending release must end as lost: no Delete of the
// handle's deleted the node. (It took the deletion seen while a release was
// pending for the work of its own Delete, and the next Unlock returned
// nil.)
func testAbandonedUnlockAfterUnseenDeletion(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	admin, _ := env.Connect(t, sessionTimeout)
	l := &slowDeleteConn{lateEventConn: &lateEventConn{Conn: conn, real: env.Real(), held: make(chan struct{})}, deletes: make(chan struct{})}
	m := recipe.NewMutex(l, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(l.heldNode(), -1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.UnlockContext(ctx); err == nil || errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("UnlockContext whose Delete is held up = %v, want an unconfirmed release", err)
	}
	close(l.deletes)
	if env.Real() {
		time.Sleep(500 * time.Millisecond)
	} else {
		synctest.Wait()
	}
	if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("Unlock of a hold whose node another session deleted before the release began = %v, want ErrLockLost", err)
	}
}

// stalledDeleteConn is lateEventConn whose Deletes of the held node after
// the first wait until stalled is closed: an Unlock bounded by a context
// gives up on the second one.
type stalledDeleteConn struct {
	*lateEventConn
	stalled chan struct{}
	deletes int
}

func (l *stalledDeleteConn) Delete(path string, version int32) error {
	l.mu.Lock()
	own := path == l.node
	if own {
		l.deletes++
	}
	second := own && l.deletes > 1
	l.mu.Unlock()
	if second {
		<-l.stalled
	}
	return l.lateEventConn.Delete(path, version)
}

// The holder closes its Conn, and then calls Unlock with a deadline, as a
// deferred Unlock after a Close does. Every request after Close fails at
// once with zk.ErrConnectionClosed, as one in flight when a connection
// drops does; the node's deletion (by the session's close) reaches the
// recipe only after the first Delete's answer, and the second Delete is
// still out when the deadline comes. Unlock must not return nil: the hold
// ended with the session, before Unlock began, and no Delete of the
// handle's reached the server. (It took the "connection closed" of a
// Delete on the closed Conn for one that may have deleted the node, and
// the deletion it then saw for that Delete's work.)
func testUnlockAfterOwnClose(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/lock"
	conn, _ := env.Connect(t, sessionTimeout)
	l := &stalledDeleteConn{lateEventConn: &lateEventConn{Conn: conn, real: env.Real(), held: make(chan struct{})}, stalled: make(chan struct{})}
	m := recipe.NewMutex(l, dir)
	if err := m.Lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.UnlockContext(ctx); err == nil {
		t.Fatal("UnlockContext after the holder closed its Conn returned nil: it claims a release that no Delete made")
	}
	// The release is left pending; the next Unlock ends it, and the
	// Conn shows itself closed: the hold was lost, not released.
	close(l.stalled)
	if err := m.Unlock(); !errors.Is(err, recipe.ErrLockLost) && !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("Unlock of the pending release after the holder closed its Conn = %v, want ErrLockLost or zk.ErrClosing", err)
	}
}
