package fakelog

import (
	"fmt"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// Faults injects faults into one client's connection. [Record] calls it
// from that client's goroutine, between the client's operations, so that
// none of the client's calls is in flight when its connection is cut off,
// healed or its session expired: a call in flight across a session change
// could be applied under the new session, and its input would name the
// wrong one.
type Faults interface {
	// Partition cuts conn off from the server, both ways, until Heal.
	Partition(conn recipe.Conn) error
	// Heal ends a partition; the client then reconnects at its own pace.
	Heal(conn recipe.Conn) error
	// Expire makes the server expire conn's session. The client learns of
	// it at its next contact with the server and carries on with a new
	// session.
	Expire(conn recipe.Conn) error
}

// Crasher is implemented by Faults that can also crash a client: its
// process stops, never to talk to the server again, and the server expires
// its session once the timeout has passed. [Record] then connects the
// client anew.
type Crasher interface {
	Crash(conn recipe.Conn) error
}

// ServerFaults injects faults into the connections of a fake server (made
// by its Connect): Partition, Heal and Crash act on the *zkfake.Conn, and
// Expire expires its session on the server at once.
type ServerFaults struct {
	Server *zkfake.Server
}

var (
	_ Faults  = ServerFaults{}
	_ Crasher = ServerFaults{}
)

func fakeConn(conn recipe.Conn) (*zkfake.Conn, error) {
	c, ok := conn.(*zkfake.Conn)
	if !ok {
		return nil, fmt.Errorf("fakelog: %T is not a connection to a fake server", conn)
	}
	return c, nil
}

// Partition cuts conn off (see [zkfake.Conn.Partition]).
func (f ServerFaults) Partition(conn recipe.Conn) error {
	c, err := fakeConn(conn)
	if err == nil {
		c.Partition()
	}
	return err
}

// Heal ends conn's partition (see [zkfake.Conn.Heal]).
func (f ServerFaults) Heal(conn recipe.Conn) error {
	c, err := fakeConn(conn)
	if err == nil {
		c.Heal()
	}
	return err
}

// Crash crashes conn's client (see [zkfake.Conn.Crash]).
func (f ServerFaults) Crash(conn recipe.Conn) error {
	c, err := fakeConn(conn)
	if err == nil {
		c.Crash()
	}
	return err
}

// Expire expires conn's session on the server now (see
// [zkfake.Server.Expire]).
func (f ServerFaults) Expire(conn recipe.Conn) error {
	if f.Server == nil {
		return fmt.Errorf("fakelog: ServerFaults has no Server")
	}
	if !f.Server.Expire(conn.SessionID()) {
		return fmt.Errorf("fakelog: no session %#x to expire", conn.SessionID())
	}
	return nil
}
