package zktest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var watchScenarios = []Scenario{
	{"watch/data-changed", "a data watch fires NodeDataChanged once, then its channel closes", watchDataChanged},
	{"watch/exists", "an exists watch fires NodeCreated on a missing node, NodeDataChanged or NodeDeleted on an existing one", watchExists},
	{"watch/children", "a child watch fires NodeChildrenChanged with the parent's path on child create and delete", watchChildren},
	{"watch/node-deleted-fans-out", "deleting a node fires its data, exists and child watches from one server event", watchNodeDeletedFansOut},
	{"watch/trigger-table", "a data write fires no child watch, a child create fires no data watch", watchTriggerTable},
	{"watch/one-shot", "a fired watch is gone; a new watch sees the next change", watchOneShot},
	{"watch/same-watch-twice", "setting the same watch twice gives two channels, both fire, one session event", watchSameWatchTwice},
	{"watch/session-channel", "watch events also arrive on the session's event channel, in zxid order", watchSessionChannel},
	{"watch/before-read", "the watch event arrives before the watcher can read the change", watchBeforeRead},
	{"watch/read-races-write", "a read's watch fires even as another session deletes the node: its event never comes ahead of the read's reply", watchReadRacesWrite},
	{"watch/own-write", "a session's own write fires its own watch", watchOwnWrite},
	{"watch/failed-write", "a failed write fires nothing", watchFailedWrite},
	{"watch/multi", "a multi fires the watches of all its ops", watchMulti},
	{"watch/missing-node", "GetW and ChildrenW on a missing node leave no watch behind", watchMissingNode},
}

func watchDataChanged(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", []byte("v0"), 0)
	data, st, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	wantEqual(t, "GetW data", string(data), "v0")
	wantEqual(t, "GetW version", st.Version, int32(0))
	set(t, other, p, []byte("v1"))
	wantEvent(t, "data watch", ch, watchEvent(zk.EventNodeDataChanged, p))
}

func watchExists(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/n"
	ok, _, created, err := c.ExistsW(p)
	wantErr(t, "ExistsW on a missing node", err, nil)
	wantEqual(t, "ExistsW", ok, false)
	create(t, other, p, nil, 0)
	wantEvent(t, "exists watch on a missing node", created, watchEvent(zk.EventNodeCreated, p))

	ok, _, changed, err := c.ExistsW(p)
	wantErr(t, "ExistsW on an existing node", err, nil)
	wantEqual(t, "ExistsW", ok, true)
	set(t, other, p, []byte("x"))
	wantEvent(t, "exists watch on a set", changed, watchEvent(zk.EventNodeDataChanged, p))

	_, _, deleted, err := c.ExistsW(p)
	wantErr(t, "ExistsW", err, nil)
	wantErr(t, "Delete", other.Delete(p, -1), nil)
	wantEvent(t, "exists watch on a delete", deleted, watchEvent(zk.EventNodeDeleted, p))
}

func watchChildren(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	children, st, ch, err := c.ChildrenW(base)
	wantErr(t, "ChildrenW", err, nil)
	wantEqual(t, "ChildrenW", children, []string{})
	wantEqual(t, "ChildrenW NumChildren", st.NumChildren, int32(0))
	child := create(t, other, base+"/c", nil, 0)
	wantEvent(t, "child watch on create", ch, watchEvent(zk.EventNodeChildrenChanged, base))
	_, _, ch, err = c.ChildrenW(base)
	wantErr(t, "ChildrenW", err, nil)
	wantErr(t, "Delete", other.Delete(child, -1), nil)
	wantEvent(t, "child watch on delete", ch, watchEvent(zk.EventNodeChildrenChanged, base))
}

func watchNodeDeletedFansOut(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	_, _, dataW, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	_, _, existsW, err := c.ExistsW(p)
	wantErr(t, "ExistsW", err, nil)
	_, _, childW, err := c.ChildrenW(p)
	wantErr(t, "ChildrenW", err, nil)
	drain(events)
	wantErr(t, "Delete", other.Delete(p, -1), nil)
	want := watchEvent(zk.EventNodeDeleted, p)
	wantEvent(t, "data watch", dataW, want)
	wantEvent(t, "exists watch", existsW, want)
	wantEvent(t, "child watch", childW, want)
	// ZooKeeper 3.8: one session watching a path several ways gets one NodeDeleted.
	wantEqual(t, "session event", waitEvent(t, "session channel", events), want)
	wantNoEvent(t, env, "session channel after the one NodeDeleted", events)
}

