package zkfake_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// Past 2147483647 the counter wraps to -2147483648, and the server prints
// it with "%010d", sign first.
func TestSetSequenceAcrossTheWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		defer srv.Close()
		c, _ := connect(t, srv, 10*time.Second)
		mustCreate(t, c, "/dir", 0)
		if err := srv.SetSequence("/dir", math.MaxInt32-1); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 3 {
			got = append(got, mustCreate(t, c, "/dir/x", zk.FlagSequence))
		}
		want := []string{"/dir/x2147483646", "/dir/x2147483647", "/dir/x-2147483648"}
		if !slices.Equal(got, want) {
			t.Fatalf("created %q, want %q", got, want)
		}

		// From -999999999 on the sign takes one of the ten places.
		if err := srv.SetSequence("/dir", -999999999); err != nil {
			t.Fatal(err)
		}
		if p := mustCreate(t, c, "/dir/x", zk.FlagEphemeralSequential); p != "/dir/x-999999999" {
			t.Fatalf("at -999999999: %q", p)
		}
		if err := srv.SetSequence("/dir", -5); err != nil {
			t.Fatal(err)
		}
		if p := mustCreate(t, c, "/dir/x", zk.FlagSequence); p != "/dir/x-000000005" {
			t.Fatalf("at -5: %q", p)
		}
		// ...and the names past the wrap sort before those made before it,
		// which is what a recipe that orders by name gets wrong.
		names, _, err := c.Children("/dir")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if !strings.HasPrefix(names[0], "x-") || names[len(names)-1] != "x2147483647" {
			t.Fatalf("sorted names %q", names)
		}
	})
}

func TestSetSequenceMovesCversionAndNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		defer srv.Close()
		c, events := connect(t, srv, 10*time.Second)
		mustCreate(t, c, "/dir", 0)
		mustCreate(t, c, "/dir/a", 0)
		_, _, watch, err := c.ChildrenW("/dir")
		if err != nil {
			t.Fatal(err)
		}
		zxid := srv.Zxid()
		if err := srv.SetSequence("/dir", 100); err != nil {
			t.Fatal(err)
		}
		if srv.Zxid() != zxid {
			t.Fatalf("SetSequence took a zxid: %#x -> %#x", zxid, srv.Zxid())
		}
		_, st, _ := c.Exists("/dir")
		// Reported Cversion is 2*creates - NumChildren.
		if st.Cversion != 2*100-1 || st.Pzxid != zxid {
			t.Fatalf("after SetSequence(100) with one child: Cversion %d (want 199), Pzxid %#x (want %#x)", st.Cversion, st.Pzxid, zxid)
		}
		select {
		case ev := <-watch:
			t.Fatalf("SetSequence fired a watch: %+v", ev)
		case ev := <-events:
			t.Fatalf("SetSequence sent an event: %+v", ev)
		default:
		}
		if p := mustCreate(t, c, "/dir/s-", zk.FlagSequence); p != "/dir/s-0000000100" {
			t.Fatalf("first create after SetSequence(100): %q", p)
		}
		var logged bool
		for _, r := range srv.Log() {
			if r.Kind == zkfake.RecordFault && r.Op == "setSequence" && r.Path == "/dir" && r.Input == "n=100" {
				logged = true
			}
		}
		if !logged {
			t.Error("the event log has no setSequence record")
		}
		if err := srv.SetSequence("/missing", 1); err != zk.ErrNoNode {
			t.Fatalf("SetSequence on a missing node: %v, want zk.ErrNoNode", err)
		}
	})
}

// Every member of an ensemble applies the setting in order after the writes
// before it: a lagging follower that has creates to apply still ends with
// the leader's counter, and a session on it creates with the set number.
func TestSetSequenceReachesEveryMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		leader, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		follower, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(2))
		mustCreate(t, leader, "/dir", 0)
		srv.SetLagging(2, true)
		mustCreate(t, leader, "/dir/a", 0) // queued on member 2
		if err := srv.SetSequence("/dir", 41); err != nil {
			t.Fatal(err)
		}
		_, stale, _ := follower.Exists("/dir")
		if stale.NumChildren != 0 || stale.Cversion != 0 {
			t.Fatalf("the lagging member applied something early: %+v", *stale)
		}
		srv.CatchUp(2)
		_, fromLeader, _ := leader.Exists("/dir")
		_, fromFollower, _ := follower.Exists("/dir")
		if *fromFollower != *fromLeader || fromLeader.Cversion != 2*41-1 {
			t.Fatalf("after catching up: follower %+v, leader %+v (want Cversion 81)", *fromFollower, *fromLeader)
		}
		// A session on the follower writes through the leader.
		if p := mustCreate(t, follower, "/dir/s-", zk.FlagSequence); p != "/dir/s-0000000041" {
			t.Fatalf("create through the follower: %q", p)
		}
		_, fromLeader, _ = leader.Exists("/dir")
		_, fromFollower, _ = follower.Exists("/dir")
		if *fromFollower != *fromLeader {
			t.Fatalf("after a create: follower %+v, leader %+v", *fromFollower, *fromLeader)
		}
	})
}

// WithSequenceStart starts the counter of every node made afterwards where
// SetSequence would, one level down as well as at the top, and leaves a
// new container alone until it has had a child.
func TestSequenceStartInEveryNewDirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSequenceStart(math.MaxInt32), zkfake.WithContainerCheckInterval(time.Second))
		defer srv.Close()
		c, _ := connect(t, srv, 10*time.Second)
		mustCreate(t, c, "/top", 0)
		mustCreate(t, c, "/top/leases", 0) // takes /top's 2147483647
		if p := mustCreate(t, c, "/top/s-", zk.FlagSequence); p != "/top/s--2147483648" {
			t.Fatalf("create under /top: %q", p)
		}
		for _, dir := range []string{"/top/leases"} {
			for _, want := range []string{dir + "/s-2147483647", dir + "/s--2147483648"} {
				if p := mustCreate(t, c, dir+"/s-", zk.FlagSequence); p != want {
					t.Fatalf("create under %s: %q, want %q", dir, p, want)
				}
			}
		}
		if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if ok, _, _ := c.Exists("/box"); !ok {
			t.Fatal("a container that never had a child was deleted")
		}
		mustCreate(t, c, "/box/x", 0)
		if err := c.Delete("/box/x", -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if ok, _, _ := c.Exists("/box"); ok {
			t.Fatal("an emptied container was kept")
		}
	})
}
