package zkfake_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// The extras' expected values are ZooKeeper 3.8.0's, read off a 3-node
// ensemble with a raw client; the conformance suite's "ops" scenarios check
// the same over the wire and on the real ensemble.

// received returns the events ch holds once the bubble is quiet, and
// whether ch was closed.
func received(ch <-chan zk.Event) (evs []string, closed bool) {
	for {
		// A persistent watch's events come one at a time from its own
		// goroutine: let it hand over the next.
		synctest.Wait()
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs, true
			}
			evs = append(evs, describeEvent(ev))
		default:
			return evs, false
		}
	}
}

func describeEvent(ev zk.Event) string {
	s := fmt.Sprintf("%d %s", ev.Type, ev.Path)
	if ev.Err != nil {
		s += " " + ev.Err.Error()
	}
	return s
}

// nodeEvents returns the node events (not session events) the session's
// channel holds once the bubble is quiet.
func nodeEvents(events <-chan zk.Event) []string {
	synctest.Wait()
	var out []string
	for {
		select {
		case ev := <-events:
			if ev.Type != zk.EventSession {
				out = append(out, describeEvent(ev))
			}
		default:
			return out
		}
	}
}

// inBubble runs body in a testing/synctest bubble, with a new server made
// with opts and two sessions on it: c, whose event channel is events, and
// other.
func inBubble(t *testing.T, body func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, events <-chan zk.Event, other *zkfake.Conn), opts ...zkfake.Option) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(opts...)
		defer srv.Close()
		c, events, _ := srv.Connect(10 * time.Second)
		other, _, _ := srv.Connect(10 * time.Second)
		body(t, srv, c, events, other)
	})
}

// changeBelow makes the changes the persistent watch tests watch: root
// created and changed, a child created and changed, a grandchild created
// and deleted, the child deleted.
func changeBelow(t *testing.T, c *zkfake.Conn, root string) {
	t.Helper()
	mustCreate(t, c, root, 0)
	mustSet(t, c, root, "2")
	mustCreate(t, c, root+"/c", 0)
	mustSet(t, c, root+"/c", "3")
	mustCreate(t, c, root+"/c/d", 0)
	mustDelete(t, c, root+"/c/d")
	mustDelete(t, c, root+"/c")
}

func ev(t zk.EventType, path string) string { return describeEvent(zk.Event{Type: t, Path: path}) }

func wantEvents(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func mustSet(t *testing.T, c *zkfake.Conn, path, data string) {
	t.Helper()
	if _, err := c.Set(path, []byte(data), -1); err != nil {
		t.Fatalf("set %s: %v", path, err)
	}
}

func mustDelete(t *testing.T, c *zkfake.Conn, path string) {
	t.Helper()
	if err := c.Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}

// A persistent watch fires for every change of its node, children
// changed included, stays after the node's deletion, and fires again when
// the node comes back; a grandchild's changes do not concern it.
func TestAddWatchPersistent(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, events <-chan zk.Event, other *zkfake.Conn) {
		ch, err := c.AddWatch("/p", zkfake.AddWatchModePersistent)
		if err != nil {
			t.Fatal(err)
		}
		nodeEvents(events)
		changeBelow(t, other, "/p")
		mustDelete(t, other, "/p")
		mustCreate(t, other, "/p", 0)
		want := []string{
			ev(zk.EventNodeCreated, "/p"), ev(zk.EventNodeDataChanged, "/p"),
			ev(zk.EventNodeChildrenChanged, "/p"), ev(zk.EventNodeChildrenChanged, "/p"),
			ev(zk.EventNodeDeleted, "/p"), ev(zk.EventNodeCreated, "/p"),
		}
		got, closed := received(ch)
		wantEvents(t, "the persistent watch's channel", got, want)
		if closed {
			t.Fatal("the persistent watch's channel closed")
		}
		wantEvents(t, "the session's channel", nodeEvents(events), want)
	})
}