func watchTriggerTable(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	_, _, childW, err := c.ChildrenW(p)
	wantErr(t, "ChildrenW", err, nil)
	_, _, dataW, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	set(t, other, p, []byte("x"))
	wantEvent(t, "data watch on a set", dataW, watchEvent(zk.EventNodeDataChanged, p))
	wantNoEvent(t, env, "child watch on a set", childW)

	_, _, dataW, err = c.GetW(p)
	wantErr(t, "GetW", err, nil)
	create(t, other, p+"/c", nil, 0)
	wantEvent(t, "child watch on a child create", childW, watchEvent(zk.EventNodeChildrenChanged, p))
	wantNoEvent(t, env, "data watch on a child create", dataW)
	_, err = other.SetACL(p, OpenACL, -1)
	wantErr(t, "SetACL", err, nil)
	// ZooKeeper 3.8: SetACL triggers no watch.
	wantNoEvent(t, env, "data watch on SetACL", dataW)
}

func watchOneShot(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	_, _, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	drain(events)
	set(t, other, p, []byte("1"))
	wantEvent(t, "first change", ch, watchEvent(zk.EventNodeDataChanged, p))
	wantEqual(t, "session event", waitEvent(t, "session channel", events), watchEvent(zk.EventNodeDataChanged, p))
	set(t, other, p, []byte("2"))
	wantNoEvent(t, env, "session channel after a change nobody watches", events)
	data, _, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	wantEqual(t, "data", string(data), "2")
	set(t, other, p, []byte("3"))
	wantEvent(t, "renewed watch", ch, watchEvent(zk.EventNodeDataChanged, p))
}

func watchSameWatchTwice(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	_, _, first, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	_, _, second, err := c.GetW(p)
	wantErr(t, "GetW again", err, nil)
	if first == second {
		t.Fatalf("two GetW calls returned the same channel")
	}
	drain(events)
	set(t, other, p, []byte("x"))
	want := watchEvent(zk.EventNodeDataChanged, p)
	wantEvent(t, "first watch", first, want)
	wantEvent(t, "second watch", second, want)
	wantEqual(t, "session event", waitEvent(t, "session channel", events), want)
	wantNoEvent(t, env, "session channel after the one event", events)
}

func watchSessionChannel(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	a := create(t, c, base+"/a", nil, 0)
	b := create(t, c, base+"/b", nil, 0)
	for _, p := range []string{a, b} {
		if _, _, _, err := c.GetW(p); err != nil {
			t.Fatalf("GetW(%s) = %v", p, err)
		}
	}
	if _, _, _, err := c.ChildrenW(base); err != nil {
		t.Fatalf("ChildrenW = %v", err)
	}
	if _, _, _, err := c.ExistsW(base + "/c"); err != nil {
		t.Fatalf("ExistsW = %v", err)
	}
	drain(events)
	set(t, other, b, []byte("1"))
	create(t, other, base+"/c", nil, 0)
	wantErr(t, "Delete", other.Delete(a, -1), nil)
	want := []zk.Event{
		watchEvent(zk.EventNodeDataChanged, b),
		watchEvent(zk.EventNodeCreated, base+"/c"),
		watchEvent(zk.EventNodeChildrenChanged, base),
		watchEvent(zk.EventNodeDeleted, a),
	}
	var got []zk.Event
	for range want {
		got = append(got, waitEvent(t, "session channel", events))
	}
	// The create of c fires the exists watch on c and the child watch on
	// base; ZooKeeper 3.8 sends NodeCreated first.
	wantEqual(t, "session events in zxid order", got, want)
}

func watchBeforeRead(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", []byte("old"), 0)
	_, _, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	set(t, other, p, []byte("new"))
	deadline := time.Now().Add(eventWait)
	for {
		data, _, err := c.Get(p)
		wantErr(t, "Get", err, nil)
		if string(data) == "new" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never read the new data")
		}
		time.Sleep(time.Millisecond)
	}
	// ZooKeeper guarantees a client sees the watch event before the data that fired it.
	select {
	case ev := <-ch:
		wantEqual(t, "event", ev, watchEvent(zk.EventNodeDataChanged, p))
	default:
		t.Fatalf("read the new data before the watch event arrived")
	}
}

