package wire_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// This file fuzzes the served fake with well-framed requests: the fuzzer's
// bytes choose a dozen requests (the op, a path from a palette that holds
// what the client refuses, what the server refuses and ZooKeeper's own
// nodes, data, flags, a version, an ACL, a multi's parts), which a raw
// session sends one at a time. The server must answer each with one of
// the error codes ZooKeeper 3.8 gives for that op, and lose nothing it
// must keep: a keeper session's nodes, which the fuzzer's ACLs forbid it
// to touch, and the keeper's session.

// fuzzPaths are the paths requests draw: the fuzzer's own directory, the
// keeper's nodes, ZooKeeper's, and paths the client or the server refuses.
var fuzzPaths = []string{
	"/f", "/f/a", "/f/b", "/f/a/c", "/keep", "/keep/a", "/keep/b", "/", "/zookeeper", "/zookeeper/config",
	"/zookeeper/quota", "/f/\ue000", "/f/x\uffff", "/f/😀", "/f/", "", "/f//x", "/f/.", "/f/..", "/f/nul\x00",
	"/f/\x01", "relative", "/nope/x",
}

// fuzzACLs are the ACL lists requests draw: open, read-only, an empty
// list, malformed ids and an unknown scheme.
var fuzzACLs = [][]zk.ACL{
	zk.WorldACL(zk.PermAll),
	zk.WorldACL(zk.PermRead),
	nil,
	{{Perms: zk.PermAll, Scheme: "digest", ID: "nohash"}},
	{{Perms: zk.PermAll, Scheme: "ip", ID: "not-an-ip"}},
	{{Perms: zk.PermAll, Scheme: "bogus", ID: "x"}},
	{{Perms: zk.PermAll, Scheme: "auth", ID: ""}},
	{{Perms: 0, Scheme: "world", ID: "anyone"}},
}

// allowedCodes are the codes the real server gives for each op. The
// reads validate no path: they find no node at a path go-zookeeper would
// refuse, and "" is the root (unchecked_test.go).
var allowedCodes = map[int32][]int32{
	jute.OpCreate:               {jute.CodeOK, jute.CodeNoNode, jute.CodeNodeExists, jute.CodeNoAuth, jute.CodeNoChildrenForEphem, jute.CodeInvalidACL, jute.CodeBadArguments},
	jute.OpCreate2:              {jute.CodeOK, jute.CodeNoNode, jute.CodeNodeExists, jute.CodeNoAuth, jute.CodeNoChildrenForEphem, jute.CodeInvalidACL, jute.CodeBadArguments},
	jute.OpCreateContainer:      {jute.CodeOK, jute.CodeNoNode, jute.CodeNodeExists, jute.CodeNoAuth, jute.CodeNoChildrenForEphem, jute.CodeInvalidACL, jute.CodeBadArguments},
	jute.OpCreateTTL:            {jute.CodeOK, jute.CodeNoNode, jute.CodeNodeExists, jute.CodeNoAuth, jute.CodeNoChildrenForEphem, jute.CodeInvalidACL, jute.CodeBadArguments, jute.CodeUnimplemented},
	jute.OpDelete:               {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth, jute.CodeBadVersion, jute.CodeNotEmpty, jute.CodeBadArguments},
	jute.OpExists:               {jute.CodeOK, jute.CodeNoNode, jute.CodeBadArguments},
	jute.OpGetData:              {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth},
	jute.OpSetData:              {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth, jute.CodeBadVersion, jute.CodeBadArguments},
	jute.OpGetACL:               {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth},
	jute.OpSetACL:               {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth, jute.CodeBadVersion, jute.CodeInvalidACL, jute.CodeBadArguments},
	jute.OpGetChildren:          {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth},
	jute.OpGetChildren2:         {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth},
	jute.OpSync:                 {jute.CodeOK},
	jute.OpGetAllChildrenNumber: {jute.CodeOK, jute.CodeNoNode, jute.CodeNoAuth},
	jute.OpGetEphemerals:        {jute.CodeOK},
	// A multi's header carries the code of the part that failed, if any.
	jute.OpMulti: {jute.CodeOK, jute.CodeNoNode, jute.CodeNodeExists, jute.CodeNoAuth, jute.CodeBadVersion, jute.CodeNotEmpty, jute.CodeNoChildrenForEphem,
		jute.CodeInvalidACL, jute.CodeBadArguments},
}

// fuzzOps are the ops requests draw, in the order a byte picks them.
var fuzzOps = []int32{
	jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete, jute.OpExists,
	jute.OpGetData, jute.OpSetData, jute.OpGetACL, jute.OpSetACL, jute.OpGetChildren, jute.OpGetChildren2,
	jute.OpSync, jute.OpGetAllChildrenNumber, jute.OpGetEphemerals, jute.OpMulti,
}

// draws reads the fuzzer's bytes as choices; past the end it draws zeros.
type draws struct{ b []byte }

func (d *draws) next() int {
	if len(d.b) == 0 {
		return 0
	}
	v := int(d.b[0])
	d.b = d.b[1:]
	return v
}

func (d *draws) path() string { return fuzzPaths[d.next()%len(fuzzPaths)] }

func (d *draws) data() []byte {
	return [][]byte{nil, {}, []byte("x"), []byte("\x00\xff"), bytes.Repeat([]byte("d"), 1000)}[d.next()%5]
}

func (d *draws) version() int32 { return []int32{-1, 0, 1, 7, -2}[d.next()%5] }

func (d *draws) flags() int32 { return int32(d.next() % 8) }

func (d *draws) acl() []zk.ACL { return fuzzACLs[d.next()%len(fuzzACLs)] }

