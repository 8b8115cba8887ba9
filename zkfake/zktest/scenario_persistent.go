package zktest

import (
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake/jute"
)

// Persistent and recursive watches (addWatch), which go-zookeeper v1.0.4
// cannot set: the scenarios speak the protocol themselves (RawDialer).

var persistentScenarios = []Scenario{
	{"persistent/node", "a persistent watch fires every change of its node, children changed included, and survives the node's deletion", persistentNode},
	{"persistent/recursive", "a recursive watch fires for its node and every descendant, own writes included, never NodeChildrenChanged", persistentRecursive},
	{"persistent/shared-entry", "a one-shot and a persistent watch of a session on a path share one entry per table: the last set decides", persistentSharedEntry},
	{"persistent/remove-half", "removing a persistent watch's data or child half leaves the other half firing", persistentRemoveHalf},
	{"persistent/reconnect", "setWatches2 re-arms persistent watches without firing what changed while the client was away", persistentReconnect},
	{"persistent/bad-mode", "addWatch with an unknown mode is MarshallingError and takes any path, which checkWatches cannot always walk", persistentBadMode},
}

// addWatch sets a watch of mode on the base's path p, failing the test if
// the server refuses it. The reply carries an ErrorResponse of 0.
func addWatch(t testing.TB, s *rawSession, path string, mode int32) {
	t.Helper()
	rep := s.call(jute.OpAddWatch, func(w *jute.Writer) {
		w.String(path)
		w.Int32(mode)
	})
	wantCode(t, "addWatch "+path, rep.code, jute.CodeOK)
	if err := rep.body.Int32(); rep.body.Err() != nil || err != 0 || rep.body.Len() != 0 {
		t.Fatalf("addWatch's reply body: err %d (%v), %d bytes more; want an ErrorResponse of 0", err, rep.body.Err(), rep.body.Len())
	}
}

// rawPair opens two raw sessions for a scenario, and returns them with
// the scenario's base.
func rawPair(t *testing.T, env Env) (c, o *rawSession, base string) {
	t.Helper()
	return rawConnect(t, env, 4*time.Second), rawConnect(t, env, 4*time.Second), env.Base()
}

// changeBelow makes the changes the persistent scenarios watch: root
// created and changed, a child created and changed, a grandchild created
// and deleted, the child deleted.
func (s *rawSession) changeBelow(root string) {
	s.t.Helper()
	for _, step := range []struct {
		op   int32
		path string
	}{
		{jute.OpCreate, root}, {jute.OpSetData, root},
		{jute.OpCreate, root + "/c"}, {jute.OpSetData, root + "/c"},
		{jute.OpCreate, root + "/c/d"}, {jute.OpDelete, root + "/c/d"},
		{jute.OpDelete, root + "/c"},
	} {
		var code int32
		switch step.op {
		case jute.OpCreate:
			_, code = s.create(step.path, nil, 0)
		case jute.OpSetData:
			_, code = s.setData(step.path, []byte("x"))
		default:
			code = s.delete(step.path)
		}
		wantCode(s.t, "a change below "+root, code, jute.CodeOK)
	}
}

func persistentNode(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	addWatch(t, c, b+"/p", jute.AddWatchPersistent)
	o.changeBelow(b + "/p")
	o.delete(b + "/p")
	o.create(b+"/p", nil, 0)
	wantEvents(t, "a persistent watch's events", rawEvents(c, env),
		"EventNodeCreated /p", "EventNodeDataChanged /p",
		"EventNodeChildrenChanged /p", "EventNodeChildrenChanged /p",
		// ZooKeeper 3.8: the watch outlives its node and fires again
		// when the node comes back.
		"EventNodeDeleted /p", "EventNodeCreated /p")
}

