package zkfake_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

func children(t *testing.T, c *zkfake.Conn, path string) []string {
	t.Helper()
	names, _, err := c.Children(path)
	if err != nil {
		t.Fatalf("children of %s: %v", path, err)
	}
	slices.Sort(names)
	return names
}

// A write whose reply is lost is not among the zxids the client has seen,
// so a member that lags behind the write but not behind the client takes
// the reconnecting client, and the client's reads there miss its own
// write until the member catches up. ZooKeeper allows it: a member refuses
// only a client whose last-seen zxid is past its own
// (ZooKeeperServer.processConnectRequest), and a follower answers reads
// from its own tree. The real ensemble cannot be made to lag on demand;
// TestLostReplyLeavesLastZxidSeen in zkfake/zktest/ensemble shows there that
// go-zookeeper's reconnect after a lost reply carries a last-seen zxid
// short of the write.
func TestLostReplyThenReconnectToALaggingMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, events, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		mustCreate(t, c, "/dir", 0)
		srv.SetLagging(2, true)
		srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: "/dir/", Applied: true})
		c.ReconnectTo(2)
		id := c.SessionID()
		for len(events) > 0 {
			<-events
		}

		if _, err := c.Create("/dir/ghost", nil, 0, open); err != zk.ErrConnectionClosed {
			t.Fatalf("create with its reply lost: %v, want zk.ErrConnectionClosed", err)
		}
		states(t, events, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		if c.Member() != 2 || c.SessionID() != id {
			t.Fatalf("after the reconnect: member %d (want 2), session %#x (want %#x)", c.Member(), c.SessionID(), id)
		}
		if !exists(t, other, "/dir/ghost") {
			t.Fatal("the create whose reply was lost was not applied")
		}
		if got := children(t, c, "/dir"); len(got) != 0 {
			t.Fatalf("member 2 listed %q before applying the create", got)
		}
		srv.CatchUp(2)
		if got := children(t, c, "/dir"); !slices.Equal(got, []string{"ghost"}) {
			t.Fatalf("after member 2 caught up: %q, want [ghost]", got)
		}

		var asked, moved bool
		for _, r := range srv.Log() {
			asked = asked || r.Kind == zkfake.RecordFault && r.Op == "reconnectTo" && r.Input == "member 2"
			moved = moved || r.Kind == zkfake.RecordSession && r.Op == "reconnect" && r.Input == "member 2"
		}
		if !asked || !moved {
			t.Errorf("the log lacks the reconnectTo fault (%v) or the move in the reconnect record (%v)", asked, moved)
		}
	})
}

// A move asked for while the client is cut off is made by the first dial
// that gets through, and the reconnect record says so, however many dials
// failed before it.
func TestReconnectToRecordedAfterFailedDials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		c.ReconnectTo(2)
		c.Partition()
		time.Sleep(8 * time.Second) // noticed at two thirds of the timeout; dials fail
		c.Heal()
		time.Sleep(2 * time.Second)
		if c.Member() != 2 {
			t.Fatalf("reconnected to member %d, want 2", c.Member())
		}
		var inputs []string
		for _, r := range srv.Log() {
			if r.Kind == zkfake.RecordSession && r.Op == "reconnect" {
				inputs = append(inputs, r.Input)
			}
		}
		if !slices.Equal(inputs, []string{"member 2"}) {
			t.Fatalf("reconnect records say %q, want [member 2]", inputs)
		}
	})
}

// What the client did read, the member it reconnects to must have: a
// lagging member catches up to the client's last-seen zxid, and no further.
func TestReconnectToALaggingMemberCatchesItUpToWhatTheClientSaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		mustCreate(t, c, "/dir", 0)
		srv.SetLagging(2, true)
		mustCreate(t, c, "/dir/seen", 0) // its reply arrives
		mustCreate(t, other, "/dir/later", 0)
		c.ReconnectTo(2)
		srv.LoseReplies(zkfake.ReplyLoss{Op: "sync", SessionID: c.SessionID(), Nth: 1})
		if _, err := c.Sync("/dir"); err != zk.ErrConnectionClosed {
			t.Fatalf("sync with its request lost: %v", err)
		}
		if c.Member() != 2 {
			t.Fatalf("reconnected to member %d, want 2", c.Member())
		}
		// /dir/later came after the last reply c read, and member 2 is
		// still lagging.
		if got := children(t, c, "/dir"); !slices.Equal(got, []string{"seen"}) {
			t.Fatalf("on member 2: %q, want [seen]", got)
		}
	})
}

