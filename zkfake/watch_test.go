package zkfake

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// These tests drive the watch rules as pure functions on the core's plain
// data — a state, a view, a list of watches — with no Server, lock, timer
// or channel, as etcd raft's paper tests drive Step.

// testSession is the one session of a core made by newCore.
const testSession = 1

// newCore returns a bare state holding the given paths, created in order,
// and one session, testSession.
func newCore(t *testing.T, paths ...string) *state {
	t.Helper()
	st := newState(false, 0)
	st.createSession(testSession, 10_000)
	for _, p := range paths {
		if _, err := runWrite(st, createAt(p)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	return st
}

// runWrite runs op as one write transaction of testSession and returns the
// watches it fired.
func runWrite(st *state, op func(st *state, ctx writeCtx) error) ([]notification, error) {
	ctx := st.begin(testSession, 0)
	if err := op(st, ctx); err != nil {
		st.rollback()
		return nil, err
	}
	return st.commit(), nil
}

// kindName names a kind of client watch by the calls that set it, for
// test messages.
func kindName(k watchType) string {
	switch k {
	case watchData:
		return "data (GetW, ExistsW on a node)"
	case watchExist:
		return "exist (ExistsW on no node)"
	case watchChild:
		return "child (ChildrenW)"
	}
	return fmt.Sprintf("watchType(%d)", k)
}

func createAt(path string) func(st *state, ctx writeCtx) error {
	return func(st *state, ctx writeCtx) error {
		_, _, err := st.create(ctx, createOp{path: path, acl: zk.WorldACL(zk.PermAll), ttl: -1})
		return err
	}
}

func deleteAt(path string) func(st *state, ctx writeCtx) error {
	return func(st *state, ctx writeCtx) error { return st.delete(ctx, path, -1) }
}

func setDataAt(path string) func(st *state, ctx writeCtx) error {
	return func(st *state, ctx writeCtx) error {
		_, err := st.setData(ctx, path, []byte("x"), -1)
		return err
	}
}

// The table go-zookeeper's recvLoop uses, in its order; session and
// NotWatching events fire no watch channel.
func TestKindsFiredByIsGoZookeepersTable(t *testing.T) {
	tests := []struct {
		event zk.EventType
		want  []watchType
	}{
		{zk.EventNodeCreated, []watchType{watchExist}},
		{zk.EventNodeDataChanged, []watchType{watchExist, watchData}},
		{zk.EventNodeChildrenChanged, []watchType{watchChild}},
		{zk.EventNodeDeleted, []watchType{watchExist, watchData, watchChild}},
		{zk.EventSession, nil},
		{zk.EventNotWatching, nil},
	}
	for _, tt := range tests {
		if got := kindsFiredBy(tt.event); !slices.Equal(got, tt.want) {
			t.Errorf("kindsFiredBy(%v) = %v, want %v", tt.event, got, tt.want)
		}
	}
}

// Whenever the server fires a watch, the event it sends fires the client's
// channel of the kind the call set: no channel is left waiting on a watch
// the server has used up. Every watching call, on every starting tree,
// against every write that can touch the watched node, on the core alone.
func TestEveryFiredWatchFiresItsClientChannel(t *testing.T) {
	trees := [][]string{{}, {"/n"}, {"/n", "/n/c"}}
	// Each call sets its watch on /n as api.go does, and returns the kind
	// of channel the client hands out; false if it set none.
	calls := []struct {
		name string
		set  func(st *state, v view) (watchType, bool)
	}{
		{"GetW", func(st *state, v view) (watchType, bool) {
			_, err := st.getData(v, testSession, "/n", true)
			return watchData, err == nil
		}},
		{"ExistsW", func(st *state, v view) (watchType, bool) {
			_, err := st.exists(v, testSession, "/n", true)
			if err == zk.ErrNoNode {
				return watchExist, true
			}
			return watchData, err == nil
		}},
		{"ChildrenW", func(st *state, v view) (watchType, bool) {
			_, err := st.getChildren(v, testSession, "/n", true)
			return watchChild, err == nil
		}},
	}
	writes := []struct {
		name string
		op   func(st *state, ctx writeCtx) error
	}{
		{"create /n", createAt("/n")},
		{"setData /n", setDataAt("/n")},
		{"delete /n", deleteAt("/n")},
		{"create /n/d", createAt("/n/d")},
		{"delete /n/c", deleteAt("/n/c")},
	}
	firedKinds := map[watchType]bool{}
	for _, tree := range trees {
		for _, call := range calls {
			for _, w := range writes {
				name := fmt.Sprintf("tree %v, %s, %s", tree, call.name, w.name)
				st := newCore(t, tree...)
				kind, set := call.set(st, view{st.tree, st.watches})
				if !set {
					continue
				}
				ns, err := runWrite(st, w.op)
				if err != nil {
					continue
				}
				if len(ns) > 1 {
					t.Errorf("%s: %d events for one watch: %v", name, len(ns), ns)
				}
				for _, n := range ns {
					if n.session != testSession || n.event.Path != "/n" {
						t.Errorf("%s: event %+v for session %d, want one on /n for %d", name, n.event, n.session, testSession)
						continue
					}
					if !slices.Contains(kindsFiredBy(n.event.Type), kind) {
						t.Errorf("%s: the server fired the watch with %v, which leaves the client's %s channel waiting", name, n.event.Type, kindName(kind))
					}
					firedKinds[kind] = true
				}
			}
		}
	}
	for _, k := range []watchType{watchData, watchExist, watchChild} {
		if !firedKinds[k] {
			t.Errorf("no case fired a %s watch", kindName(k))
		}
	}
}

// A re-armed watch fires at once for what its client missed, judged by the
// node's zxids against the last zxid the client saw: ZooKeeper's
// DataTree.setWatches, one watch at a time.
func TestMissedEvent(t *testing.T) {
	const last = 5
	none := zk.EventType(0)
	tests := []struct {
		name string
		kind watchType
		node *znode // nil: no node at the path
		want zk.EventType
	}{
		{"data watch, node gone", watchData, nil, zk.EventNodeDeleted},
		{"data watch, data seen", watchData, &znode{mzxid: last, pzxid: last}, none},
		{"data watch, data changed since", watchData, &znode{mzxid: last + 1, pzxid: last}, zk.EventNodeDataChanged},
		{"data watch, only children changed", watchData, &znode{mzxid: last, pzxid: last + 4}, none},
		{"exist watch, still no node", watchExist, nil, none},
		{"exist watch, node there", watchExist, &znode{mzxid: last + 1, pzxid: last + 1}, zk.EventNodeCreated},
		// The client saw no node, so it learns of one whatever its zxids.
		{"exist watch, node older than the client's zxid", watchExist, &znode{mzxid: 1, pzxid: 1}, zk.EventNodeCreated},
		{"child watch, node gone", watchChild, nil, zk.EventNodeDeleted},
		{"child watch, children seen", watchChild, &znode{mzxid: last, pzxid: last}, none},
		{"child watch, children changed since", watchChild, &znode{mzxid: last, pzxid: last + 1}, zk.EventNodeChildrenChanged},
		{"child watch, only data changed", watchChild, &znode{mzxid: last + 4, pzxid: last}, none},
	}
	for _, tt := range tests {
		got, fired := missedEvent(tt.kind, tt.node, last)
		if !fired {
			got = none
		}
		if fired != (tt.want != none) || got != tt.want {
			t.Errorf("%s: missedEvent fires %s, want %s", tt.name, eventName(got), eventName(tt.want))
		}
	}
}

// setWatches on the core: a client that saw the tree up to some zxid comes
// back, after writes it missed, with watches listed in no order. The missed
// ones fire in the order of go-zookeeper's SetWatches lists (data, exist,
// child; each by path); the rest are set again in the table of their kind.
// Asked with a last-seen zxid past every write, only the nodes that came
// or went fire.
func TestSetWatchesFiresWhatTheClientMissed(t *testing.T) {
	st := newCore(t, "/same", "/data", "/kids", "/gone")
	seen := st.zxid
	for _, op := range []func(st *state, ctx writeCtx) error{
		setDataAt("/data"), createAt("/kids/k"), deleteAt("/gone"), createAt("/new"),
	} {
		if _, err := runWrite(st, op); err != nil {
			t.Fatal(err)
		}
	}
	keys := []watchKey{
		{"/same", watchChild}, {"/new", watchExist}, {"/kids", watchData}, {"/gone", watchChild},
		{"/data", watchData}, {"/kids", watchChild}, {"/never", watchExist}, {"/same", watchData},
		{"/data", watchChild}, {"/gone", watchData},
	}
	type armed struct {
		data, child []string
	}
	tests := []struct {
		lastZxid int64
		fired    []zk.Event
		armed    armed
	}{
		{seen, []zk.Event{
			watchEvent(zk.EventNodeDataChanged, "/data"),
			watchEvent(zk.EventNodeDeleted, "/gone"),
			watchEvent(zk.EventNodeCreated, "/new"),
			watchEvent(zk.EventNodeDeleted, "/gone"),
			watchEvent(zk.EventNodeChildrenChanged, "/kids"),
		}, armed{data: []string{"/kids", "/never", "/same"}, child: []string{"/data", "/same"}}},
		{st.zxid, []zk.Event{
			watchEvent(zk.EventNodeDeleted, "/gone"),
			watchEvent(zk.EventNodeCreated, "/new"),
			watchEvent(zk.EventNodeDeleted, "/gone"),
		}, armed{data: []string{"/data", "/kids", "/never", "/same"}, child: []string{"/data", "/kids", "/same"}}},
	}
	for _, tt := range tests {
		v := view{st.tree, newWatchTable()}
		ns := v.setWatches(testSession, tt.lastZxid, slices.Clone(keys))
		var fired []zk.Event
		for _, n := range ns {
			if n.session != testSession || n.acl != nil {
				t.Errorf("last zxid %d: notification %+v, want one for session %d with no ACL check", tt.lastZxid, n, testSession)
			}
			fired = append(fired, n.event)
		}
		if !slices.Equal(fired, tt.fired) {
			t.Errorf("last zxid %d: fired %v, want %v", tt.lastZxid, fired, tt.fired)
		}
		got := armed{data: watchedPaths(v.watches.data), child: watchedPaths(v.watches.child)}
		if !slices.Equal(got.data, tt.armed.data) || !slices.Equal(got.child, tt.armed.child) {
			t.Errorf("last zxid %d: set again %+v, want %+v", tt.lastZxid, got, tt.armed)
		}
	}
}

// watchedPaths lists, sorted, the paths testSession watches in table, and
// only those: it fails the comparison if any other session is there.
func watchedPaths(table watchSet) []string {
	var paths []string
	for path, set := range table.paths {
		if _, ok := set[testSession]; ok && len(set) == 1 {
			paths = append(paths, path)
		} else {
			paths = append(paths, fmt.Sprintf("%s (sessions %v)", path, set))
		}
	}
	slices.Sort(paths)
	return paths
}

// eventName names an event type for TestMissedEvent, the zero type as no
// event.
func eventName(t zk.EventType) string {
	if t == 0 {
		return "no event"
	}
	return t.String()
}

// TestPersistentWatchTriggers drives ZooKeeper 3.8's trigger rules for
// persistent watches (WatchManager.triggerWatch) on the bare core: which
// session hears what of each write, and which watches stay.
func TestPersistentWatchTriggers(t *testing.T) {
	const other = testSession + 1
	st := newCore(t)
	st.createSession(other, 10_000)
	v := view{st.tree, st.watches}
	if err := v.addWatch(testSession, "/a", addWatchPersistent); err != nil {
		t.Fatal(err)
	}
	if err := v.addWatch(other, "/a", addWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	// A one-shot child watch beside the other session's recursive one on
	// "/": its NodeChildrenChanged comes once, and recursive watches on
	// ancestors add nothing to a session already told.
	st.watches.child.add("/", other, modeStandard)
	type heard struct {
		session int64
		event   string
	}
	steps := []struct {
		op   func(st *state, ctx writeCtx) error
		want []heard
	}{
		{createAt("/a"), []heard{{testSession, "EventNodeCreated /a"}, {other, "EventNodeCreated /a"}, {other, "EventNodeChildrenChanged /"}}},
		{createAt("/a/b"), []heard{{other, "EventNodeCreated /a/b"}, {testSession, "EventNodeChildrenChanged /a"}}},
		{createAt("/a/b/c"), []heard{{other, "EventNodeCreated /a/b/c"}}},
		{setDataAt("/a/b/c"), []heard{{other, "EventNodeDataChanged /a/b/c"}}},
		{setDataAt("/a"), []heard{{testSession, "EventNodeDataChanged /a"}, {other, "EventNodeDataChanged /a"}}},
		{deleteAt("/a/b/c"), []heard{{other, "EventNodeDeleted /a/b/c"}}},
		{deleteAt("/a/b"), []heard{{other, "EventNodeDeleted /a/b"}, {testSession, "EventNodeChildrenChanged /a"}}},
		{deleteAt("/a"), []heard{{testSession, "EventNodeDeleted /a"}, {other, "EventNodeDeleted /a"}}},
		{createAt("/ab"), nil},
		{createAt("/a"), []heard{{testSession, "EventNodeCreated /a"}, {other, "EventNodeCreated /a"}}},
	}
	for i, step := range steps {
		ns, err := runWrite(st, step.op)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got []heard
		for _, n := range ns {
			got = append(got, heard{n.session, n.event.Type.String() + " " + n.event.Path})
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("step %d: heard %v, want %v", i, got, step.want)
		}
	}
	// The persistent watches stayed, two halves each; the one-shot one went.
	if n := st.watches.total(); n != 4 {
		t.Errorf("%d watches left, want 4", n)
	}
	if got := st.watches.data.recursive["/a"]; got != 1 {
		t.Errorf("recursive count on /a: %d, want 1", got)
	}
	if !v.removeWatchesOK(t, other, "/a", watcherAny) || len(st.watches.data.recursive)+len(st.watches.child.recursive) != 0 {
		t.Errorf("recursive counts after removal: %v, %v", st.watches.data.recursive, st.watches.child.recursive)
	}
}

func (v view) removeWatchesOK(t *testing.T, session int64, path string, typ int32) bool {
	t.Helper()
	if err := v.removeWatches(session, path, typ); err != nil {
		t.Errorf("removeWatches(%s, %d): %v", path, typ, err)
		return false
	}
	return true
}