func persistentRecursive(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	addWatch(t, c, b+"/r", jute.AddWatchPersistentRecursive)
	o.changeBelow(b + "/r")
	o.create(b+"/rx", nil, 0) // a sibling, not a descendant
	c.create(b+"/r/own", nil, 0)
	wantEvents(t, "a recursive watch's events", rawEvents(c, env),
		"EventNodeCreated /r", "EventNodeDataChanged /r",
		"EventNodeCreated /r/c", "EventNodeDataChanged /r/c",
		"EventNodeCreated /r/c/d", "EventNodeDeleted /r/c/d",
		"EventNodeDeleted /r/c", "EventNodeCreated /r/own")
}

func persistentSharedEntry(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	o.create(b+"/first", nil, 0)
	o.create(b+"/last", nil, 0)
	// A getData watch, then a persistent watch: the data table's entry is
	// persistent.
	c.read(jute.OpGetData, b+"/first", true)
	addWatch(t, c, b+"/first", jute.AddWatchPersistent)
	// ZooKeeper 3.8: a persistent watch, then a getData watch: the data
	// table's entry is one-shot again (WatcherModeManager keeps one mode
	// per session and path), while the child table's stays persistent.
	addWatch(t, c, b+"/last", jute.AddWatchPersistent)
	c.read(jute.OpGetData, b+"/last", true)
	for _, p := range []string{"/first", "/last"} {
		o.setData(b+p, []byte("1"))
		o.setData(b+p, []byte("2"))
		o.create(b+p+"/c", nil, 0)
		o.delete(b + p + "/c")
	}
	wantEvents(t, "events", rawEvents(c, env),
		"EventNodeDataChanged /first", "EventNodeDataChanged /first",
		"EventNodeChildrenChanged /first", "EventNodeChildrenChanged /first",
		"EventNodeDataChanged /last",
		"EventNodeChildrenChanged /last", "EventNodeChildrenChanged /last")
}

func persistentRemoveHalf(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	o.create(b+"/p", nil, 0)
	addWatch(t, c, b+"/p", jute.AddWatchPersistent)
	addWatch(t, c, b+"/r", jute.AddWatchPersistentRecursive)
	wantCode(t, "removeWatches of /p's data half", c.watchCall(jute.OpRemoveWatches, b+"/p", jute.WatcherData), jute.CodeOK)
	wantCode(t, "removeWatches of /r's data half", c.watchCall(jute.OpRemoveWatches, b+"/r", jute.WatcherData), jute.CodeOK)
	o.setData(b+"/p", []byte("x"))
	o.create(b+"/p/k", nil, 0)
	o.delete(b + "/p/k")
	o.create(b+"/r", nil, 0)
	o.create(b+"/r/q", nil, 0)
	o.setData(b+"/r/q", []byte("x"))
	o.delete(b + "/r/q")
	wantEvents(t, "events of the child halves", rawEvents(c, env),
		"EventNodeChildrenChanged /p", "EventNodeChildrenChanged /p",
		// ZooKeeper 3.8: the child table hears of deletions too, and its
		// recursive half fires for a descendant's.
		"EventNodeDeleted /r/q")
	wantCode(t, "removeWatches of the rest of /p", c.watchCall(jute.OpRemoveWatches, b+"/p", jute.WatcherAny), jute.CodeOK)
	wantCode(t, "removeWatches of the rest of /r", c.watchCall(jute.OpRemoveWatches, b+"/r", jute.WatcherChildren), jute.CodeOK)
	wantCode(t, "removeWatches of /r again", c.watchCall(jute.OpRemoveWatches, b+"/r", jute.WatcherAny), jute.CodeNoWatcher)
	o.delete(b + "/p")
	o.delete(b + "/r")
	wantEvents(t, "events once removed", rawEvents(c, env))
}

