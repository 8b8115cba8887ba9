package wire_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"github.com/zksim/zksim/zkfake/zktest"
)

// clientTarget runs the conformance suite over Pipe.NewClient: each
// connection a Client on a network path of its own, whose Partition and
// Heal are the Client's (bytes held on the path), not the listener's.
var clientTarget = pipeTarget{env: func(srv *zkfake.Server, pipe *wire.Pipe) zktest.Env {
	return &clientEnv{pipeEnv: pipeEnv{servedEnv: newServedEnv(srv), pipe: pipe}, clients: map[zktest.Conn]*wire.Client{}}
}}

type clientEnv struct {
	pipeEnv
	mu      sync.Mutex
	clients map[zktest.Conn]*wire.Client
}

func (e *clientEnv) client(conn zktest.Conn) *wire.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clients[conn]
}

func (e *clientEnv) Partition(conn zktest.Conn) error { e.client(conn).Partition(); return nil }
func (e *clientEnv) Heal(conn zktest.Conn) error      { e.client(conn).Heal(); return nil }

func (e *clientEnv) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	c, err := e.pipe.NewClient(timeout)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range c.Events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	e.mu.Lock()
	e.clients[c.Conn] = c
	e.mu.Unlock()
	t.Cleanup(c.Close)
	return c.Conn, c.Events
}

// TestConformanceOverClients runs the conformance suite over Clients, so
// that its partition scenarios hold the Client's own partition to what
// ZooKeeper's clients see.
func TestConformanceOverClients(t *testing.T) {
	zktest.Run(t, clientTarget)
}

// newClient opens a Client and waits for its session.
func newClient(t *testing.T, pipe *wire.Pipe, timeout time.Duration, opts ...wire.ClientOption) *wire.Client {
	t.Helper()
	c, err := pipe.NewClient(timeout, opts...)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, c.Events, zk.StateHasSession)
	return c
}

// waitFor reads events until state, failing if the channel closes first.
func waitFor(t *testing.T, events <-chan zk.Event, state zk.State) {
	t.Helper()
	for ev := range events {
		if ev.State == state {
			return
		}
	}
	t.Fatalf("the event channel closed before %v", state)
}

func servedFake(t *testing.T) (*zkfake.Server, *wire.Pipe) {
	srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
	pipe := wire.ServePipe(srv)
	t.Cleanup(func() {
		pipe.Close()
		srv.Close()
	})
	return srv, pipe
}

// A partition the client outlives by its session timeout ends the session
// on the server; healed, the client learns of the expiry and starts a new
// one, as from a real server.
func TestClientPartitionExpiresTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, pipe := servedFake(t)
		c := newClient(t, pipe, 4*time.Second)
		defer c.Close()
		if _, err := c.Create("/mine", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		old := c.SessionID()
		c.Partition()
		time.Sleep(5 * time.Second)
		if live := srv.Sessions(); len(live) != 0 {
			t.Fatalf("sessions after the partition outlived the timeout: %#x; want none", live)
		}
		if c.State() == zk.StateHasSession {
			t.Fatal("the client still says it has its session, past its read deadline")
		}
		c.Heal()
		waitFor(t, c.Events, zk.StateExpired)
		waitFor(t, c.Events, zk.StateHasSession)
		if c.SessionID() == old {
			t.Fatal("the client carries on with the expired session")
		}
		if ok, _, err := c.Exists("/mine"); err != nil || ok {
			t.Fatalf("Exists(/mine) after the expiry = %v, %v; want false, nil", ok, err)
		}
	})
}

// A partition healed before the client notices it is invisible: a request
// sent meanwhile waits on the path and is answered once it heals.
func TestClientPartitionHealedUnnoticed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, pipe := servedFake(t)
		c := newClient(t, pipe, 6*time.Second)
		defer c.Close()
		c.Partition()
		done := make(chan error, 1)
		go func() {
			_, err := c.Create("/during", nil, 0, zk.WorldACL(zk.PermAll))
			done <- err
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Create returned %v during the partition", err)
		default:
		}
		c.Heal()
		if err := <-done; err != nil {
			t.Fatalf("Create after the heal: %v", err)
		}
		if c.State() != zk.StateHasSession {
			t.Fatalf("state %v; want the session carried on", c.State())
		}
	})
}

