package zktest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// ZooKeeper 3.8's requests that go-zookeeper v1.0.4 cannot send: the
// scenarios speak the protocol themselves, on a connection the Env dials
// (RawDialer), and skip on a target that has none. The in-process fake
// answers the same requests through its Conn's extra methods, tested in
// package zkfake.

var opsScenarios = []Scenario{
	{"ops/create2", "create2 answers with the path and the new node's stat from the same transaction; bad flags and paths are BadArguments", opsCreate2},
	{"ops/get-ephemerals", "getEphemerals lists the session's own ephemerals under a plain string prefix; blanks or / alone mean all", opsGetEphemerals},
	{"ops/get-all-children-number", "getAllChildrenNumber counts the nodes below a path at every depth; NoNode, NoAuth; \"\" is the root counted with itself", opsGetAllChildrenNumber},
	{"ops/whoami", "whoAmI lists the session's ip and digest identities, in the order of the server's hash set", opsWhoAmI},
	{"ops/multi-read", "multiRead answers each getData and getChildren on its own, sets no watch, and refuses writes with MarshallingError", opsMultiRead},
	{"ops/check-watches", "checkWatches finds a watch of any session on the path, none under a recursive one; bad types are MarshallingError", opsCheckWatches},
	{"ops/remove-watches", "removeWatches removes only the session's own watches of a type, sends no event, NoWatcher when there is none", opsRemoveWatches},
}

func wantCode(t testing.TB, what string, got, want int32) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: code %d; want %d", what, got, want)
	}
}

// rawEvents returns the notifications s receives until none comes for the
// quiet period, as "Type path" with the base cut from the path.
func rawEvents(s *rawSession, env Env) []string {
	s.t.Helper()
	var out []string
	for {
		ev, ok := s.nextEvent(quietPeriod(env))
		if !ok {
			return out
		}
		out = append(out, ev.Type.String()+" "+strings.TrimPrefix(ev.Path, env.Base()))
	}
}

func wantEvents(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func opsCreate2(t *testing.T, env Env) {
	c := rawConnect(t, env, 4*time.Second)
	b := env.Base()
	before := time.Now()
	p, st, code := c.create2(jute.OpCreate2, b+"/a", []byte("xy"), 0, 0)
	after := time.Now()
	wantCode(t, "create2", code, jute.CodeOK)
	wantEqual(t, "create2's path", p, b+"/a")
	if st.Czxid != st.Mzxid || st.Czxid != st.Pzxid || st.Version != 0 || st.DataLength != 2 || st.NumChildren != 0 || st.EphemeralOwner != 0 {
		t.Fatalf("create2's stat %+v; want a new node's", st)
	}
	wantMillisNear(t, "create2's Ctime", st.Ctime, before, after)
	rep := c.read(jute.OpExists, b+"/a", false)
	wantCode(t, "exists after create2", rep.code, jute.CodeOK)
	wantStat(t, "create2's stat against exists'", &st, rep.body.Stat())

	p, st, code = c.create2(jute.OpCreate2, b+"/a/s-", nil, zk.FlagEphemeralSequential, 0)
	wantCode(t, "ephemeral sequential create2", code, jute.CodeOK)
	wantEqual(t, "its path", p, b+"/a/s-0000000000")
	wantEqual(t, "its EphemeralOwner", st.EphemeralOwner, c.id)
	// createContainer and createTTL answer with the same record.
	for _, tc := range []struct {
		op    int32
		flags int32
		ttl   int64
	}{{jute.OpCreateContainer, zk.FlagContainer, 0}, {jute.OpCreateTTL, zk.FlagTTL, 60_000}} {
		p, st, code = c.create2(tc.op, b+"/kind", nil, tc.flags, tc.ttl)
		wantCode(t, "create2-style create", code, jute.CodeOK)
		if p != b+"/kind" || st.Czxid == 0 || st.EphemeralOwner != 0 {
			t.Fatalf("op %d: %q, %+v", tc.op, p, st)
		}
		wantCode(t, "delete", c.delete(b+"/kind"), jute.CodeOK)
	}
	for _, tc := range []struct {
		what  string
		path  string
		flags int32
		want  int32
	}{
		{"an existing node", b + "/a", 0, jute.CodeNodeExists},
		{"a missing parent", b + "/none/a", 0, jute.CodeNoNode},
		{"a malformed path", "bad", 0, jute.CodeBadArguments},
		// ZooKeeper 3.8: create2 carries no TTL, and a TTL mode needs one.
		{"a TTL mode", b + "/t", zk.FlagTTL, jute.CodeBadArguments},
		{"flags naming no mode", b + "/f", 99, jute.CodeBadArguments},
	} {
		_, _, code := c.create2(jute.OpCreate2, tc.path, nil, tc.flags, 0)
		wantCode(t, "create2 of "+tc.what, code, tc.want)
	}
}

func opsGetEphemerals(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	for _, n := range []struct {
		s     *rawSession
		path  string
		flags int32
	}{{c, "/a", 0}, {c, "/e1", zk.FlagEphemeral}, {c, "/a/e2", zk.FlagEphemeral}, {o, "/oe", zk.FlagEphemeral}} {
		if _, code := n.s.create(b+n.path, nil, n.flags); code != jute.CodeOK {
			t.Fatalf("create %s: code %d", n.path, code)
		}
	}
	all := []string{b + "/a/e2", b + "/e1"}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"/", all}, {"", all}, {" ", all}, {" / ", all}, {b, all},
		{b + "/a", all[:1]}, {b + "/a/", all[:1]}, {b + "/e", all[1:]},
		// ZooKeeper 3.8: the prefix is a plain string, trimmed only to
		// see whether it means all.
		{"foo", nil}, {" " + b, nil},
	} {
		got, code := c.getEphemerals(tc.prefix)
		wantCode(t, "getEphemerals", code, jute.CodeOK)
		// ZooKeeper 3.8 lists them in its hash set's order.
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("getEphemerals(%q) = %q; want %q", tc.prefix, got, tc.want)
		}
	}
}

