package zkfake

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// NewTarget returns a zktest.Target that runs each scenario inside its own
// testing/synctest bubble, on a new Server made with opts — by default a
// modelled ensemble of three members, so that scenarios can stop and start
// members (zktest.Members). Time in a scenario is virtual: a session
// timeout passes at once.
func NewTarget(opts ...Option) zktest.Target {
	return fakeTarget{append([]Option{WithEnsemble(3)}, opts...)}
}

type fakeTarget struct{ opts []Option }

func (f fakeTarget) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := NewServer(f.opts...)
			defer srv.Close()
			env := &fakeEnv{srv: srv, base: "/zktest"}
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

// fakeEnv is a scenario's view of a fake Server.
type fakeEnv struct {
	srv  *Server
	base string
}

// ServerOf returns the fake server behind an Env made by NewTarget, for
// scenarios that inspect it; ok is false for any other Env.
func ServerOf(env zktest.Env) (srv *Server, ok bool) {
	e, ok := env.(*fakeEnv)
	if !ok {
		return nil, false
	}
	return e.srv, true
}

func (e *fakeEnv) Connect(t testing.TB, timeout time.Duration) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	// Sessions start on member 0, the home member, and move when it stops.
	c, events, err := e.srv.Connect(timeout, startOn(0))
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

func (e *fakeEnv) Base() string { return e.base }
func (e *fakeEnv) Real() bool   { return false }

func (e *fakeEnv) Expire(t testing.TB, conn recipe.Conn) {
	t.Helper()
	c := conn.(*Conn)
	if !e.srv.Expire(c.SessionID()) {
		t.Fatalf("no session %#x to expire", c.SessionID())
	}
}

func (e *fakeEnv) Partition(t testing.TB, conn recipe.Conn) { conn.(*Conn).Partition() }
func (e *fakeEnv) Heal(t testing.TB, conn recipe.Conn)      { conn.(*Conn).Heal() }

// startOn starts a session on member i without pinning it there.
func startOn(i int) ConnOption { return func(c *Conn) { c.member, c.startSet = i, true } }

func (e *fakeEnv) Members() int { return len(e.srv.members) }
func (e *fakeEnv) Home() int    { return 0 }

// Leader is member 0 while it is up; the fake's committed state does not
// depend on which member leads, so any other member that is up stands for
// the leader the remaining ones elected.
func (e *fakeEnv) Leader(t testing.TB) int {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	for i, m := range e.srv.members {
		if !m.down {
			return i
		}
	}
	t.Fatal("no member is up")
	return -1
}

func (e *fakeEnv) StopMember(t testing.TB, member int)  { e.srv.StopMember(member) }
func (e *fakeEnv) StartMember(t testing.TB, member int) { e.srv.StartMember(member) }

// ReconnectTo sends conn's next reconnect to member (Conn.ReconnectTo).
func (e *fakeEnv) ReconnectTo(t testing.TB, conn recipe.Conn, member int) {
	conn.(*Conn).ReconnectTo(member)
}

// MemberOf returns the member conn is connected to (Conn.Member).
func (e *fakeEnv) MemberOf(t testing.TB, conn recipe.Conn) int { return conn.(*Conn).Member() }

// LoseNextReply loses the reply to the session's next request, after the
// server applied it.
func (e *fakeEnv) LoseNextReply(t testing.TB, conn recipe.Conn) {
	e.srv.LoseReplies(ReplyLoss{SessionID: conn.SessionID(), Nth: 1, Applied: true})
}
