package wire_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"github.com/zksim/zksim/zkfake/zktest"
)

// testTick is the tickTime of the served fakes, the dev server's: session
// timeouts negotiate to 400ms..4s.
const testTick = 200 * time.Millisecond

// wireTarget runs each scenario on a fresh fake served on 127.0.0.1:0, with
// go-zookeeper's own client connecting over TCP.
type wireTarget struct{}

func (wireTarget) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		env := serve(t)
		setup, _ := env.Connect(t, 10*time.Second)
		if _, err := setup.Create(env.Base(), nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		setup.Close()
		body(t, env)
	})
}

// wireEnv is a scenario's view of a fake served over TCP.
type wireEnv struct {
	servedEnv
	l *wire.Listener
}

// cutter is a client's way to the server that can be cut and restored.
type cutter interface {
	partition()
	heal()
}

// servedEnv is what both environments share: the fake behind the wire,
// and each session's cutter, for Partition and Heal.
type servedEnv struct {
	srv   *zkfake.Server
	mu    sync.Mutex
	links map[zktest.Conn]cutter
}

func newServedEnv(srv *zkfake.Server) servedEnv {
	return servedEnv{srv: srv, links: map[zktest.Conn]cutter{}}
}

func (e *servedEnv) remember(conn zktest.Conn, link cutter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.links[conn] = link
}

// cut runs f on the session's cutter.
func (e *servedEnv) cut(conn zktest.Conn, f func(cutter)) error {
	e.mu.Lock()
	l, ok := e.links[conn]
	e.mu.Unlock()
	if !ok {
		return errors.New("connection not made by this environment")
	}
	f(l)
	return nil
}

// The environments of the served fake can partition and expire sessions,
// as the suite's other targets can, and be dialled for the raw protocol.
var (
	_ zktest.Faults    = (*servedEnv)(nil)
	_ zktest.RawDialer = (*wireEnv)(nil)
	_ zktest.RawDialer = (*pipeEnv)(nil)
)

// Partition cuts the session's way to the server until Heal.
func (e *servedEnv) Partition(conn zktest.Conn) error { return e.cut(conn, cutter.partition) }

// Heal restores it.
func (e *servedEnv) Heal(conn zktest.Conn) error { return e.cut(conn, cutter.heal) }

func (e *servedEnv) Base() string { return "/zktest" }

// Real is false: the server behind the wire is the fake.
func (e *servedEnv) Real() bool { return false }

func (e *servedEnv) TickTime() time.Duration { return testTick }

// Expire expires the session on the fake server; the listener then drops
// the connection, and the client learns of the expiry when it reconnects.
func (e *servedEnv) Expire(conn zktest.Conn) error {
	if id := conn.SessionID(); !e.srv.Expire(id) {
		return fmt.Errorf("no session %#x to expire", id)
	}
	return nil
}

func serve(t testing.TB) *wireEnv {
	t.Helper()
	srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
	l, err := wire.Listen(srv, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		srv.Close()
	})
	return &wireEnv{servedEnv: newServedEnv(srv), l: l}
}

var quiet = zk.WithLogger(log.New(io.Discard, "", 0))

// dial connects go-zookeeper's client and waits for its session.
func (e *wireEnv) dial(t testing.TB, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return e.dialAddr(t, e.l.Addr().String(), timeout)
}

func (e *wireEnv) dialAddr(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, timeout, quiet)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, events
			}
		case <-deadline:
			c.Close()
			t.Fatal("no session within 10s")
		}
	}
}

// DialRaw connects to the listener directly, for scenarios that speak the
// protocol themselves.
func (e *wireEnv) DialRaw() (net.Conn, error) {
	return net.DialTimeout("tcp", e.l.Addr().String(), 5*time.Second)
}

// Connect connects through a proxy of the session's own, which Partition
// and Heal act on.
func (e *wireEnv) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	p := newPartitionProxy(t, e.l.Addr().String())
	c, events := e.dialAddr(t, p.addr(), timeout)
	t.Cleanup(c.Close)
	e.remember(c, p)
	return c, events
}

// TestConformanceOverTCP runs the scenarios that need no waiting over real
// TCP on loopback: go-zookeeper's client, the wire protocol and the fake.
// The whole suite runs over the same protocol in virtual time
// (TestConformanceInVirtualTime); this keeps the TCP path in the loop
// without sleeping through the timing scenarios on the wall clock.
func TestConformanceOverTCP(t *testing.T) {
	zktest.RunNamed(t, wireTarget{}, "tree", "stat", "sequence", "errors", "multi", "acl",
		"ops/create2", "ops/get-ephemerals", "ops/get-all-children-number", "ops/whoami", "ops/check-watches", "persistent/bad-mode")
}