func opsGetAllChildrenNumber(t *testing.T, env Env) {
	c := rawConnect(t, env, 4*time.Second)
	b := env.Base()
	all0, code := c.getAllChildrenNumber("/")
	wantCode(t, "getAllChildrenNumber(/)", code, jute.CodeOK)
	for _, p := range []string{"/a", "/a/x", "/a/x/y", "/a/z", "/b"} {
		if _, code := c.create(b+p, nil, 0); code != jute.CodeOK {
			t.Fatalf("create %s: code %d", p, code)
		}
	}
	c.createUnreadable(b + "/noread")
	if _, code := c.create(b+"/noread/k", nil, 0); code != jute.CodeOK {
		t.Fatalf("create /noread/k: code %d", code)
	}
	all, _ := c.getAllChildrenNumber("/")
	wantEqual(t, "getAllChildrenNumber(/) after 7 creates", all, all0+7)
	for _, tc := range []struct {
		path string
		n    int32
		code int32
	}{
		{b, 7, jute.CodeOK}, {b + "/a", 3, jute.CodeOK}, {b + "/a/x", 1, jute.CodeOK}, {b + "/b", 0, jute.CodeOK},
		{"/zookeeper", 2, jute.CodeOK},
		// ZooKeeper 3.8: its tree keys the root by "" too, and counts
		// every key below "", the root's "/" among them.
		{"", all + 1, jute.CodeOK},
		{b + "/missing", 0, jute.CodeNoNode}, {"foo", 0, jute.CodeNoNode}, {b + "/a/", 0, jute.CodeNoNode},
		{b + "/noread", 0, jute.CodeNoAuth},
	} {
		n, code := c.getAllChildrenNumber(tc.path)
		if n != tc.n || code != tc.code {
			t.Fatalf("getAllChildrenNumber(%q) = %d, code %d; want %d, code %d", tc.path, n, code, tc.n, tc.code)
		}
	}
	c.openACL(b + "/noread")
}

