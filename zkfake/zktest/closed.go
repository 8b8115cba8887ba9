package zktest

import (
	"errors"
	"syscall"

	"github.com/go-zookeeper/zk"
)

// ClosedConnection reports whether err is one of the ways go-zookeeper
// tells a call that its connection closed under it: zk.ErrConnectionClosed,
// or the socket's own write error (EPIPE or ECONNRESET) when the server
// closed a real connection while the client was still writing the request
// — as ZooKeeper does to a frame over jute.maxbuffer. Which of them a call
// gets on a real socket is timing; the fake always gives
// zk.ErrConnectionClosed.
func ClosedConnection(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}
