package zktest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var memberScenarios = []Scenario{
	{"members/lost-reply-reconnect", "a write whose reply is lost is applied; the client reconnects with its session to the member it is sent to, which shows the write once synced", membersLostReplyReconnect},
	{"members/connect-without-quorum", "a client that connects while a majority of the members is stopped gets no session until the quorum is back, and then one that writes", membersConnectWithoutQuorum},
	{"members/stop-follower-then-leader", "stopping a follower, then the leader: the ensemble goes on with 2 of 3, clients move with their sessions and ephemerals", membersStopFollowerThenLeader},
}

// electionWait bounds how long a scenario waits for the ensemble to serve
// again after a member stops: a new leader is elected within a few ticks.
const electionWait = 30 * time.Second

func membersStopFollowerThenLeader(t *testing.T, env Env) {
	m, ok := env.(Members)
	if !ok || m.Members() < 3 {
		t.Skip("the environment cannot stop ensemble members")
	}
	base := env.Base()
	conn, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	id := conn.SessionID()
	eph := create(t, conn, base+"/eph", nil, zk.FlagEphemeral)

	for round, what := range []string{"a follower", "the leader"} {
		member := pickFollower(t, m)
		if round == 1 {
			member = leaderOf(t, m)
		}
		Require(t, m.StopMember(member))
		// The ensemble goes on with two members: writes succeed again once
		// every client that lost its member has moved (and, after the
		// leader, once a new one is elected).
		path := fmt.Sprintf("%s/after-%d", base, round)
		eventually(t, "a write after stopping "+what, func() error {
			_, err := conn.Create(path, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
			if err == zk.ErrNodeExists {
				return nil
			}
			return err
		})
		eventually(t, "the other session reading it", func() error {
			if _, err := other.Sync(path); err != nil {
				return err
			}
			ok, _, err := other.Exists(path)
			if err == nil && !ok {
				return fmt.Errorf("%s not there", path)
			}
			return err
		})
		wantEqual(t, "session id after stopping "+what, conn.SessionID(), id)
		ok, st, err := other.Exists(eph)
		wantErr(t, "Exists of the ephemeral after stopping "+what, err, nil)
		if !ok || st.EphemeralOwner != id {
			t.Fatalf("after stopping %s the ephemeral is %v with owner %#x, want kept by %#x", what, ok, st.EphemeralOwner, id)
		}
		Require(t, m.StartMember(member))
	}
	for len(events) > 0 {
		if ev := <-events; ev.State == zk.StateExpired {
			t.Fatalf("the session expired while members stopped: %+v", ev)
		}
	}
}

func membersLostReplyReconnect(t *testing.T, env Env) {
	m, isEnsemble := env.(Members)
	r, canMove := env.(Reconnector)
	l, canLose := env.(ReplyLoser)
	if !isEnsemble || !canMove || !canLose || m.Members() < 2 {
		t.Skip("the environment cannot lose a reply and choose the member a client reconnects to")
	}
	conn, events := env.Connect(t, 4*time.Second)
	id := conn.SessionID()
	dir := create(t, conn, env.Base()+"/dir", nil, 0)
	from := memberOf(t, r, conn)
	to := (from + 1) % m.Members()
	Require(t, r.ReconnectTo(conn, to))
	wantEqual(t, "member before any reconnect", memberOf(t, r, conn), from)

	drain(events)
	Require(t, l.LoseNextReply(conn))
	_, err := conn.Create(dir+"/ghost", nil, 0, OpenACL)
	wantErr(t, "Create whose reply is lost", err, zk.ErrConnectionClosed)
	for _, ev := range waitState(t, "reconnect after the lost reply", events, zk.StateHasSession) {
		if ev.State == zk.StateExpired {
			t.Fatalf("the session expired on a lost reply: %+v", ev)
		}
	}
	wantEqual(t, "session id after the reconnect", conn.SessionID(), id)
	wantEqual(t, "member after the reconnect", memberOf(t, r, conn), to)
	// ZooKeeper 3.8: the member takes a client whose last-seen zxid it has
	// reached, and a lost reply's zxid is not among those seen, so the
	// member may not have applied the write yet; a sync makes it catch up.
	_, err = conn.Sync(dir)
	wantErr(t, "Sync", err, nil)
	names, _, err := conn.Children(dir)
	wantErr(t, "Children", err, nil)
	wantEqual(t, "Children after the sync", names, []string{"ghost"})
}

// pickFollower returns a member that does not lead, preferring the one
// Connect's sessions start on, so that stopping it moves them.
func pickFollower(t testing.TB, m Members) int {
	leader := leaderOf(t, m)
	if m.Home() != leader {
		return m.Home()
	}
	return (leader + 1) % m.Members()
}

// eventually retries f until it succeeds or electionWait passes.
func eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(electionWait)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, electionWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaderOf returns the member that leads m's ensemble now.
func leaderOf(t testing.TB, m Members) int {
	t.Helper()
	leader, err := m.Leader()
	Require(t, err)
	return leader
}

// memberOf returns the member conn is connected to.
func memberOf(t testing.TB, r Reconnector, conn Conn) int {
	t.Helper()
	member, err := r.MemberOf(conn)
	Require(t, err)
	return member
}

func membersConnectWithoutQuorum(t *testing.T, env Env) {
	m, ok := env.(Members)
	if !ok || m.Members() < 3 {
		t.Skip("the environment cannot stop ensemble members")
	}
	var stopped []int
	for i := range m.Members() {
		if i != m.Home() {
			Require(t, m.StopMember(i))
			stopped = append(stopped, i)
		}
	}
	connected := make(chan Conn, 1)
	go func() {
		conn, _ := env.Connect(t, 4*time.Second)
		connected <- conn
	}()
	time.Sleep(3 * time.Second)
	select {
	case <-connected:
		t.Fatal("a session opened while the ensemble had no quorum")
	default:
	}
	for _, i := range stopped {
		Require(t, m.StartMember(i))
	}
	var conn Conn
	select {
	case conn = <-connected:
	case <-time.After(electionWait):
		t.Fatalf("no session %v after the quorum came back", electionWait)
	}
	create(t, conn, env.Base()+"/after", nil, 0)
}