func opsWhoAmI(t *testing.T, env Env) {
	c := rawConnect(t, env, 4*time.Second)
	got, code := c.whoAmI()
	wantCode(t, "whoAmI", code, jute.CodeOK)
	wantEqual(t, "whoAmI", got, []clientInfo{{"ip", "127.0.0.1"}})
	for _, auth := range []string{"bob:pw", "bob:pw", "alice:x:y", "nocolon"} {
		wantCode(t, "addAuth "+auth, c.addAuth("digest", auth), jute.CodeOK)
	}
	got, _ = c.whoAmI()
	// ZooKeeper 3.8: the digest user is the id up to its first colon, an
	// identity added twice is there once, and the list comes in the order
	// of the connection's hash set (a ConcurrentHashMap of Id records),
	// not in the order they were added.
	wantEqual(t, "whoAmI after addAuth", got, []clientInfo{{"digest", "bob"}, {"digest", "nocolon"}, {"digest", "alice"}, {"ip", "127.0.0.1"}})
}

func opsMultiRead(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	c.create(b+"/a", []byte("xy"), 0)
	c.create(b+"/a/k", nil, 0)
	c.createUnreadable(b + "/noread")
	stat := c.read(jute.OpExists, b+"/a", false).body.Stat()
	got, code := c.multiRead([]readOp{
		{jute.OpGetData, b + "/a", true},
		{jute.OpGetChildren, b + "/a", true},
		{jute.OpGetData, b + "/missing", false},
		{jute.OpGetChildren, b + "/missing", false},
		{jute.OpGetData, b + "/noread", false},
		{jute.OpGetChildren, b + "/noread", false},
		{jute.OpGetData, "bad", false},
	})
	wantCode(t, "multiRead", code, jute.CodeOK)
	wantEqual(t, "multiRead's results", got, []readResult{
		{op: jute.OpGetData, data: []byte("xy"), stat: stat},
		{op: jute.OpGetChildren, children: []string{"k"}},
		{op: jute.OpError, code: jute.CodeNoNode},
		{op: jute.OpError, code: jute.CodeNoNode},
		{op: jute.OpError, code: jute.CodeNoAuth},
		{op: jute.OpError, code: jute.CodeNoAuth},
		// ZooKeeper 3.8: a read's path is not checked, only looked up.
		{op: jute.OpError, code: jute.CodeNoNode},
	})
	// ZooKeeper 3.8: the watch flags of a multiRead's reads are dropped.
	o.setData(b+"/a", []byte("z"))
	o.create(b+"/a/k2", nil, 0)
	wantEvents(t, "events after changes to what multiRead read with watch set", rawEvents(c, env))

	got, code = c.multiRead(nil)
	wantCode(t, "an empty multiRead", code, jute.CodeOK)
	wantEqual(t, "its results", len(got), 0)
	// ZooKeeper 3.8: a multiRead of writes decodes, and fails reading
	// them, with an empty MultiResponse in the reply; one that mixes reads
	// and writes, or holds an op no multi has, does not decode and has no
	// body. Either way nothing is written and the connection stays.
	rep := c.sendMultiRead([]readOp{{op: jute.OpCreate, path: b + "/w"}})
	wantCode(t, "a multiRead of a create", rep.code, jute.CodeMarshallingError)
	wantEqual(t, "its body's length", rep.body.Len(), 9)
	rep = c.sendMultiRead([]readOp{{op: jute.OpGetData, path: b + "/a"}, {op: jute.OpCreate, path: b + "/w"}})
	wantCode(t, "a multiRead of a read and a create", rep.code, jute.CodeMarshallingError)
	wantEqual(t, "its body's length", rep.body.Len(), 0)
	rep = c.sendMultiRead([]readOp{{op: jute.OpExists, path: b + "/a"}})
	wantCode(t, "a multiRead of an exists", rep.code, jute.CodeMarshallingError)
	wantEqual(t, "its body's length", rep.body.Len(), 0)
	wantCode(t, "exists after the refused multiReads", c.read(jute.OpExists, b+"/w", false).code, jute.CodeNoNode)
	c.openACL(b + "/noread")
}

