// Package fake runs the conformance suite (package zktest) on zkfake: a
// Target whose scenarios each get a new in-memory Server inside a
// testing/synctest bubble, and Faults, the suite's fault interfaces for a
// bare zkfake.Server. It is to zkfake what net/http/httptest is to
// net/http: test machinery kept out of the package it serves, so that a
// program importing zkfake links neither package testing nor the suite.
package fake

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
)

// zkfake's Conn has the whole method set the suite checks.
var _ zktest.Conn = (*zkfake.Conn)(nil)

// NewTarget returns a zktest.Target that runs each scenario inside its own
// testing/synctest bubble, on a new Server made with opts — by default a
// modelled ensemble of three members, so that scenarios can stop and start
// members (zktest.Members). Time in a scenario is virtual: a session
// timeout passes at once.
func NewTarget(opts ...zkfake.Option) zktest.Target {
	return target{append([]zkfake.Option{zkfake.WithEnsemble(3)}, opts...)}
}

type target struct{ opts []zkfake.Option }

func (f target) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer(f.opts...)
			defer srv.Close()
			env := &Env{Faults: Faults{Server: srv}, base: "/zktest"}
			setup, _, err := srv.Connect(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := setup.Create(env.base, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			setup.Close()
			body(t, env)
		})
	})
}

// Env is a scenario's view of a fake Server: a zktest.Env that implements
// every optional interface of the suite.
type Env struct {
	Faults
	base string
}

var (
	_ zktest.Faults      = (*Env)(nil)
	_ zktest.Crasher     = (*Env)(nil)
	_ zktest.Ticker      = (*Env)(nil)
	_ zktest.Members     = (*Env)(nil)
	_ zktest.Reconnector = (*Env)(nil)
	_ zktest.ReplyLoser  = (*Env)(nil)
	_ zktest.Quorum      = (*Env)(nil)
)

// ServerOf returns the fake server behind an Env made by NewTarget, for
// scenarios that inspect it; ok is false for any other Env.
func ServerOf(env zktest.Env) (srv *zkfake.Server, ok bool) {
	e, ok := env.(*Env)
	if !ok {
		return nil, false
	}
	return e.Server, true
}

// Connect opens a session on the home member (member 0), which moves to
// another member when the home one stops, and waits for it.
func (e *Env) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := e.Server.Connect(timeout, zkfake.StartOn(e.Home()))
	if err != nil {
		t.Fatal(err)
	}
	// Consume the connection's own events, as the real target does while
	// it waits for the session.
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	t.Cleanup(c.Close)
	return c, events
}

// Base is the scenario's own znode, /zktest.
func (e *Env) Base() string { return e.base }

// Real is false.
func (e *Env) Real() bool { return false }

// TickTime is the server's tick (zkfake.WithTickTime).
func (e *Env) TickTime() time.Duration { return e.Server.TickTime() }

// Members returns the size of the modelled ensemble.
func (e *Env) Members() int { return e.Server.Members() }

// Home is member 0.
func (e *Env) Home() int { return 0 }

// Leader is member 0 while it is up; the fake's committed state does not
// depend on which member leads, so any other member that is up stands for
// the leader the remaining ones elected.
func (e *Env) Leader() (int, error) {
	for i := range e.Server.Members() {
		if e.Server.MemberUp(i) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("fake: no member is up")
}

// StopMember stops a member (zkfake.Server.StopMember).
func (e *Env) StopMember(member int) error { e.Server.StopMember(member); return nil }

// StartMember starts a stopped member (zkfake.Server.StartMember).
func (e *Env) StartMember(member int) error { e.Server.StartMember(member); return nil }

// QuorumServers returns the servers the fake's /zookeeper/config lists
// (zkfake.Server.Quorum).
func (e *Env) QuorumServers() ([]zktest.QuorumServer, error) {
	var out []zktest.QuorumServer
	for _, q := range e.Server.Quorum() {
		out = append(out, zktest.QuorumServer(q))
	}
	return out, nil
}
