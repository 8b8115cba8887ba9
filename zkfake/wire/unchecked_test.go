package wire_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake/jute"
)

// This file holds the served fake to what ZooKeeper 3.8 answers requests
// that go-zookeeper would never send, from clients that check less: paths
// it refuses, and create flags and TTLs that do not go together. The
// answers were read from a 3.8.0 ensemble with a raw client; with
// ZK_SERVERS set, the test reads them from the first server named there.

// rawAddress is the served fake's address, or the first of ZK_SERVERS.
func rawAddress(t *testing.T) string {
	if servers := os.Getenv("ZK_SERVERS"); servers != "" {
		return strings.Split(servers, ",")[0]
	}
	return serve(t).l.Addr().String()
}

// rawSession is a session of a raw client, which sends what go-zookeeper
// would not.
type rawSession struct {
	c   *rawConn
	xid int32
}

func openRaw(t *testing.T, addr string) *rawSession {
	t.Helper()
	c := dialRaw(t, addr)
	c.connect(4000, 0, make([]byte, 16))
	return &rawSession{c: c}
}

// ask sends one request and returns the reply's code and body.
func (s *rawSession) ask(op int32, body []byte) (int32, []byte) {
	s.c.t.Helper()
	s.xid++
	s.c.write(frame(cat(be32(s.xid), be32(op), body)))
	return s.c.replyTo(s.xid)
}

// close closes the session, so that on a real ensemble no expiry of it
// comes later, in the middle of another test's writes.
func (s *rawSession) close() {
	s.ask(jute.OpClose, nil)
	s.c.nc.Close()
}

var rawOpenACL = cat(be32(1), be32(31), str("world"), str("anyone"))

func TestUncheckedPathsAnsweredAsTheServer(t *testing.T) {
	addr := rawAddress(t)
	const ok, badArguments, noNode = 0, -8, -101
	// The codes per path: exists, the other reads, delete, create.
	for _, tc := range []struct {
		path                         string
		exists, read, delete, create int32
	}{
		{"", ok, ok, badArguments, badArguments},
		{"relative", noNode, noNode, badArguments, badArguments},
		{"/a//b", noNode, noNode, noNode, noNode},
		{"/a/./b", noNode, noNode, noNode, noNode},
		{"/a/", noNode, noNode, noNode, noNode},
		{"/nul\x00x", badArguments, noNode, badArguments, badArguments},
		{"/\x01", noNode, noNode, noNode, badArguments},
		{"/\uf000", noNode, noNode, noNode, badArguments},
		{"/\ufff0", noNode, noNode, noNode, badArguments},
		{"/zookeeper/", noNode, noNode, noNode, badArguments},
		{"//", noNode, noNode, noNode, badArguments},
	} {
		p := str(tc.path)
		session := openRaw(t, addr)
		for _, q := range []struct {
			what string
			op   int32
			body []byte
			want int32
		}{
			{"exists", jute.OpExists, cat(p, []byte{0}), tc.exists},
			{"exists with a watch", jute.OpExists, cat(p, []byte{1}), tc.exists},
			{"getData", jute.OpGetData, cat(p, []byte{0}), tc.read},
			{"getChildren", jute.OpGetChildren, cat(p, []byte{0}), tc.read},
			{"getChildren2", jute.OpGetChildren2, cat(p, []byte{0}), tc.read},
			{"getACL", jute.OpGetACL, p, tc.read},
			{"getAllChildrenNumber", jute.OpGetAllChildrenNumber, p, tc.read},
			{"sync", jute.OpSync, p, ok},
			{"getEphemerals", jute.OpGetEphemerals, p, ok},
			{"delete", jute.OpDelete, cat(p, be32(-1)), tc.delete},
			{"setData", jute.OpSetData, cat(p, be32(0), be32(-1)), badArguments},
			{"setACL", jute.OpSetACL, cat(p, rawOpenACL, be32(-1)), badArguments},
			{"create", jute.OpCreate, cat(p, be32(0), rawOpenACL, be32(0)), tc.create},
		} {
			code, body := session.ask(q.op, q.body)
			if code != q.want {
				t.Errorf("%s %q: code %d, want %d", q.what, tc.path, code, q.want)
			}
			if q.op == jute.OpSync && code == ok && string(body) != string(p) {
				t.Errorf("sync %q answered %x, want the path echoed", tc.path, body)
			}
		}
		session.close()
	}
}

func TestCreateModesAnsweredAsTheServer(t *testing.T) {
	session := openRaw(t, rawAddress(t))
	defer session.close()
	base := fmt.Sprintf("/raw-modes-%d", time.Now().UnixNano())
	if code, _ := session.ask(jute.OpCreate, cat(str(base), be32(0), rawOpenACL, be32(0))); code != 0 {
		t.Fatalf("create %s: code %d", base, code)
	}
	defer session.ask(jute.OpDelete, cat(str(base), be32(-1)))
	defer session.ask(jute.OpDelete, cat(str(base+"/c"), be32(-1)))
	for _, tc := range []struct {
		what string
		op   int32
		body []byte
		want int32
	}{
		{"create with flags 5 (a TTL mode, no TTL)", jute.OpCreate, cat(str(base+"/t"), be32(0), rawOpenACL, be32(5)), -8},
		{"create with flags 7 (no mode)", jute.OpCreate, cat(str(base+"/t"), be32(0), rawOpenACL, be32(7)), -8},
		{"createContainer with flags 5", jute.OpCreateContainer, cat(str(base+"/t"), be32(0), rawOpenACL, be32(5)), -8},
		{"createTTL of a persistent node with a TTL", jute.OpCreateTTL, cat(str(base+"/t"), be32(0), rawOpenACL, be32(0), be64(1000)), -8},
		{"createTTL with a TTL of zero", jute.OpCreateTTL, cat(str(base+"/t"), be32(0), rawOpenACL, be32(5), be64(0)), -8},
		{"createContainer of a persistent node", jute.OpCreateContainer, cat(str(base+"/c"), be32(0), rawOpenACL, be32(0)), 0},
	} {
		if code, _ := session.ask(tc.op, tc.body); code != tc.want {
			t.Errorf("%s: code %d, want %d", tc.what, code, tc.want)
		}
	}
	// The createContainer of a persistent node made a persistent node: its
	// ephemeralOwner (the stat's eighth field, after four longs and three
	// ints) is 0, where a container's is 0x8000000000000000.
	code, body := session.ask(jute.OpExists, cat(str(base+"/c"), []byte{0}))
	if code != 0 || len(body) < 52 {
		t.Fatalf("exists %s/c: code %d, %d bytes", base, code, len(body))
	}
	if owner := binary.BigEndian.Uint64(body[44:]); owner != 0 {
		t.Errorf("the node a createContainer of flags 0 made has ephemeralOwner %#x, want 0 (persistent)", owner)
	}
}
