package zktest

import (
	"sync/atomic"
)

// CountingConn is a Conn that counts the requests sent through it and
// reports the nodes it creates and the watches it sets, so that a test or a
// benchmark can measure a recipe's traffic (requests per lock acquisition)
// and tell when a waiter has parked. Every request method counts as one
// request; CreateProtectedEphemeralSequential, which may send a listing
// after a lost reply, counts as one too; SessionID, State, Server and Close
// count as none. Make one with NewCountingConn or CountRequests: the
// counting is in the wrapped Conn they set, so a CountingConn written as a
// struct literal counts nothing.
type CountingConn struct {
	// Conn is the connection counted, wrapped (see Wrap).
	Conn
	// Requests counts the requests. Several CountingConns may share one
	// counter (CountRequests); NewCountingConn gives each its own.
	Requests *atomic.Int64
	// OnCreate, if set, is called with the path of every node created
	// through the connection (by Create or CreateProtectedEphemeralSequential).
	OnCreate func(path string)
	// OnWatch, if set, is called after every watch the connection sets:
	// op is "exists" (ExistsW), "getData" (GetW) or "getChildren"
	// (ChildrenW), path the node watched.
	OnWatch func(op, path string)
}

// NewCountingConn wraps conn with a counter of its own.
func NewCountingConn(conn Conn) *CountingConn { return CountRequests(conn, new(atomic.Int64)) }

// CountRequests wraps conn, counting its requests into counter.
func CountRequests(conn Conn, counter *atomic.Int64) *CountingConn {
	c := &CountingConn{Requests: counter}
	c.Conn = Wrap(conn, Hooks{Before: c.before, After: c.after})
	return c
}

func (c *CountingConn) before(req Request) any {
	if req.Op != "close" {
		c.Requests.Add(1)
	}
	return nil
}

func (c *CountingConn) after(req Request, _ any, reply Reply) {
	switch {
	case reply.Err != nil:
	case req.Op == "create" && c.OnCreate != nil:
		c.OnCreate(reply.Path)
	case req.Watch && c.OnWatch != nil:
		c.OnWatch(req.Op, req.Path)
	}
}
