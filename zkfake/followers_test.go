package zkfake_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

func TestLaggingFollowerServesStaleReadsUntilSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		writer, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		reader, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(2))
		mustCreate(t, writer, "/x", 0)
		if !exists(t, reader, "/x") {
			t.Fatal("a follower that is not lagging missed a committed create")
		}
		_, _, watch, err := reader.GetW("/x")
		if err != nil {
			t.Fatal(err)
		}
		srv.SetLagging(2, true)
		if _, err := writer.Set("/x", []byte("new"), -1); err != nil {
			t.Fatal(err)
		}
		data, _, _ := reader.Get("/x")
		if string(data) != "" {
			t.Fatalf("lagging follower read %q, want the stale empty value", data)
		}
		select {
		case ev := <-watch:
			t.Fatalf("watch fired (%v) before the follower applied the change", ev.Type)
		default:
		}
		if _, err := reader.Sync("/x"); err != nil {
			t.Fatal(err)
		}
		if ev := <-watch; ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("watch after sync: %v", ev.Type)
		}
		data, _, _ = reader.Get("/x")
		if string(data) != "new" {
			t.Fatalf("read after sync: %q, want %q", data, "new")
		}
	})
}

func TestLaggingFollowerShowsItsSessionsOwnWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		self, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		srv.SetLagging(1, true)
		mustCreate(t, other, "/theirs", 0)
		mustCreate(t, self, "/mine", 0)
		if !exists(t, self, "/mine") {
			t.Fatal("a session did not read its own write")
		}
		// Applying its own write brought the member past the earlier one.
		if !exists(t, self, "/theirs") {
			t.Fatal("the follower skipped a write ordered before the session's own")
		}
		mustCreate(t, other, "/later", 0)
		if exists(t, self, "/later") {
			t.Fatal("a lagging follower showed a write it had not applied")
		}
		srv.SetLagging(1, false)
		if !exists(t, self, "/later") {
			t.Fatal("the follower did not catch up when its lag ended")
		}
	})
}

func TestStoppingAFollowerThenTheLeaderKeepsSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		a, _, _ := srv.Connect(10 * time.Second) // member 0, the leader
		b, bEvents, _ := srv.Connect(10 * time.Second)
		if b.Member() != 1 {
			t.Fatalf("second session on member %d, want 1", b.Member())
		}
		states(t, bEvents, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		eph := mustCreate(t, b, "/b", zk.FlagEphemeral)
		id := b.SessionID()

		srv.StopMember(1)
		states(t, bEvents, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		if b.Member() == 1 || b.SessionID() != id || !exists(t, a, eph) {
			t.Fatalf("after its follower stopped: member %d, session %#x (was %#x)", b.Member(), b.SessionID(), id)
		}
		srv.StartMember(1)

		srv.StopMember(0)
		if a.Member() == 0 {
			t.Fatal("the leader's client did not move")
		}
		mustCreate(t, a, "/after-leader", 0)
		if !exists(t, b, "/after-leader") || !exists(t, b, eph) {
			t.Fatal("writes or ephemerals lost when the leader stopped")
		}
	})
}

func TestNoQuorumServesNobodyAndExpiresNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		a, _, _ := srv.Connect(10 * time.Second)
		id := a.SessionID()
		srv.StopMember(1)
		srv.StopMember(2)
		if _, err := a.Create("/x", nil, 0, open); err != zk.ErrNoServer {
			t.Fatalf("create without a quorum: %v, want ErrNoServer", err)
		}
		time.Sleep(time.Minute) // far past the session timeout
		if len(srv.Sessions()) != 1 {
			t.Fatal("a session expired while there was no quorum to expire it")
		}
		srv.StartMember(2)
		time.Sleep(time.Second + time.Millisecond) // the next reconnect round
		if a.SessionID() != id || a.State() != zk.StateHasSession {
			t.Fatalf("after the quorum came back: session %#x (was %#x), state %v", a.SessionID(), id, a.State())
		}
		mustCreate(t, a, "/y", 0)
	})
}

// Members stopped together (StopMembers) take the quorum at one instant:
// a client of one of them does not reconnect to the other on the way down
// and have its session for a moment, as it does between two StopMember
// calls; it waits, its session kept, until they start again together.
func TestMembersStopTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		a, events, _ := srv.Connect(10 * time.Second) // on member 0
		states(t, events, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		id := a.SessionID()
		srv.StopMembers(0, 2)
		states(t, events, zk.StateDisconnected, zk.StateConnecting)
		if len(events) != 0 {
			t.Fatalf("after the members stopped together, the client saw %v", <-events)
		}
		srv.StartMembers(0, 2)
		if !srv.MemberUp(0) || !srv.MemberUp(2) {
			t.Fatal("StartMembers left a member down")
		}
		time.Sleep(time.Second + time.Millisecond) // the next reconnect round
		if a.SessionID() != id || a.State() != zk.StateHasSession {
			t.Fatalf("after the members started: session %#x (was %#x), state %v", a.SessionID(), id, a.State())
		}
	})
}

