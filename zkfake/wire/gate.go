package wire

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// This file is the server's side of a Client's gate (WithGate): the
// requests the code under test sends wait there until the hooks let them
// through.

// Request is a request of a Client's as its gate sees it (WithGate),
// named in ZooKeeper's terms as zktest.Wrap names them, so that a log of
// them reads like the server's: the types are the same, field for field,
// and convert into each other (zktest.Request(r)).
type Request struct {
	// Op is the request's name in ZooKeeper's protocol: create,
	// createContainer, createTTL, delete, exists, getData, setData,
	// getChildren, multi, sync, getACL or setACL.
	Op   string
	Path string // the node; empty for multi
	// Detail renders the other arguments that say what the request does:
	// a create's flags ("ephemeral sequential"), a version other than -1
	// ("version 3"), "watch", a multi's number of ops.
	Detail string
	Write  bool // the request may change the tree
	Watch  bool // the request sets a watch
	// Arrival numbers the request in the order the server read the
	// Client's requests, across all its connections: requests that wait
	// at the gate together, an old connection's among them, can be taken
	// in an order that is the same in every run.
	Arrival int64
}

// Reply is what a gated request returned, as the client gets it.
type Reply struct {
	Path     string   // a create's path
	Exists   bool     // an exists request's answer
	Stat     *zk.Stat // the node's stat, where the request returns one
	Children []string // a listing
	Err      error
}

// Gate is what a Client's requests wait on at the server (WithGate).
type Gate struct {
	// Before is called when the request reaches the server and returns
	// when the server may apply it; what it returns is handed to After.
	Before func(req Request) any
	// After is called once the request is applied and answered, or
	// dropped (its connection closed while it waited).
	After func(req Request, before any, reply Reply)
}

// gateRequest names req as the gate sees it, and reports false for the
// requests that pass at once: go-zookeeper's own (pings, setWatches,
// auth, closeSession) and ZooKeeper 3.8's others.
func gateRequest(req *request) (Request, bool) {
	r := Request{Path: req.path}
	switch req.op {
	case jute.OpCreate, jute.OpCreate2:
		// The flags are a create mode, not bits.
		switch req.flags {
		case zk.FlagContainer:
			r.Op = "createContainer"
		case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
			r.Op = "createTTL"
		default:
			r.Op = "create"
		}
	case jute.OpCreateContainer:
		r.Op = "createContainer"
	case jute.OpCreateTTL:
		r.Op = "createTTL"
	case jute.OpDelete:
		r.Op = "delete"
	case jute.OpExists:
		r.Op = "exists"
	case jute.OpGetData:
		r.Op = "getData"
	case jute.OpSetData:
		r.Op = "setData"
	case jute.OpGetChildren, jute.OpGetChildren2:
		r.Op = "getChildren"
	case jute.OpMulti:
		r.Op, r.Path, r.Detail, r.Write = "multi", "", fmt.Sprintf("%d ops", len(req.ops)), true
		return r, true
	case jute.OpSync:
		r.Op = "sync"
	case jute.OpGetACL:
		r.Op = "getACL"
	case jute.OpSetACL:
		r.Op = "setACL"
	default:
		return Request{}, false
	}
	switch r.Op {
	case "create", "createContainer":
		r.Detail, r.Write = jute.DescribeFlags(req.flags), true
	case "createTTL":
		r.Detail, r.Write = jute.DescribeFlags(req.flags)+" ttl "+(time.Duration(req.ttl)*time.Millisecond).String(), true
	case "delete", "setData", "setACL":
		r.Detail, r.Write = jute.DescribeVersion(req.version), true
	case "exists", "getData", "getChildren":
		if req.watch {
			r.Detail, r.Watch = "watch", true
		}
	}
	return r, true
}

// gated waits for the gate to let req through, then applies and answers
// it, on a goroutine of its own: the connection goes on reading, and
// answering pings, meanwhile. A request still waiting when its connection
// closes is dropped, as one still in the network would be.
func (s *session) gated(cc *clientConn, req *request, gr Request, gate Gate) {
	var before any
	if gate.Before != nil {
		before = gate.Before(gr)
	}
	reply := Reply{Err: zk.ErrConnectionClosed}
	if !cc.isClosed() {
		req.reply = &reply
		if !s.handle(cc, req) {
			cc.close()
		}
		if isConnectionError(reply.Err) {
			// The fake's own connection failed: the wire drops the
			// client's, which is what the client sees.
			reply.Err = zk.ErrConnectionClosed
		}
	}
	if gate.After != nil {
		gate.After(gr, before, reply)
	}
}
