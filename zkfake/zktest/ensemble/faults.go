package ensemble

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// memberSyncWait bounds how long Expire waits for each member to answer a
// sync after the expiry; a member that does not (stopped by a fault test) is
// skipped.
const memberSyncWait = 5 * time.Second

// Partition cuts conn off from the ensemble: its open TCP connection is
// closed, so the client turns StateDisconnected at once, and its attempts to
// reconnect are refused until Heal, as if no member were listening, so its
// requests fail with zk.ErrNoServer after a round of attempts. The session
// lives on in the ensemble until its timeout passes.
func (e *Env) Partition(conn zktest.Conn) error {
	l, err := e.linkOf(conn)
	if err == nil {
		l.partition(linkRefusing)
	}
	return err
}

// Heal lets conn reach the ensemble again. go-zookeeper reconnects at its
// own pace (within a second or so) and learns whether its session is still
// alive (StateHasSession, same session id) or expired (StateExpired, then a
// new session).
func (e *Env) Heal(conn zktest.Conn) error {
	l, err := e.linkOf(conn)
	if err == nil {
		l.heal()
	}
	return err
}

// Expire makes the ensemble expire conn's session. It cuts conn off —
// closing its connection and holding its reconnection attempt unanswered in
// the proxy — and waits until the ensemble has expired the session (seen as
// the deletion of an ephemeral probe znode the session created outside the
// scenario's base) and every reachable member has applied that; then it
// releases the held attempt. When Expire returns, the session's ephemerals
// are gone and other sessions' watches on them have fired; the client learns
// of the expiry as its released attempt reaches the member, right after
// (StateExpired), and go-zookeeper then opens a new session on the same
// *zk.Conn. Between Expire's start and StateExpired the client's event
// channel receives only StateDisconnected, StateConnecting and
// StateConnected.
//
// A partitioned conn is healed first and given its session back (or told
// that it expired) before a session is expired.
func (e *Env) Expire(conn zktest.Conn) error {
	l, err := e.linkOf(conn)
	if err != nil {
		return err
	}
	l.heal()
	if err := waitHasSession(conn, sessionWait); err != nil {
		return fmt.Errorf("Expire: %v", err)
	}
	probe, err := e.createProbe(conn)
	if err != nil {
		return fmt.Errorf("Expire: creating the probe node: %v", err)
	}
	l.partition(linkHolding)
	// ZooKeeper clamps the negotiated timeout to at most 20 ticks and
	// expires sessions on tick boundaries; the rest is slack for a busy
	// machine.
	wait := 30*e.target.tick + 10*time.Second
	if err := awaitDeleted(e.admin, probe, wait); err != nil {
		l.heal()
		return fmt.Errorf("Expire: session %#x was not expired: %v", conn.SessionID(), err)
	}
	err = e.syncMembers(probe)
	l.heal()
	return err
}

func (e *Env) linkOf(conn zktest.Conn) (*link, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.links[conn]
	if !ok {
		return nil, notOurs(conn)
	}
	return l, nil
}

// notOurs is the error of a fault asked of a session this Env did not open.
func notOurs(conn zktest.Conn) error {
	return fmt.Errorf("ensemble: connection %p was not opened by this Env's Connect or ConnectTo", conn)
}

// probeDir holds Expire's probe nodes, next to the base so that the
// scenario never sees them.
func (e *Env) probeDir() string { return e.base + ".probes" }

// createProbe creates an ephemeral znode owned by conn's session.
func (e *Env) createProbe(conn zktest.Conn) (string, error) {
	if _, err := e.admin.Create(e.probeDir(), nil, 0, zktest.OpenACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return "", err
	}
	e.mu.Lock()
	e.probes++
	n := e.probes
	e.mu.Unlock()
	probe := fmt.Sprintf("%s/%016x-%d", e.probeDir(), conn.SessionID(), n)
	// The probe dir was created through another session, perhaps on
	// another member.
	if _, err := conn.Sync(e.probeDir()); err != nil {
		return "", err
	}
	_, err := conn.Create(probe, nil, zk.FlagEphemeral, zktest.OpenACL)
	return probe, err
}

// waitHasSession waits until conn has an established session.
func waitHasSession(conn zktest.Conn, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("connection has no session after %v (state %v)", wait, conn.State())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// awaitDeleted waits, through a watch, until path no longer exists. It
// syncs first: path was created through another member, which conn's member
// may not have heard of yet, and a node not created yet is not a node gone.
func awaitDeleted(conn *zk.Conn, path string, wait time.Duration) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	if _, err := conn.Sync(path); err != nil {
		return err
	}
	for {
		exists, _, ch, err := conn.ExistsW(path)
		if err != nil {
			return err
		}
		if !exists {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("%s still exists after %v", path, wait)
		}
	}
}

// syncMembers makes every member that answers catch up with the leader, so
// that a read through any member after Expire sees the expiry. Members are
// reached with sessions of their own, pinned to each one.
func (e *Env) syncMembers(path string) error {
	if len(e.target.servers) == 1 {
		return nil
	}
	for _, server := range e.target.servers {
		conn, err := dialMember(server)
		if err != nil {
			e.logf("Expire: member %s did not answer (%v); not syncing it", server, err)
			continue
		}
		_, err = conn.Sync(path)
		if err == nil {
			var exists bool
			exists, _, err = conn.Exists(path)
			if err == nil && exists {
				err = errors.New("the expired session's probe node is still there after a sync")
			}
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("Expire: member %s: %v", server, err)
		}
	}
	return nil
}

// dialMember opens a session of this package's own to one member, and no
// other, and waits until it is established.
func dialMember(server string) (*zk.Conn, error) {
	conn, events, err := zk.Connect([]string{server}, adminTimeout, zk.WithLogger(silentLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	if err := awaitSession(events, memberSyncWait); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// syncServer makes one member catch up with the leader: a sync through it
// returns once it has applied everything committed before the sync.
func syncServer(server, path string) error {
	conn, err := dialMember(server)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Sync(path)
	return err
}
