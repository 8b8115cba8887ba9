package recipe

import (
	"errors"
	"sync/atomic"
	"time"

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
// but its loop moves on to StateConnecting a moment later, and holds new
// requests until it reconnects. Read right after the failure, State races
// that loop; read a backoff later, it does not (and under
// testing/synctest the answer is the same on every run). So a suspicion
// raised by a failure is weighed only once firstBackoff has passed since,
// and two in a row, each with the Conn still in StateDisconnected then,
// mean it was closed.
//
// A caller calls failed with each request's error and paused after each
// pause between attempts (a call too soon after the failure leaves the
// suspicion for a later one); closed is set once the evidence is in.
type closeEvidence struct {
	strikes int
	// suspect is when the last request failed with
	// zk.ErrConnectionClosed, if State has not been weighed since.
	suspect time.Time
}

// failed takes the error of a request: zk.ErrClosing sets closed at once,
// zk.ErrConnectionClosed raises a suspicion for paused to weigh, and any
// other answer (nil included) shows a Conn that is not closed.
func (ev *closeEvidence) failed(err error, closed *atomic.Bool) {
	switch {
	case errors.Is(err, zk.ErrClosing):
		closed.Store(true)
	case errors.Is(err, zk.ErrConnectionClosed):
		ev.suspect = time.Now()
	default:
		*ev = closeEvidence{}
	}
}

// paused weighs the suspicion, if any, once firstBackoff has passed since
// the failure that raised it.
func (ev *closeEvidence) paused(conn Conn, closed *atomic.Bool) {
	if ev.suspect.IsZero() || time.Since(ev.suspect) < firstBackoff {
		return
	}
	ev.suspect = time.Time{}
	if conn.State() != zk.StateDisconnected {
		ev.strikes = 0
		return
	}
	if ev.strikes++; ev.strikes >= 2 {
		closed.Store(true)
	}
}
