package wire_test

import (
	"errors"
	"net"
	"sync"
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
type pipeTarget struct{}

func (pipeTarget) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
			ln := newPipeListener()
			served := make(chan struct{})
			go func() {
				defer close(served)
				wire.Serve(srv, ln)
			}()
			env := &pipeEnv{servedEnv: newServedEnv(srv), ln: ln}
			defer func() {
				ln.Close()
				<-served
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

// pipeListener is a net.Listener whose connections are net.Pipe pairs.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial hands the server one end of a new pipe and returns the other.
func (l *pipeListener) dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe:2181" }

// pipeLink is one client's way to the server; Partition cuts its
// connection and refuses new ones until Heal.
type pipeLink struct {
	ln   *pipeListener
	mu   sync.Mutex
	cut  bool
	conn net.Conn
}

var errRefused = errors.New("connection refused (partitioned)")

func (p *pipeLink) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return nil, errRefused
	}
	c, err := p.ln.dial()
	p.conn = c
	return c, err
}

func (p *pipeLink) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	if p.conn != nil {
		p.conn.Close()
	}
}

func (p *pipeLink) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// pipeEnv is a scenario's view of a fake served over pipes.
type pipeEnv struct {
	servedEnv
	ln *pipeListener
}

func (e *pipeEnv) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	link := &pipeLink{ln: e.ln}
	c, events, err := zk.Connect([]string{"pipe:2181"}, timeout, quiet, zk.WithDialer(link.dial), zk.WithHostProvider(&oneHost{}))
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	t.Cleanup(c.Close)
	e.remember(c, link)
	return c, events
}

// TestConformanceInVirtualTime runs the conformance suite over
// go-zookeeper's client, the wire protocol and the fake, all inside
// synctest bubbles.
func TestConformanceInVirtualTime(t *testing.T) {
	zktest.Run(t, pipeTarget{})
}

// oneHost is a zk.HostProvider of the one pipe address, with no name
// lookup (the default provider resolves names, which a bubble cannot).
type oneHost struct {
	tried bool
}

func (h *oneHost) Init(servers []string) error { return nil }
func (h *oneHost) Len() int                    { return 1 }
func (h *oneHost) Connected()                  { h.tried = false }

// Next returns the address; retryStart is true when it is tried again
// without a connection in between, as go-zookeeper's own provider says
// of a one-server list.
func (h *oneHost) Next() (string, bool) {
	retry := h.tried
	h.tried = true
	return "pipe:2181", retry
}
