package zktest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Target is one ZooKeeper implementation the suite can run against.
type Target interface {
	// Run runs body as a subtest named name, in an isolated environment:
	// for the fake a new server inside a testing/synctest bubble, for a real
	// ensemble a fresh base path that no other scenario uses.
	Run(t *testing.T, name string, body func(t *testing.T, env Env))
}

// Env is what a scenario sees of its target.
type Env interface {
	// Connect opens a new session with the requested timeout and returns
	// once the session is established (StateHasSession seen). The session is
	// closed when the test ends.
	Connect(t testing.TB, timeout time.Duration) (Conn, <-chan zk.Event)
	// Base is an existing persistent znode, empty and owned by this scenario,
	// under which the scenario creates what it needs ("/" is never used).
	Base() string
	// Real reports whether the target is a real ensemble. Scenarios must not
	// branch on it to change an expected value; it exists for logging and for
	// choosing how long to wait for things that take real time there.
	Real() bool
}

// Faults are optional interfaces of an Env, and also of anything else that
// can do them to a session (package fake's Faults for a bare fake server):
// the suite, the recipes' scenarios, the linearizability recorder and the
// fuzz harness all inject faults through them. They return an error rather
// than fail a test, so that a client's own goroutine may call them; an
// error that wraps errors.ErrUnsupported means the target cannot inject
// that fault here (Require skips the test then).

// Expirer can make the server expire a session. On the fake the server
// expires it at once; on a real ensemble the client's traffic is held
// (through a loopback proxy) past the session timeout. When Expire returns
// the server has expired the session (its ephemerals are gone); the client
// learns of the expiry at its next contact with the server and carries on
// with a new session.
type Expirer interface {
	Expire(conn Conn) error
}

// Partitioner can cut a client off from the server, both ways, and heal it
// again; the client then reconnects at its own pace.
type Partitioner interface {
	Partition(conn Conn) error
	Heal(conn Conn) error
}

// Faults is what every fault-injecting target offers: expiries and
// partitions.
type Faults interface {
	Expirer
	Partitioner
}

// Crasher can crash a client: its process stops, never to talk to the
// server again, and the server expires its session once the timeout has
// passed.
type Crasher interface {
	Crash(conn Conn) error
}

// Ticker is implemented by environments that know the server's tickTime.
// ZooKeeper clamps every negotiated session timeout to 2..20 ticks, which a
// scenario can only check when it knows the tick.
type Ticker interface {
	TickTime() time.Duration
}

// Members is implemented by environments that run an ensemble whose
// members can be stopped and started, numbered from 0.
type Members interface {
	// Members returns how many members the ensemble has.
	Members() int
	// Home returns the member Connect's sessions start on; they move to
	// another member when it stops.
	Home() int
	// Leader returns the member that leads now.
	Leader() (int, error)
	// StopMember stops a member as a crash would.
	StopMember(member int) error
	// StartMember starts a stopped member and returns once it serves.
	StartMember(member int) error
}

// Reconnector is implemented by environments of an ensemble that can choose
// the member a client reconnects to, as go-zookeeper, whose connection
// dropped, dials the next server of its list.
type Reconnector interface {
	// ReconnectTo makes conn's next reconnect, whatever causes it, go to
	// member (numbered as in Members), and later ones too while the member
	// answers. It does not drop the connection.
	ReconnectTo(conn Conn, member int) error
	// MemberOf returns the member conn is connected to.
	MemberOf(conn Conn) (int, error)
}

// ReplyLoser is implemented by environments that can lose a reply after
// the server applied the request.
type ReplyLoser interface {
	// LoseNextReply loses the reply to conn's next request: the server
	// applies it, but the client's connection drops before the reply
	// arrives, so the call fails with zk.ErrConnectionClosed and the client
	// reconnects with its session.
	LoseNextReply(conn Conn) error
}

// Require fails t with err, a fault's error, or skips the test when err
// wraps errors.ErrUnsupported: the target cannot inject that fault here.
func Require(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		t.Skip(err)
	default:
		t.Fatal(err)
	}
}