// setWatches runs against the tree of the member the client reconnects
// to: a watch whose change that member has not applied is re-armed there
// and fires when it applies it.
func TestWatchesMoveWithTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		mustCreate(t, c, "/cfg", 0)
		_, _, watch, err := c.GetW("/cfg")
		if err != nil {
			t.Fatal(err)
		}
		srv.SetLagging(2, true)
		c.Partition()
		if _, err := other.Set("/cfg", []byte("new"), -1); err != nil {
			t.Fatal(err)
		}
		c.ReconnectTo(2)
		time.Sleep(7 * time.Second) // the client notices at 2/3 of 10s and redials each second
		c.Heal()
		time.Sleep(time.Second + time.Millisecond)
		if c.State() != zk.StateHasSession || c.Member() != 2 {
			t.Fatalf("after the partition: %v on member %d", c.State(), c.Member())
		}
		select {
		case ev := <-watch:
			t.Fatalf("the watch fired (%v) on a member that has not applied the change", ev.Type)
		default:
		}
		if srv.WatchCount("/cfg") != 1 {
			t.Fatalf("%d watches on /cfg, want the one re-armed on member 2", srv.WatchCount("/cfg"))
		}
		srv.CatchUp(2)
		select {
		case ev := <-watch:
			if ev.Type != zk.EventNodeDataChanged {
				t.Fatalf("watch: %v", ev.Type)
			}
		default:
			t.Fatal("the watch did not fire when member 2 applied the change")
		}
	})
}

// A member that is down cannot take the client: one free to move goes on
// to the next member that is up; one pinned with WithMember waits.
func TestReconnectToAStoppedMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		free, _, _ := srv.Connect(10 * time.Second) // member 0
		pinned, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		srv.StopMember(1)
		free.ReconnectTo(1)
		pinned.ReconnectTo(1)
		for _, c := range []*zkfake.Conn{free, pinned} {
			srv.LoseReplies(zkfake.ReplyLoss{Op: "sync", SessionID: c.SessionID(), Nth: 1})
			if _, err := c.Sync("/"); err != zk.ErrConnectionClosed {
				t.Fatalf("sync with its request lost: %v", err)
			}
		}
		if free.Member() != 2 || free.State() != zk.StateHasSession {
			t.Fatalf("free client: member %d, %v; want member 2, connected", free.Member(), free.State())
		}
		if pinned.State() == zk.StateHasSession {
			t.Fatal("the pinned client got through to a stopped member")
		}
		srv.StartMember(1)
		time.Sleep(time.Second + time.Millisecond)
		if pinned.Member() != 1 || pinned.State() != zk.StateHasSession {
			t.Fatalf("pinned client: member %d, %v; want member 1, connected", pinned.Member(), pinned.State())
		}
		mustCreate(t, pinned, "/x", 0)
	})
}

// The connect response carries no zxid, so a session that has read no
// reply yet has seen none, and any member takes it when it reconnects.
func TestNewSessionHasSeenNoZxid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		srv.SetLagging(2, true)
		mustCreate(t, other, "/before", 0)
		c, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		c.ReconnectTo(2)
		srv.LoseReplies(zkfake.ReplyLoss{Op: "sync", SessionID: c.SessionID(), Nth: 1})
		if _, err := c.Sync("/"); err != zk.ErrConnectionClosed {
			t.Fatalf("sync with its request lost: %v", err)
		}
		if c.Member() != 2 || exists(t, c, "/before") {
			t.Fatalf("member %d (want 2) showed a write it had not applied", c.Member())
		}
	})
}