// A recursive watch fires for its node and every node below it, never
// NodeChildrenChanged, and not for a sibling whose name it prefixes.
func TestAddWatchRecursive(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, other *zkfake.Conn) {
		ch, err := c.AddWatch("/r", zkfake.AddWatchModePersistentRecursive)
		if err != nil {
			t.Fatal(err)
		}
		changeBelow(t, other, "/r")
		mustCreate(t, other, "/rx", 0)
		// The session's own writes fire it too.
		mustCreate(t, c, "/r/own", 0)
		got, _ := received(ch)
		wantEvents(t, "the recursive watch's channel", got, []string{
			ev(zk.EventNodeCreated, "/r"), ev(zk.EventNodeDataChanged, "/r"),
			ev(zk.EventNodeCreated, "/r/c"), ev(zk.EventNodeDataChanged, "/r/c"),
			ev(zk.EventNodeCreated, "/r/c/d"), ev(zk.EventNodeDeleted, "/r/c/d"),
			ev(zk.EventNodeDeleted, "/r/c"), ev(zk.EventNodeCreated, "/r/own"),
		})
	})
}

// A persistent watch is set again after a reconnect, and, as ZooKeeper 3.8
// does, tells nothing of what changed while the client was away; a one-shot
// watch on the same path fires for what it missed, and the client hands
// that event to both.
func TestPersistentWatchAcrossReconnect(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, other *zkfake.Conn) {
		mustCreate(t, other, "/q", 0)
		ch, _ := c.AddWatch("/q", zkfake.AddWatchModePersistent)
		rch, _ := c.AddWatch("/qr", zkfake.AddWatchModePersistentRecursive)
		_, _, once, _ := c.GetW("/q")
		c.Partition()
		time.Sleep(8 * time.Second) // the client notices and reconnects in vain
		mustSet(t, other, "/q", "while away")
		mustCreate(t, other, "/qr", 0)
		mustCreate(t, other, "/q/kid", 0)
		c.Heal()
		time.Sleep(2 * time.Second)
		if c.State() != zk.StateHasSession {
			t.Fatalf("state %v after heal", c.State())
		}
		// The one-shot watch's event reaches the persistent watch's channel
		// too, as ZooKeeper's client hands an event to every watcher of its
		// path (ZKWatchManager.materialize).
		got, _ := received(ch)
		wantEvents(t, "persistent watch after the reconnect", got, []string{ev(zk.EventNodeDataChanged, "/q")})
		got, _ = received(rch)
		wantEvents(t, "recursive watch after the reconnect", got, nil)
		got, _ = received(once)
		wantEvents(t, "one-shot watch after the reconnect", got, []string{ev(zk.EventNodeDataChanged, "/q")})
		mustSet(t, other, "/q", "after")
		mustCreate(t, other, "/qr/x", 0)
		got, _ = received(ch)
		wantEvents(t, "persistent watch, a change after the reconnect", got, []string{ev(zk.EventNodeDataChanged, "/q")})
		got, _ = received(rch)
		wantEvents(t, "recursive watch, a change after the reconnect", got, []string{ev(zk.EventNodeCreated, "/qr/x")})
	})
}

// ZooKeeper 3.8 keeps one watch per session, path and table: a GetW on a
// path watched persistently makes the data half one-shot again, and an
// AddWatch after a GetW makes it persistent.
func TestOneShotAndPersistentWatchShareTheServersEntry(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, events <-chan zk.Event, other *zkfake.Conn) {
		mustCreate(t, other, "/mix", 0)
		mustCreate(t, other, "/mix2", 0)
		c.GetW("/mix")
		c.AddWatch("/mix", zkfake.AddWatchModePersistent)
		c.AddWatch("/mix2", zkfake.AddWatchModePersistent)
		c.GetW("/mix2")
		nodeEvents(events)
		for _, p := range []string{"/mix", "/mix2"} {
			mustSet(t, other, p, "1")
			mustSet(t, other, p, "2")
			mustCreate(t, other, p+"/c", 0)
			mustDelete(t, other, p+"/c")
		}
		wantEvents(t, "events", nodeEvents(events), []string{
			ev(zk.EventNodeDataChanged, "/mix"), ev(zk.EventNodeDataChanged, "/mix"),
			ev(zk.EventNodeChildrenChanged, "/mix"), ev(zk.EventNodeChildrenChanged, "/mix"),
			ev(zk.EventNodeDataChanged, "/mix2"),
			ev(zk.EventNodeChildrenChanged, "/mix2"), ev(zk.EventNodeChildrenChanged, "/mix2"),
		})
	})
}