// request writes the body of one request of op, its parts drawn.
func (d *draws) request(w *jute.Writer, op int32) {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		w.String(d.path())
		w.Buffer(d.data())
		w.ACLs(d.acl())
		flags := d.flags()
		if op == jute.OpCreateContainer && d.next()%4 > 0 {
			flags = zk.FlagContainer
		}
		w.Int32(flags)
		if op == jute.OpCreateTTL {
			w.Int64([]int64{60_000, 0, -1, 1 << 40}[d.next()%4])
		}
	case jute.OpDelete:
		w.String(d.path())
		w.Int32(d.version())
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		w.String(d.path())
		w.Bool(d.next()%2 == 1)
	case jute.OpSetData:
		w.String(d.path())
		w.Buffer(d.data())
		w.Int32(d.version())
	case jute.OpGetACL, jute.OpSync, jute.OpGetAllChildrenNumber, jute.OpGetEphemerals:
		w.String(d.path())
	case jute.OpSetACL:
		w.String(d.path())
		w.ACLs(d.acl())
		w.Int32(d.version())
	case jute.OpMulti:
		for range d.next() % 4 {
			typ := []int32{jute.OpCreate, jute.OpDelete, jute.OpSetData, jute.OpCheck}[d.next()%4]
			w.Int32(typ)
			w.Bool(false)
			w.Int32(-1)
			w.String(d.path())
			switch typ {
			case jute.OpCreate:
				w.Buffer(d.data())
				w.ACLs(d.acl())
				w.Int32(d.flags() % 4)
			case jute.OpSetData:
				w.Buffer(d.data())
				w.Int32(d.version())
			default:
				w.Int32(d.version())
			}
		}
		w.Int32(-1)
		w.Bool(true)
		w.Int32(-1)
	}
}

// FuzzServedRequests sends up to a dozen well-framed requests the
// fuzzer's bytes choose on a raw session of a served fake: each must be
// answered, with a code the real server gives for its op; the keeper's
// nodes, which the fuzzer may not touch, and its session stay.
func FuzzServedRequests(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 0})                                      // create /f
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 7, 1, 1, 0})        // create /f, /f/a, setData /f/a
	f.Add([]byte{0, 11, 2, 0, 1, 7, 0, 1, 2, 0, 0, 4})                   // private-use name, setData
	f.Add([]byte{15, 3, 0, 0, 1, 0, 0, 0, 3, 11, 0})                     // a multi with a create and a check
	f.Add([]byte{4, 5, 0, 4, 6, 0, 9, 6, 1, 0})                          // delete /keep/a, setData /keep/a, setACL
	f.Add([]byte{3, 0, 2, 0, 0, 1, 3, 4, 1, 2, 0, 0, 3, 3, 0, 0, 0})     // TTLs
	f.Add([]byte{0, 19, 1, 0, 0, 0, 4, 19, 0, 5, 20, 0, 12, 21, 13, 22}) // malformed paths
	env := serve(f)
	addr := env.l.Addr().String()
	keeper, _ := env.dial(f, 4*time.Second)
	defer keeper.Close()
	if _, err := keeper.Create("/keep", nil, 0, zk.WorldACL(zk.PermRead|zk.PermCreate)); err != nil {
		f.Fatal(err)
	}
	if _, err := keeper.Create("/keep/a", []byte("keep"), 0, zk.WorldACL(zk.PermRead)); err != nil {
		f.Fatal(err)
	}
	if _, err := keeper.Create("/keep/b", []byte("keep"), zk.FlagEphemeral, zk.WorldACL(zk.PermRead)); err != nil {
		f.Fatal(err)
	}
	session := keeper.SessionID()
	f.Fuzz(func(t *testing.T, program []byte) {
		c := dialRaw(t, addr)
		c.connect(4000, 0, make([]byte, 16))
		d := &draws{b: program}
		for xid := int32(1); xid <= 12 && len(d.b) > 0; xid++ {
			op := fuzzOps[d.next()%len(fuzzOps)]
			w := &jute.Writer{}
			w.Int32(xid)
			w.Int32(op)
			d.request(w, op)
			c.write(frame(w.Bytes()))
			code, _ := c.replyTo(xid)
			if !slices.Contains(allowedCodes[op], code) {
				t.Fatalf("request %d (op %d, %x) answered with code %d; ZooKeeper 3.8 answers it with one of %v", xid, op, w.Bytes(), code, allowedCodes[op])
			}
		}
		for _, p := range []string{"/keep/a", "/keep/b"} {
			data, st, err := keeper.Get(p)
			if err != nil || string(data) != "keep" || st.Version != 0 || st.Aversion != 0 {
				t.Fatalf("the keeper's %s after the requests: %q, %+v, %v; want it untouched", p, data, st, err)
			}
		}
		if keeper.SessionID() != session || !slices.Contains(env.srv.Sessions(), session) {
			t.Fatalf("the keeper's session %#x lost (now %#x; the server holds %v)", session, keeper.SessionID(), env.srv.Sessions())
		}
	})
}

// replyTo reads frames until the reply to xid, passing over watch events
// (xid -1), and returns its error code and its body.
func (c *rawConn) replyTo(xid int32) (int32, []byte) {
	c.t.Helper()
	for {
		r := c.read()
		if len(r) < 16 {
			c.t.Fatalf("a reply of %d bytes", len(r))
		}
		if got := int32(binary.BigEndian.Uint32(r)); got == xid {
			return int32(binary.BigEndian.Uint32(r[12:])), r[16:]
		} else if got != -1 {
			c.t.Fatalf("a reply to xid %d while waiting for %d", got, xid)
		}
	}
}