func persistentReconnect(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	o.create(b+"/q", nil, 0)
	addWatch(t, c, b+"/q", jute.AddWatchPersistent)
	addWatch(t, c, b+"/qr", jute.AddWatchPersistentRecursive)
	c.drop()
	// The server drops the connection's watches once it sees it closed;
	// a write's reply comes after that on a quiet server.
	o.create(b+"/marker", nil, 0)
	o.setData(b+"/q", []byte("while away"))
	o.create(b+"/qr", nil, 0)
	o.create(b+"/q/kid", nil, 0)
	c.reconnect(rawWatches{persistent: []string{b + "/q"}, recursive: []string{b + "/qr"}})
	// ZooKeeper 3.8: setWatches2 re-arms persistent watches and fires
	// nothing for them (DataTree.setWatches), where a one-shot watch
	// fires at once for what it missed.
	wantEvents(t, "events after the reconnect", rawEvents(c, env))
	o.setData(b+"/q", []byte("after"))
	o.create(b+"/qr/x", nil, 0)
	wantEvents(t, "events of changes after the reconnect", rawEvents(c, env),
		"EventNodeDataChanged /q", "EventNodeCreated /qr/x")

	// A one-shot data watch re-armed beside a persistent one on the same
	// path fires for what it missed, and leaves the entry persistent.
	c.drop()
	o.create(b+"/marker2", nil, 0)
	o.setData(b+"/q", []byte("again"))
	c.reconnect(rawWatches{data: []string{b + "/q"}, persistent: []string{b + "/q"}})
	wantEvents(t, "events after a reconnect with a data watch too", rawEvents(c, env), "EventNodeDataChanged /q")
	o.setData(b+"/q", []byte("1"))
	o.setData(b+"/q", []byte("2"))
	wantEvents(t, "events after", rawEvents(c, env), "EventNodeDataChanged /q", "EventNodeDataChanged /q")
}

func persistentBadMode(t *testing.T, env Env) {
	c := rawConnect(t, env, 4*time.Second)
	b := env.Base()
	for _, mode := range []int32{2, -1} {
		// ZooKeeper 3.8: WatcherMode.fromZooDef throws on an unknown mode.
		wantCode(t, "addWatch with an unknown mode", c.watchCall(jute.OpAddWatch, b+"/m", mode), jute.CodeMarshallingError)
	}
	wantCode(t, "checkWatches after the refusals", c.watchCall(jute.OpCheckWatches, b+"/m", jute.WatcherAny), jute.CodeNoWatcher)
	// ZooKeeper 3.8: addWatch checks no path; the Java client does.
	wantCode(t, "addWatch on a malformed path", c.watchCall(jute.OpAddWatch, "foo", jute.AddWatchPersistent), jute.CodeOK)
	wantCode(t, "addWatch on the empty path", c.watchCall(jute.OpAddWatch, "", jute.AddWatchPersistentRecursive), jute.CodeOK)
	// ZooKeeper 3.8: checkWatches walks the path with an iterator that
	// throws on a path with no '/', and sees no element in "", so neither
	// watch is found; removeWatches looks the path up as it is.
	wantCode(t, "checkWatches on the malformed path", c.watchCall(jute.OpCheckWatches, "foo", jute.WatcherData), jute.CodeMarshallingError)
	wantCode(t, "checkWatches on the empty path", c.watchCall(jute.OpCheckWatches, "", jute.WatcherAny), jute.CodeNoWatcher)
	// With a recursive watch set, the walk goes up from a relative path
	// until it throws.
	wantCode(t, "checkWatches on a relative path", c.watchCall(jute.OpCheckWatches, "a/b", jute.WatcherChildren), jute.CodeMarshallingError)
	wantCode(t, "removeWatches on the malformed path", c.watchCall(jute.OpRemoveWatches, "foo", jute.WatcherAny), jute.CodeOK)
	wantCode(t, "removeWatches on the empty path", c.watchCall(jute.OpRemoveWatches, "", jute.WatcherData), jute.CodeOK)
	// The child half of the recursive watch on "" is left, the data half
	// is gone: the walk goes up in the child table only.
	wantCode(t, "checkWatches on a relative path, child table", c.watchCall(jute.OpCheckWatches, "a/b", jute.WatcherChildren), jute.CodeMarshallingError)
	wantCode(t, "checkWatches on a relative path, data table", c.watchCall(jute.OpCheckWatches, "a/b", jute.WatcherData), jute.CodeNoWatcher)
	wantCode(t, "exists on the same connection", c.read(jute.OpExists, b, false).code, jute.CodeOK)
}