// RemoveWatches removes the session's watches of its type and ends their
// channels with the events ZooKeeper's client raises; the server sends
// nothing, so the session's channel hears nothing. Removing the data half
// of a persistent watch leaves the child half firing.
func TestRemoveWatches(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, events <-chan zk.Event, other *zkfake.Conn) {
		mustCreate(t, other, "/n", 0)
		_, _, data, _ := c.GetW("/n")
		_, _, exist, _ := c.ExistsW("/none")
		_, _, kids, _ := c.ChildrenW("/n")
		pers, _ := c.AddWatch("/p", zkfake.AddWatchModePersistent)
		nodeEvents(events)

		if err := c.RemoveWatches("/n", zkfake.WatcherTypeData); err != nil {
			t.Fatalf("remove the data watch: %v", err)
		}
		got, closed := received(data)
		if wantEvents(t, "GetW's channel", got, []string{ev(zkfake.EventDataWatchRemoved, "/n")}); !closed {
			t.Fatal("GetW's channel left open")
		}
		if err := c.RemoveWatches("/n", zkfake.WatcherTypeData); err != zkfake.ErrNoWatcher {
			t.Fatalf("remove it again: %v, want ErrNoWatcher", err)
		}
		if err := c.RemoveWatches("/none", zkfake.WatcherTypeAny); err != nil {
			t.Fatalf("remove the exists watch: %v", err)
		}
		got, _ = received(exist)
		wantEvents(t, "ExistsW's channel", got, []string{ev(zkfake.EventDataWatchRemoved, "/none")})
		if err := c.RemoveWatches("/n", zkfake.WatcherTypeChildren); err != nil {
			t.Fatalf("remove the child watch: %v", err)
		}
		got, _ = received(kids)
		wantEvents(t, "ChildrenW's channel", got, []string{ev(zkfake.EventChildWatchRemoved, "/n")})
		mustSet(t, other, "/n", "x")
		mustCreate(t, other, "/n/c", 0)

		// The data half of the persistent watch goes; the child half stays.
		if err := c.RemoveWatches("/p", zkfake.WatcherTypeData); err != nil {
			t.Fatalf("remove the persistent watch's data half: %v", err)
		}
		mustCreate(t, other, "/p", 0)
		mustSet(t, other, "/p", "x")
		mustCreate(t, other, "/p/k", 0)
		got, closed = received(pers)
		if wantEvents(t, "persistent watch without its data half", got, []string{ev(zk.EventNodeChildrenChanged, "/p")}); closed {
			t.Fatal("the persistent watch's channel closed with its data half")
		}
		if err := c.RemoveWatches("/p", zkfake.WatcherTypeAny); err != nil {
			t.Fatalf("remove the rest: %v", err)
		}
		got, closed = received(pers)
		if wantEvents(t, "persistent watch removed", got, []string{ev(zkfake.EventPersistentWatchRemoved, "/p")}); !closed {
			t.Fatal("the persistent watch's channel left open")
		}
		if err := c.RemoveWatches("/p", zkfake.WatcherTypeAny); err != zkfake.ErrNoWatcher {
			t.Fatalf("remove it again: %v, want ErrNoWatcher", err)
		}
		wantEvents(t, "the session's channel", nodeEvents(events), []string{ev(zk.EventNodeChildrenChanged, "/p")})
		if n := srv.TotalWatches(); n != 0 {
			t.Fatalf("%d watches left on the server", n)
		}
	})
}

// CheckWatches, as ZooKeeper 3.8 answers it, asks whether anyone watches
// the path, not whether the asking session does; a recursive watch on an
// ancestor does not count.
func TestCheckWatches(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, other *zkfake.Conn) {
		mustCreate(t, other, "/rx", 0)
		other.ExistsW("/nx")
		other.ChildrenW("/rx")
		c.AddWatch("/r", zkfake.AddWatchModePersistentRecursive)
		for _, tc := range []struct {
			path string
			typ  zkfake.WatcherType
			want error
		}{
			{"/nx", zkfake.WatcherTypeData, nil},
			{"/nx", zkfake.WatcherTypeChildren, zkfake.ErrNoWatcher},
			{"/rx", zkfake.WatcherTypeChildren, nil},
			{"/rx", zkfake.WatcherTypeData, zkfake.ErrNoWatcher},
			{"/rx", zkfake.WatcherTypeAny, nil},
			{"/r", zkfake.WatcherTypeData, nil},
			{"/r", zkfake.WatcherTypeChildren, nil},
			{"/r/c", zkfake.WatcherTypeAny, zkfake.ErrNoWatcher},
			{"/none", zkfake.WatcherTypeAny, zkfake.ErrNoWatcher},
		} {
			if err := c.CheckWatches(tc.path, tc.typ); err != tc.want {
				t.Errorf("CheckWatches(%s, %d) = %v, want %v", tc.path, tc.typ, err, tc.want)
			}
		}
		// Only the session's own watches are removed.
		if err := c.RemoveWatches("/rx", zkfake.WatcherTypeAny); err != zkfake.ErrNoWatcher {
			t.Errorf("removing another session's watch: %v, want ErrNoWatcher", err)
		}
	})
}

