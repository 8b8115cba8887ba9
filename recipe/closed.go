package recipe

import (
	"errors"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// closeEvidence tells a Conn its owner closed from one that lost its
// connection, from what its requests return and what State shows a pause
// later.
//
// go-zookeeper fails the requests in flight when Close is called with
// zk.ErrClosing: that is proof. Every request made after Close fails at
// once with zk.ErrConnectionClosed, and the state stays StateDisconnected
// for good. A Conn that merely lost its connection fails the requests in
// flight with the same zk.ErrConnectionClosed, in StateDisconnected too —
// but its loop moves on to StateConnecting at once, and holds new requests
// until it reconnects. Read right after the failure, State races that
// loop; read after the pause that follows the failure, it does not (and
// under testing/synctest the answer is the same on every run). So a
// suspicion raised by a failure is weighed only once the caller has
// paused, and two in a row, each with the Conn still in StateDisconnected
// after the pause, mean it was closed.
//
// A caller calls failed with each request's error and paused after each
// pause between attempts; closed is set once the evidence is in.
type closeEvidence struct {
	strikes int
	// suspect: the last request failed with zk.ErrConnectionClosed, and
	// State has not been read since a pause.
	suspect bool
}

// failed takes the error of a request: zk.ErrClosing sets closed at once,
// zk.ErrConnectionClosed raises a suspicion for paused to weigh, and any
// other answer (nil included) shows a Conn that is not closed.
func (ev *closeEvidence) failed(err error, closed *atomic.Bool) {
	switch {
	case errors.Is(err, zk.ErrClosing):
		closed.Store(true)
	case errors.Is(err, zk.ErrConnectionClosed):
		ev.suspect = true
	default:
		*ev = closeEvidence{}
	}
}

// paused weighs the suspicion, if any, now that the caller has paused
// since the failure that raised it.
func (ev *closeEvidence) paused(conn Conn, closed *atomic.Bool) {
	if !ev.suspect {
		return
	}
	ev.suspect = false
	if conn.State() != zk.StateDisconnected {
		ev.strikes = 0
		return
	}
	if ev.strikes++; ev.strikes >= 2 {
		closed.Store(true)
	}
}