// A request sent into a cut, on a connection the client then gives up,
// still reaches the server once the cut heals, before the client's new
// connection: the server applies it, though the client was told the
// connection closed, as a real server applies what a dead connection
// delivered. The test runs many times: the order must not be the
// scheduler's.
func TestClientRequestSentIntoACutArrivesBeforeTheNextConnection(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			srv, pipe := servedFake(t)
			c := newClient(t, pipe, 4*time.Second)
			defer c.Close()
			c.Partition()
			failed := make(chan error, 1)
			go func() {
				_, err := c.Create("/sent-into-the-cut", nil, 0, zk.WorldACL(zk.PermAll))
				failed <- err
			}()
			// Past go-zookeeper's read deadline (two thirds of the
			// timeout), within the session's timeout.
			time.Sleep(3 * time.Second)
			if err := <-failed; !errors.Is(err, zk.ErrConnectionClosed) {
				t.Fatalf("Create during the cut = %v; want zk.ErrConnectionClosed, the client having given the connection up", err)
			}
			before := srv.Zxid()
			c.Heal()
			waitFor(t, c.Events, zk.StateHasSession)
			if ok, _, err := c.Exists("/sent-into-the-cut"); err != nil || !ok {
				t.Fatalf("Exists after the heal = %v, %v; want the create applied (zxid %#x before the heal, %#x now)", ok, err, before, srv.Zxid())
			}
		})
	}
}

// A client closed while its path is cut, and then the Pipe, leave nothing
// running once go-zookeeper has given up on its connection: both ends of
// the path are gone, so what waits on it can never be delivered, and
// synctest would fail the test on a goroutine left waiting for a heal.
func TestClientClosedWhileCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, pipe := servedFake(t)
		c := newClient(t, pipe, 4*time.Second)
		c.Partition()
		c.Close()
		pipe.Close()
		time.Sleep(time.Minute)
	})
}

// A crashed client never reaches the server again: its session expires
// and its ephemeral nodes go, and its own calls fail.
func TestClientCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, pipe := servedFake(t)
		c := newClient(t, pipe, 4*time.Second)
		if _, err := c.Create("/mine", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		c.Crash()
		synctest.Wait()
		if len(srv.Sessions()) != 1 {
			t.Fatal("the session ended at once; a crashed client sends no closeSession")
		}
		time.Sleep(5 * time.Second)
		if live := srv.Sessions(); len(live) != 0 {
			t.Fatalf("sessions past the crashed client's timeout: %#x; want none", live)
		}
		if _, _, err := c.Get("/"); err == nil {
			t.Fatal("a call of the crashed client succeeded")
		}
	})
}

// WithGate holds a request at the server until the gate lets it through,
// while the session lives on: its pings are answered meanwhile.
func TestClientGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, pipe := servedFake(t)
		release := make(chan struct{})
		var seen []wire.Request
		var replies []wire.Reply
		var mu sync.Mutex
		gate := wire.Gate{
			Before: func(req wire.Request) any {
				mu.Lock()
				seen = append(seen, req)
				mu.Unlock()
				<-release
				return nil
			},
			After: func(req wire.Request, _ any, reply wire.Reply) {
				mu.Lock()
				replies = append(replies, reply)
				mu.Unlock()
			},
		}
		c := newClient(t, pipe, 4*time.Second, wire.WithGate(gate))
		defer c.Close()
		done := make(chan error, 1)
		go func() {
			_, err := c.Create("/held", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			done <- err
		}()
		time.Sleep(20 * time.Second) // five session timeouts
		synctest.Wait()
		if ok, _, _ := serverExists(t, srv, "/held0000000000"); ok {
			t.Fatal("the server applied the request before the gate let it through")
		}
		if len(srv.Sessions()) != 1 || c.State() != zk.StateHasSession {
			t.Fatal("the session did not outlive the held request: pings went unanswered")
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := wire.Request{Op: "create", Path: "/held", Detail: "ephemeral sequential", Write: true, Arrival: 1}
		if len(seen) != 1 || seen[0] != want {
			t.Fatalf("the gate saw %+v; want [%+v]", seen, want)
		}
		if len(replies) != 1 || replies[0].Path != "/held0000000000" || replies[0].Err != nil {
			t.Fatalf("After got %+v; want the created path", replies)
		}
	})
}

// ReconnectTo sends the client's next new session to the member named.
func TestClientReconnectToStartsTheNextSessionThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithTickTime(testTick), zkfake.WithEnsemble(3))
		pipe := wire.ServePipe(srv)
		defer func() {
			pipe.Close()
			srv.Close()
		}()
		c := newClient(t, pipe, 4*time.Second)
		defer c.Close()
		to := (c.Member() + 1) % 3
		c.ReconnectTo(to)
		srv.Expire(c.SessionID())
		waitFor(t, c.Events, zk.StateExpired)
		waitFor(t, c.Events, zk.StateHasSession)
		if got := c.Member(); got != to {
			t.Fatalf("the new session is on member %d; want %d", got, to)
		}
	})
}

// serverExists asks the server through a session of its own.
func serverExists(t *testing.T, srv *zkfake.Server, path string) (bool, *zk.Stat, error) {
	t.Helper()
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.Exists(path)
}