// Unknown modes and watcher types fail as the server fails them, with
// MarshallingError, and leave the session alone.
func TestBadWatchModesAndTypes(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, _ *zkfake.Conn) {
		const marshalling = "unknown error: -5"
		if _, err := c.AddWatch("/a", 2); err == nil || err.Error() != marshalling {
			t.Errorf("AddWatch mode 2: %v", err)
		}
		for _, typ := range []zkfake.WatcherType{0, 4, -1} {
			if err := c.CheckWatches("/a", typ); err == nil || err.Error() != marshalling {
				t.Errorf("CheckWatches type %d: %v", typ, err)
			}
			if err := c.RemoveWatches("/a", typ); err == nil || err.Error() != marshalling {
				t.Errorf("RemoveWatches type %d: %v", typ, err)
			}
		}
		// The server sets a watch on any path it is given, but its
		// checkWatches cannot walk a path with no '/', nor finds anything
		// at "".
		if _, err := c.AddWatch("foo", zkfake.AddWatchModePersistent); err != nil {
			t.Errorf("AddWatch on a malformed path: %v", err)
		}
		if _, err := c.AddWatch("", zkfake.AddWatchModePersistentRecursive); err != nil {
			t.Errorf("AddWatch on the empty path: %v", err)
		}
		if n := srv.TotalWatches(); n != 4 {
			t.Errorf("%d watches on the server, want the two halves of two", n)
		}
		if err := c.CheckWatches("foo", zkfake.WatcherTypeData); err == nil || err.Error() != marshalling {
			t.Errorf("CheckWatches on a malformed path: %v", err)
		}
		if err := c.CheckWatches("", zkfake.WatcherTypeAny); err != zkfake.ErrNoWatcher {
			t.Errorf("CheckWatches on the empty path: %v", err)
		}
		if err := c.CheckWatches("a/b", zkfake.WatcherTypeAny); err == nil || err.Error() != marshalling {
			t.Errorf("CheckWatches on a relative path beside a recursive watch: %v", err)
		}
		for _, p := range []string{"foo", ""} {
			if err := c.RemoveWatches(p, zkfake.WatcherTypeAny); err != nil {
				t.Errorf("RemoveWatches(%q): %v", p, err)
			}
		}
		if err := c.CheckWatches("a/b", zkfake.WatcherTypeAny); err != zkfake.ErrNoWatcher {
			t.Errorf("CheckWatches on a relative path, no recursive watch left: %v", err)
		}
	})
}

// A persistent watch's channel ends with EventNotWatching when the Conn
// closes or its session expires, after every event it had for its reader.
func TestPersistentChannelEnds(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, _ *zkfake.Conn) {
		ch, _ := c.AddWatch("/a", zkfake.AddWatchModePersistent)
		mustCreate(t, c, "/a", 0)
		c.Close()
		got, closed := received(ch)
		if wantEvents(t, "after Close", got, []string{ev(zk.EventNodeCreated, "/a"), describeEvent(zk.Event{Type: zk.EventNotWatching, Path: "/a", Err: zk.ErrClosing})}); !closed {
			t.Fatal("channel open after Close")
		}

		c, _, _ = srv.Connect(10 * time.Second)
		ch, _ = c.AddWatch("/a", zkfake.AddWatchModePersistentRecursive)
		srv.Expire(c.SessionID())
		got, closed = received(ch)
		if wantEvents(t, "after expiry", got, []string{describeEvent(zk.Event{Type: zk.EventNotWatching, Path: "/a", Err: zk.ErrSessionExpired})}); !closed {
			t.Fatal("channel open after expiry")
		}
	})
}

// A channel nobody reads holds its events without holding up the server,
// and Server.Close ends it, so that the bubble ends.
func TestUnreadPersistentChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, _, _ := srv.Connect(10 * time.Second)
		ch, _ := c.AddWatch("/", zkfake.AddWatchModePersistentRecursive)
		for i := range 100 {
			mustCreate(t, c, fmt.Sprintf("/n%d", i), 0)
		}
		first := <-ch
		if first.Type != zk.EventNodeCreated || first.Path != "/n0" {
			t.Fatalf("first event %+v", first)
		}
		srv.Close()
		for range ch {
		}
	})
}