// A write whose members go down with its reply (ReplyLoss.StopMembers) is
// committed, and its client, which never heard so, stays cut off until a
// majority is back: then it resumes its session, and finds its node.
func TestReplyLostAsTheQuorumGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		a, events, _ := srv.Connect(10 * time.Second)
		states(t, events, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		id := a.SessionID()
		srv.LoseReplies(zkfake.ReplyLoss{SessionID: id, Nth: 1, Applied: true, StopMembers: []int{1, 2}})
		if _, err := a.Create("/ghost", nil, zk.FlagEphemeral, open); err != zk.ErrConnectionClosed {
			t.Fatalf("create whose reply went with the quorum: %v, want ErrConnectionClosed", err)
		}
		states(t, events, zk.StateDisconnected, zk.StateConnecting)
		time.Sleep(time.Minute)
		if a.State() == zk.StateHasSession {
			t.Fatal("the client reached a session with no quorum")
		}
		srv.StartMember(1)
		time.Sleep(time.Second + time.Millisecond) // the next reconnect round
		if a.SessionID() != id || a.State() != zk.StateHasSession || !exists(t, a, "/ghost") {
			t.Fatalf("after the quorum came back: session %#x (was %#x), state %v, or the write was lost", a.SessionID(), id, a.State())
		}

		// A request lost before it applies takes the members with it too,
		// and is not applied.
		srv.LoseReplies(zkfake.ReplyLoss{SessionID: id, Nth: 1, StopMembers: []int{1, 2}})
		if _, err := a.Create("/never", nil, 0, open); err != zk.ErrConnectionClosed {
			t.Fatalf("create lost as the quorum went: %v, want ErrConnectionClosed", err)
		}
		if srv.MemberUp(1) || srv.MemberUp(2) {
			t.Fatal("the members did not stop with the lost request")
		}
		srv.StartMember(1)
		srv.StartMember(2)
		time.Sleep(time.Second + time.Millisecond)
		if exists(t, a, "/never") {
			t.Fatal("a request lost before it applied was applied")
		}
	})
}

// A session made on a lagging member reads nothing older than its own
// creation: the member answers the connect only once it has applied the
// createSession transaction, and every one before it. So a client whose
// session expired, and which opens the next on a member that lags, does not
// read back behind what its old session saw.
func TestNewSessionOnALaggingFollowerReadsNothingOlder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		writer, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		mustCreate(t, writer, "/gone", 0)
		srv.SetLagging(2, true)
		if err := writer.Delete("/gone", -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, writer, "/new", 0)
		reader, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(2))
		if exists(t, reader, "/gone") || !exists(t, reader, "/new") {
			t.Fatal("a session made on a lagging member read a tree older than its creation")
		}
		mustCreate(t, writer, "/later", 0)
		if exists(t, reader, "/later") {
			t.Fatal("the member stopped lagging: it showed a write after the session's creation")
		}
	})
}

// A client cut off (paused, or partitioned) while the ensemble loses its
// quorum finds no connection when it comes back: it dials again, and no
// write of its goes through until the quorum is back.
func TestBackWithoutQuorumWritesNothing(t *testing.T) {
	for _, how := range []string{"paused", "partitioned"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := zkfake.NewServer(zkfake.WithEnsemble(3), zkfake.WithTickTime(200*time.Millisecond))
				defer srv.Close()
				c, _, err := srv.Connect(4 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if how == "paused" {
					c.Pause()
				} else {
					c.Partition()
				}
				srv.StopMember(1)
				srv.StopMember(2)
				if how == "paused" {
					c.Resume()
				} else {
					c.Heal()
				}
				if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
					t.Fatal("a create went through while the ensemble had no quorum")
				}
				srv.StartMember(1)
				srv.StartMember(2)
				time.Sleep(2 * time.Second)
				if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatalf("create once the quorum is back: %v", err)
				}
			})
		})
	}
}

// When the quorum comes back, the new leader gives every silent session a
// fresh timeout; sessions of one timeout then expire at one instant, and
// in the order of their ids, in every run: the order of their ephemeral
// nodes' deletions, and of the watch events that tell of them, must not
// depend on a map's iteration.
func TestSessionsExpiringTogetherAfterAQuorumLossGoInIDOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		var ids []int64
		var conns []*zkfake.Conn
		for range 8 {
			c, _, _ := srv.Connect(4 * time.Second)
			ids = append(ids, c.SessionID())
			conns = append(conns, c)
		}
		srv.StopMember(1)
		srv.StopMember(2)
		for _, c := range conns {
			c.Crash()
		}
		time.Sleep(time.Minute)
		srv.StartMember(2)
		time.Sleep(time.Minute)
		var expired []int64
		for _, r := range srv.Log() {
			if r.Kind == zkfake.RecordSession && r.Op == "expireSession" {
				expired = append(expired, r.Session)
			}
		}
		if !slices.Equal(expired, ids) {
			t.Fatalf("sessions expired in the order %#x, want their ids' order %#x", expired, ids)
		}
	})
}
