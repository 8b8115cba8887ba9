package recipe

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

// stateConn is a Conn that shows a given State; closeEvidence reads
// nothing else of it.
type stateConn struct {
	Conn
	state zk.State
}

func (c *stateConn) State() zk.State { return c.state }

// TestCloseEvidence holds closeEvidence to what go-zookeeper shows: Close
// is proved by zk.ErrClosing at once, or by two failures with
// zk.ErrConnectionClosed each followed, a backoff later, by
// StateDisconnected; a Conn that has moved on to dialling again by then,
// or that answers in between, is not closed; and State read sooner than a
// backoff after the failure counts for nothing.
func TestCloseEvidence(t *testing.T) {
	lost := zk.ErrConnectionClosed
	type step struct {
		err   error    // a request's answer
		state zk.State // State after the pause that follows it
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		closed bool
	}{
		{"ErrClosing is proof", []step{{zk.ErrClosing, zk.StateDisconnected}}, true},
		{"two losses, disconnected after each pause", []step{{lost, zk.StateDisconnected}, {lost, zk.StateDisconnected}}, true},
		{"one loss is not enough", []step{{lost, zk.StateDisconnected}}, false},
		{"dialling again after the pause", []step{{lost, zk.StateConnecting}, {lost, zk.StateDisconnected}}, false},
		{"an answer between the losses", []step{{lost, zk.StateDisconnected}, {nil, zk.StateHasSession}, {lost, zk.StateDisconnected}}, false},
		{"no server", []step{{zk.ErrNoServer, zk.StateDisconnected}, {zk.ErrNoServer, zk.StateDisconnected}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var ev closeEvidence
				var closed atomic.Bool
				conn := &stateConn{state: zk.StateDisconnected}
				for _, s := range tc.steps {
					// Right after the failure the State is whatever
					// the client's loop got to, and a call of paused
					// then must not weigh it.
					ev.failed(s.err, &closed)
					conn.state = zk.StateDisconnected
					ev.paused(conn, &closed)
					time.Sleep(firstBackoff)
					conn.state = s.state
					ev.paused(conn, &closed)
				}
				if closed.Load() != tc.closed {
					t.Errorf("closed = %v, want %v", closed.Load(), tc.closed)
				}
			})
		})
	}
}