// Create2 returns the stat of the node it made, from the same transaction:
// the stat Exists reads afterwards, with the create's zxid.
func TestCreate2(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, _ *zkfake.Conn) {
		path, stat, err := c.Create2("/a", []byte("xy"), 0, open, 0)
		if err != nil || path != "/a" {
			t.Fatalf("Create2 = %q, %v", path, err)
		}
		_, read, _ := c.Exists("/a")
		if *stat != *read || stat.Czxid != srv.Zxid() || stat.DataLength != 2 {
			t.Fatalf("Create2's stat %+v; Exists reads %+v; last zxid %d", *stat, *read, srv.Zxid())
		}
		path, stat, err = c.Create2("/a/s-", nil, zk.FlagEphemeralSequential, open, 0)
		if err != nil || path != "/a/s-0000000000" || stat.EphemeralOwner != c.SessionID() {
			t.Fatalf("sequential ephemeral Create2 = %q, %+v, %v", path, stat, err)
		}
		if _, _, err := c.Create2("/t", nil, zk.FlagTTL, open, time.Second); err != nil {
			t.Fatalf("TTL Create2: %v", err)
		}
		if _, _, err := c.Create2("/c", nil, zk.FlagContainer, open, 0); err != nil {
			t.Fatalf("container Create2: %v", err)
		}
		mustCreate(t, c, "/c/kid", 0)
		mustDelete(t, c, "/c/kid")
		time.Sleep(3 * time.Second)
		if exists(t, c, "/c") || exists(t, c, "/t") {
			t.Fatal("the container or the TTL node outlived the reaper")
		}
		for _, tc := range []struct {
			path  string
			flags int32
			ttl   time.Duration
			want  error
		}{
			{"/a", 0, 0, zk.ErrNodeExists},
			{"bad", 0, 0, zk.ErrBadArguments},
			{"/x", zk.FlagTTL, 0, zk.ErrBadArguments},
			{"/x", 99, 0, zk.ErrBadArguments},
			{"/missing/x", 0, 0, zk.ErrNoNode},
		} {
			if _, _, err := c.Create2(tc.path, nil, tc.flags, open, tc.ttl); err != tc.want {
				t.Errorf("Create2(%q, flags %d, ttl %v) = %v, want %v", tc.path, tc.flags, tc.ttl, err, tc.want)
			}
		}
	}, zkfake.WithContainerCheckInterval(time.Second))
}

// GetEphemerals lists the session's own ephemerals under a prefix taken as
// a plain string; blanks around "/" still mean all of them. A lagging
// follower answers from what it has applied.
func TestGetEphemerals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		c, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		other, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
		mustCreate(t, c, "/a", 0)
		mustCreate(t, c, "/e1", zk.FlagEphemeral)
		mustCreate(t, c, "/a/e2", zk.FlagEphemeral)
		mustCreate(t, other, "/oe", zk.FlagEphemeral)
		all := []string{"/a/e2", "/e1"}
		for prefix, want := range map[string][]string{
			"/": all, "": all, " ": all, " / ": all,
			"/a": {"/a/e2"}, "/a/": {"/a/e2"}, "/e": {"/e1"}, "foo": nil, " /a": nil,
		} {
			got, err := c.GetEphemerals(prefix)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("GetEphemerals(%q) = %q, %v; want %q", prefix, got, err, want)
			}
		}

		f, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
		mustCreate(t, f, "/f", zk.FlagEphemeral)
		srv.SetLagging(1, true)
		mustDelete(t, other, "/f")
		if got, _ := f.GetEphemerals("/"); !slices.Equal(got, []string{"/f"}) {
			t.Errorf("GetEphemerals on a member that has not applied the delete: %q, want [/f]", got)
		}
		srv.CatchUp(1)
		if got, _ := f.GetEphemerals("/"); len(got) != 0 {
			t.Errorf("GetEphemerals on the member caught up: %q, want none", got)
		}
	})
}

