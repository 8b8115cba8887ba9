package wire_test

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"github.com/zksim/zksim/zkfake/zktest"
)

// pipeTarget runs each scenario inside a testing/synctest bubble: the fake,
// the wire server and go-zookeeper's client all in it, connected by
// in-memory pipes instead of TCP, so that time is virtual and a session
// timeout passes at once. The TCP path is covered by the other tests of
// the package.
// env, if set, makes the scenario's Env instead of a plain pipeEnv.
type pipeTarget struct {
	env func(srv *zkfake.Server, pipe *wire.Pipe) zktest.Env
}

func (p pipeTarget) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
			pipe := wire.ServePipe(srv)
			var env zktest.Env = &pipeEnv{servedEnv: newServedEnv(srv), pipe: pipe}
			if p.env != nil {
				env = p.env(srv, pipe)
			}
			defer func() {
				pipe.Close()
				srv.Close()
			}()
			setup, _ := env.Connect(t, 10*time.Second)
			if _, err := setup.Create(env.Base(), nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			setup.Close()
			body(t, env)
		})
	})
}

// pipeEnv is a scenario's view of a fake served over pipes.
type pipeEnv struct {
	servedEnv
	pipe *wire.Pipe
}

// Partition and Heal are the listener's own (Listener.Partition), so that
// the conformance suite's partition scenarios cover them.
func (e *pipeEnv) Partition(conn zktest.Conn) error { return e.pipe.Partition(conn.SessionID()) }
func (e *pipeEnv) Heal(conn zktest.Conn) error      { return e.pipe.Heal(conn.SessionID()) }

// DialRaw hands the server one end of a new pipe, for scenarios that
// speak the protocol themselves.
func (e *pipeEnv) DialRaw() (net.Conn, error) { return e.pipe.Dial("pipe", wire.PipeAddress, 0) }

func (e *pipeEnv) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{wire.PipeAddress}, timeout, quiet, zk.WithDialer(e.pipe.Dial), zk.WithHostProvider(e.pipe.HostProvider()))
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	t.Cleanup(c.Close)
	return c, events
}

// TestConformanceInVirtualTime runs the conformance suite over
// go-zookeeper's client, the wire protocol and the fake, all inside
// synctest bubbles.
func TestConformanceInVirtualTime(t *testing.T) {
	zktest.Run(t, pipeTarget{})
}