// raceRounds is how many times watchReadRacesWrite races a read against a
// write: the window it looks for is narrow, so it tries many times.
const raceRounds = 200

func watchReadRacesWrite(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	for i := range raceRounds {
		p := create(t, other, fmt.Sprintf("%s/r%d", env.Base(), i), nil, 0)
		deleted := make(chan error, 1)
		go func() { deleted <- other.Delete(p, -1) }()
		_, _, ch, err := c.GetW(p)
		if err == nil {
			// The read came first, so its watch fires with the delete: a
			// server that sent the event ahead of the read's reply would
			// lose it, the client not yet holding the watch.
			wantEvent(t, fmt.Sprintf("round %d: data watch set just before the delete", i), ch, watchEvent(zk.EventNodeDeleted, p))
		} else {
			wantErr(t, fmt.Sprintf("round %d: GetW just after the delete", i), err, zk.ErrNoNode)
		}
		wantErr(t, "Delete", <-deleted, nil)
	}
}

func watchOwnWrite(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	_, _, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, nil)
	set(t, c, p, []byte("mine"))
	// The event was sent before the Set's reply, so it is already there.
	select {
	case ev := <-ch:
		wantEqual(t, "event", ev, watchEvent(zk.EventNodeDataChanged, p))
	default:
		t.Fatalf("Set returned before the session's own watch fired")
	}
}

func watchFailedWrite(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	p := create(t, c, base+"/n", nil, 0)
	create(t, c, p+"/child", nil, 0)
	_, _, dataW, _ := c.GetW(p)
	_, _, childW, _ := c.ChildrenW(p)
	drain(events)
	_, err := other.Set(p, []byte("x"), 5)
	wantErr(t, "Set with a wrong version", err, zk.ErrBadVersion)
	wantErr(t, "Delete of a node with children", other.Delete(p, -1), zk.ErrNotEmpty)
	_, err = other.Create(p+"/child", nil, 0, OpenACL)
	wantErr(t, "Create of an existing child", err, zk.ErrNodeExists)
	_, err = other.Multi(&zk.CreateRequest{Path: p + "/new", Acl: OpenACL}, &zk.SetDataRequest{Path: p, Version: 9})
	wantErr(t, "failed Multi", err, zk.ErrBadVersion)
	wantNoEvent(t, env, "session channel after failed writes", events)
	wantNoEvent(t, env, "data watch after failed writes", dataW)
	wantNoEvent(t, env, "child watch after failed writes", childW)
}

func watchMulti(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	a := create(t, c, base+"/a", nil, 0)
	_, _, dataW, _ := c.GetW(a)
	_, _, existsW, _ := c.ExistsW(base + "/b")
	_, _, childW, _ := c.ChildrenW(base)
	_, err := other.Multi(
		&zk.SetDataRequest{Path: a, Data: []byte("x"), Version: -1},
		&zk.CreateRequest{Path: base + "/b", Acl: OpenACL},
	)
	wantErr(t, "Multi", err, nil)
	wantEvent(t, "data watch", dataW, watchEvent(zk.EventNodeDataChanged, a))
	wantEvent(t, "exists watch", existsW, watchEvent(zk.EventNodeCreated, base+"/b"))
	wantEvent(t, "child watch", childW, watchEvent(zk.EventNodeChildrenChanged, base))
}

func watchMissingNode(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/n"
	_, _, ch, err := c.GetW(p)
	wantErr(t, "GetW on a missing node", err, zk.ErrNoNode)
	if ch != nil {
		t.Fatalf("GetW on a missing node returned a channel")
	}
	_, _, ch, err = c.ChildrenW(p)
	wantErr(t, "ChildrenW on a missing node", err, zk.ErrNoNode)
	if ch != nil {
		t.Fatalf("ChildrenW on a missing node returned a channel")
	}
	drain(events)
	create(t, other, p, nil, 0)
	create(t, other, p+"/c", nil, 0)
	// ZooKeeper 3.8: getData and getChildren on a missing node register no watch.
	wantNoEvent(t, env, "session channel", events)
}