// GetAllChildrenNumber counts every node below a path; "/" counts all but
// the root, and "" — the root's other key on the server — all of them.
func TestGetAllChildrenNumber(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, _ *zkfake.Conn) {
		for _, p := range []string{"/a", "/a/x", "/a/x/y", "/a/z", "/b"} {
			mustCreate(t, c, p, 0)
		}
		if _, err := c.Create("/noread", nil, 0, zk.WorldACL(zk.PermAll&^zk.PermRead)); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			path string
			want int32
			err  error
		}{
			{"/a", 3, nil}, {"/a/x", 1, nil}, {"/b", 0, nil},
			{"/", 9, nil}, {"", 10, nil}, {"/zookeeper", 2, nil},
			{"/missing", 0, zk.ErrNoNode}, {"foo", 0, zk.ErrNoNode}, {"/a/", 0, zk.ErrNoNode},
			{"/noread", 0, zk.ErrNoAuth},
		} {
			if n, err := c.GetAllChildrenNumber(tc.path); n != tc.want || err != tc.err {
				t.Errorf("GetAllChildrenNumber(%q) = %d, %v; want %d, %v", tc.path, n, err, tc.want, tc.err)
			}
		}
	})
}

// WhoAmI lists the identities in the order of ZooKeeper 3.8's hash set:
// this order was read off the real server.
func TestWhoAmI(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, _ <-chan zk.Event, _ *zkfake.Conn) {
		got, err := c.WhoAmI()
		if want := []zkfake.ClientInfo{{"ip", "127.0.0.1"}}; err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("WhoAmI = %v, %v; want %v", got, err, want)
		}
		for _, auth := range []string{"bob:pw", "bob:pw", "alice:x:y", "nocolon"} {
			if err := c.AddAuth("digest", []byte(auth)); err != nil {
				t.Fatal(err)
			}
		}
		got, _ = c.WhoAmI()
		want := []zkfake.ClientInfo{{"digest", "bob"}, {"digest", "nocolon"}, {"digest", "alice"}, {"ip", "127.0.0.1"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("WhoAmI after AddAuth = %v, want %v", got, want)
		}
	})
}

// MultiRead answers each read on its own; it sets no watch and takes no
// zxid; write ops fail the whole request as the server fails them.
func TestMultiRead(t *testing.T) {
	inBubble(t, func(t *testing.T, srv *zkfake.Server, c *zkfake.Conn, events <-chan zk.Event, _ *zkfake.Conn) {
		mustCreate(t, c, "/a", 0)
		mustSet(t, c, "/a", "xy")
		mustCreate(t, c, "/a/k", 0)
		if _, err := c.Create("/noread", nil, 0, zk.WorldACL(zk.PermWrite)); err != nil {
			t.Fatal(err)
		}
		zxid := srv.Zxid()
		_, stat, _ := c.Get("/a")
		got, err := c.MultiRead(
			&zkfake.GetDataRequest{Path: "/a"},
			&zkfake.GetChildrenRequest{Path: "/a"},
			&zkfake.GetDataRequest{Path: "/missing"},
			&zkfake.GetChildrenRequest{Path: "/noread"},
			&zkfake.GetDataRequest{Path: "bad"},
			&zkfake.GetChildrenRequest{Path: ""},
		)
		if err != nil {
			t.Fatal(err)
		}
		want := []zkfake.MultiReadResponse{
			{Data: []byte("xy"), Stat: stat},
			{Children: []string{"k"}},
			{Error: zk.ErrNoNode},
			{Error: zk.ErrNoAuth},
			{Error: zk.ErrNoNode},
			{Children: []string{"a", "noread", "zookeeper"}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("MultiRead =\n%+v\nwant\n%+v", got, want)
		}
		if empty, err := c.MultiRead(); err != nil || len(empty) != 0 {
			t.Fatalf("empty MultiRead = %v, %v", empty, err)
		}
		if _, err := c.MultiRead(&zkfake.GetDataRequest{Path: "/a"}, &zk.CreateRequest{Path: "/b", Acl: open}); err == nil || err.Error() != "unknown error: -5" {
			t.Fatalf("MultiRead with a create: %v", err)
		}
		if _, err := c.MultiRead("/a"); err == nil || !strings.Contains(err.Error(), "unknown operation type") {
			t.Fatalf("MultiRead with a string: %v", err)
		}
		if srv.Zxid() != zxid || srv.TotalWatches() != 0 || exists(t, c, "/b") {
			t.Fatalf("MultiRead took a zxid (%d after %d), set a watch (%d) or created", srv.Zxid(), zxid, srv.TotalWatches())
		}
		mustSet(t, c, "/a", "z")
		if evs := nodeEvents(events); len(evs) != 0 {
			t.Fatalf("MultiRead set a watch: %q", evs)
		}
	})
}