func opsCheckWatches(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	c.create(b+"/rx", nil, 0)
	o.read(jute.OpExists, b+"/nx", true)
	o.read(jute.OpGetChildren, b+"/rx", true)
	wantCode(t, "addWatch", c.watchCall(jute.OpAddWatch, b+"/r", jute.AddWatchPersistentRecursive), jute.CodeOK)
	for _, tc := range []struct {
		path string
		typ  int32
		want int32
	}{
		// ZooKeeper 3.8: checkWatches asks whether anyone watches the
		// path on the server, not whether the asking session does
		// (WatchManager.containsWatcher): c has none on /nx and /rx.
		{b + "/nx", jute.WatcherData, jute.CodeOK},
		{b + "/nx", jute.WatcherChildren, jute.CodeNoWatcher},
		{b + "/rx", jute.WatcherChildren, jute.CodeOK},
		{b + "/rx", jute.WatcherData, jute.CodeNoWatcher},
		{b + "/rx", jute.WatcherAny, jute.CodeOK},
		// A persistent watch counts as both.
		{b + "/r", jute.WatcherData, jute.CodeOK},
		{b + "/r", jute.WatcherChildren, jute.CodeOK},
		// A recursive watch does not count for the nodes below it.
		{b + "/r/c", jute.WatcherAny, jute.CodeNoWatcher},
		{b + "/none", jute.WatcherAny, jute.CodeNoWatcher},
		// ZooKeeper 3.8: an unknown type throws in the server.
		{b + "/r", 0, jute.CodeMarshallingError},
		{b + "/r", 4, jute.CodeMarshallingError},
	} {
		got := c.watchCall(jute.OpCheckWatches, tc.path, tc.typ)
		if got != tc.want {
			t.Fatalf("checkWatches(%s, %d): code %d; want %d", strings.TrimPrefix(tc.path, b), tc.typ, got, tc.want)
		}
	}
}

func opsRemoveWatches(t *testing.T, env Env) {
	c, o, b := rawPair(t, env)
	o.create(b+"/n", nil, 0)
	c.read(jute.OpGetData, b+"/n", true)
	c.read(jute.OpExists, b+"/none", true)
	c.read(jute.OpGetChildren, b+"/n", true)
	o.read(jute.OpGetChildren, b+"/n", true)
	for _, tc := range []struct {
		what string
		path string
		typ  int32
		want int32
	}{
		{"the data watch", b + "/n", jute.WatcherData, jute.CodeOK},
		{"it again", b + "/n", jute.WatcherData, jute.CodeNoWatcher},
		{"the exists watch, as any", b + "/none", jute.WatcherAny, jute.CodeOK},
		{"the child watch", b + "/n", jute.WatcherChildren, jute.CodeOK},
		// The other session's child watch on /n is not c's to remove.
		{"another session's watch", b + "/n", jute.WatcherAny, jute.CodeNoWatcher},
		{"nothing", b + "/x", jute.WatcherAny, jute.CodeNoWatcher},
		{"an unknown type", b + "/n", 9, jute.CodeMarshallingError},
	} {
		wantCode(t, "removeWatches of "+tc.what, c.watchCall(jute.OpRemoveWatches, tc.path, tc.typ), tc.want)
	}
	// The server tells the client nothing of a removal (its client raises
	// the removal events itself), and the removed watches are gone.
	o.setData(b+"/n", []byte("x"))
	o.create(b+"/n/c", nil, 0)
	o.create(b+"/none", nil, 0)
	wantEvents(t, "events after the changes", rawEvents(c, env))
	wantEvents(t, "the other session's events", rawEvents(o, env), "EventNodeChildrenChanged /n")
}

// createUnreadable creates a node everyone may do anything to but read.
func (s *rawSession) createUnreadable(path string) {
	s.t.Helper()
	rep := s.call(jute.OpCreate, func(w *jute.Writer) {
		w.String(path)
		w.Buffer(nil)
		w.ACLs(zk.WorldACL(zk.PermAll &^ zk.PermRead))
		w.Int32(0)
	})
	wantCode(s.t, "create "+path, rep.code, jute.CodeOK)
}

// openACL opens a node up again, so that the target can remove the
// scenario's base.
func (s *rawSession) openACL(path string) {
	s.t.Helper()
	rep := s.call(jute.OpSetACL, func(w *jute.Writer) {
		w.String(path)
		w.ACLs(OpenACL)
		w.Int32(-1)
	})
	wantCode(s.t, "setACL "+path, rep.code, jute.CodeOK)
}
