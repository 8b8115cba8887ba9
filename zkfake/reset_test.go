package zkfake_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// TestResetMakesTheServerNew: after Reset the tree is a fresh server's,
// whatever its ACLs, the sessions have expired and their Conns carry on
// with new ones, members are up, and reply losses are gone.
func TestResetMakesTheServerNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fresh := zkfake.NewServer(zkfake.WithEnsemble(3))
		want := paths(fresh.Znodes())
		fresh.Close()

		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, events, err := srv.Connect(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			path string
			acl  []zk.ACL
			flag int32
		}{
			{"/p", zk.AuthACL(zk.PermAll), 0},
			{"/p/c", zk.AuthACL(zk.PermAll), 0},
			{"/e", zk.WorldACL(zk.PermAll), zk.FlagEphemeral},
		} {
			if _, err := c.Create(step.path, nil, step.flag, step.acl); err != nil {
				t.Fatal(err)
			}
		}
		old := c.SessionID()
		srv.StopMember(2)
		srv.LoseReplies(zkfake.ReplyLoss{Op: "create"})
		srv.Reset()

		if got := paths(srv.Znodes()); !slices.Equal(got, want) {
			t.Fatalf("tree after Reset: %v, want a fresh server's %v", got, want)
		}
		if !srv.MemberUp(2) {
			t.Fatal("member 2 still down after Reset")
		}
		for ev := range events {
			if ev.State == zk.StateExpired {
				break
			}
		}
		if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create after Reset (the loss rule should be gone): %v", err)
		}
		if c.SessionID() == old {
			t.Fatal("the session survived Reset")
		}
		if _, _, err := c.Get("/p"); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("Get /p after Reset: %v, want %v", err, zk.ErrNoNode)
		}
	})
}

func paths(nodes []zkfake.Znode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Path
	}
	return out
}
