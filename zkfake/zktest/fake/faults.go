package fake

import (
	"fmt"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Faults injects the suite's faults into the sessions of a fake server
// (made by its Connect): Partition, Heal and Crash act on the *zkfake.Conn,
// Expire expires its session on the server at once, and LoseNextReply and
// ReconnectTo act through the server's fault controls. A Conn that is not a
// *zkfake.Conn gets an error.
type Faults struct {
	Server *zkfake.Server
}

var (
	_ zktest.Faults      = Faults{}
	_ zktest.Crasher     = Faults{}
	_ zktest.Reconnector = Faults{}
	_ zktest.ReplyLoser  = Faults{}
)

// fakeConn is the one place a zktest.Conn is taken for a fake's.
func fakeConn(conn zktest.Conn) (*zkfake.Conn, error) {
	c, ok := conn.(*zkfake.Conn)
	if !ok {
		return nil, fmt.Errorf("fake: %T is not a connection to a fake server", conn)
	}
	return c, nil
}

// act runs f on conn's *zkfake.Conn.
func act(conn zktest.Conn, f func(*zkfake.Conn)) error {
	c, err := fakeConn(conn)
	if err == nil {
		f(c)
	}
	return err
}

// Partition cuts conn off (zkfake.Conn.Partition).
func (f Faults) Partition(conn zktest.Conn) error { return act(conn, (*zkfake.Conn).Partition) }

// Heal ends conn's partition (zkfake.Conn.Heal).
func (f Faults) Heal(conn zktest.Conn) error { return act(conn, (*zkfake.Conn).Heal) }

// Crash crashes conn's client (zkfake.Conn.Crash).
func (f Faults) Crash(conn zktest.Conn) error { return act(conn, (*zkfake.Conn).Crash) }

// Expire expires conn's session on the server now (zkfake.Server.Expire).
func (f Faults) Expire(conn zktest.Conn) error {
	if f.Server == nil {
		return fmt.Errorf("fake: Faults has no Server")
	}
	if !f.Server.Expire(conn.SessionID()) {
		return fmt.Errorf("fake: no session %#x to expire", conn.SessionID())
	}
	return nil
}

// ReconnectTo sends conn's next reconnect to member (zkfake.Conn.ReconnectTo).
func (f Faults) ReconnectTo(conn zktest.Conn, member int) error {
	return act(conn, func(c *zkfake.Conn) { c.ReconnectTo(member) })
}

// MemberOf returns the member conn is connected to (zkfake.Conn.Member).
func (f Faults) MemberOf(conn zktest.Conn) (int, error) {
	c, err := fakeConn(conn)
	if err != nil {
		return -1, err
	}
	return c.Member(), nil
}

// LoseNextReply loses the reply to the session's next request, after the
// server applied it (zkfake.Server.LoseReplies).
func (f Faults) LoseNextReply(conn zktest.Conn) error {
	if f.Server == nil {
		return fmt.Errorf("fake: Faults has no Server")
	}
	f.Server.LoseReplies(zkfake.ReplyLoss{SessionID: conn.SessionID(), Nth: 1, Applied: true})
	return nil
}
