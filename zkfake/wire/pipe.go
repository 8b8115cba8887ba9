package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// Pipe serves a zkfake.Server to go-zookeeper clients of this process over
// in-memory pipes (net.Pipe) instead of TCP: the real client, its
// reconnects and its timers, against the fake, with no socket. Inside a
// testing/synctest bubble everything runs in virtual time, so a session
// timeout passes at once. It is how code that takes a *zk.Conn itself
// (go-zookeeper's zk.Lock, much production code), and so cannot be handed a
// *zkfake.Conn, is tested against the fake and its faults. It is a
// Listener whose connections are pipes: its faults (Drop, Partition),
// four-letter words and Admin work as over TCP.
//
// # A test that waits for ever
//
// Inside a synctest bubble, a test stuck waiting for something that never
// comes does not deadlock while a go-zookeeper client is connected: its
// ping timers keep virtual time running, and the test would spin until
// go test's timeout. So a Pipe watches its clients: once they have sent
// nothing but pings for its idle limit of virtual time (an hour by
// default, WithIdleLimit), it says so on standard error, drops every
// connection and makes every dial wait for Close. The clients then wait
// too, with no timer left to run, and synctest fails the test as
// deadlocked, showing where each goroutine waits: look for the test's own
// goroutine, blocked on what never came. A test that means to idle that
// long raises the limit.
//
// # -race
//
// go-zookeeper v1.0.4 reads its last-seen zxid, to send with setWatches
// when it reconnects, while its reading goroutine may write it
// (go-zookeeper/zk#35). A Pipe answers a reconnecting client in the order
// that avoids the race: to a client that holds watches, nothing after the
// connect response until its setWatches has come (or, should it have no
// watch left to set after all, its first ping). One case is left: a
// client that has added auth re-sends it, and waits for the answer, before
// it sends anything else, so -race may still report #35 for a client that
// has added auth and holds watches when it reconnects. The race is
// go-zookeeper's, not the code under test's.
type Pipe struct {
	*Listener
	ln   *pipeListener
	idle *time.Timer // fires after the idle limit with nothing but pings
	// links counts the Clients made, to number their network paths.
	links atomic.Int64
}

// DefaultIdleLimit is how long a Pipe's clients may send nothing but
// pings before it takes its test for stuck (see Pipe).
const DefaultIdleLimit = time.Hour

// WithIdleLimit sets how long a Pipe's clients may send nothing but pings,
// in virtual time, before the Pipe takes its test for stuck and stops
// answering (see Pipe); zero or less never. Listen ignores it.
func WithIdleLimit(d time.Duration) Option { return func(c *config) { c.idleLimit = d } }

// ServePipe serves srv over pipes until Close, as Listen serves it over TCP.
func ServePipe(srv *zkfake.Server, opts ...Option) *Pipe {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{}), wedged: make(chan struct{})}
	l := newListener(srv, ln, append([]Option{WithIdleLimit(DefaultIdleLimit)}, opts...))
	p := &Pipe{Listener: l, ln: ln}
	if limit := l.cfg.idleLimit; limit > 0 {
		p.idle = time.AfterFunc(limit, p.wedge)
		l.active = func() { p.idle.Reset(limit) }
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return p
}

// wedge stops the Pipe answering, its clients idle past the limit: every
// connection drops and every dial waits for Close, so that a stuck test
// deadlocks and synctest says where it waits.
func (p *Pipe) wedge() {
	select {
	case <-p.ln.done:
		return
	case <-p.ln.wedged:
		return
	default:
	}
	fmt.Fprintf(os.Stderr, "wire: for %v of virtual time the Pipe's clients have sent nothing but pings: the test seems stuck, waiting for something that never comes while go-zookeeper's timers keep time running. "+
		"The Pipe stops answering so that synctest reports the deadlock and where each goroutine waits (look for the test's own); a test that means to idle so long passes wire.WithIdleLimit.\n", p.cfg.idleLimit)
	p.ln.wedge()
	for _, cc := range p.clients() {
		cc.close()
	}
}

// Close stops serving, as Listener.Close does.
func (p *Pipe) Close() error {
	if p.idle != nil {
		p.idle.Stop()
	}
	return p.Listener.Close()
}

// PipeAddress is the address a Pipe's clients name; Dial ignores it.
const PipeAddress = "pipe:2181"

// Dial is a zk.Dialer (zk.WithDialer(p.Dial)): it hands the server one end
// of a new pipe and returns the other, or fails as a refused connection
// once the Pipe is closed.
func (p *Pipe) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if p.ln.isWedged() {
		<-p.ln.done
		return nil, net.ErrClosed
	}
	client, server := net.Pipe()
	select {
	case p.ln.conns <- &linkEnd{Conn: server}:
		return &pipeClient{Conn: client}, nil
	case <-p.ln.wedged:
		<-p.ln.done
		return nil, net.ErrClosed
	case <-p.ln.done:
		return nil, net.ErrClosed
	}
}

// HostProvider returns a zk.HostProvider of the one pipe address that
// looks up no name: go-zookeeper's default provider resolves names, which
// fails for the pipe's and which a synctest bubble cannot do anyway. Pass
// it with zk.WithHostProvider, beside zk.WithDialer(p.Dial), to zk.Connect
// with any other options of yours; Connect does it for you.
func (p *Pipe) HostProvider() zk.HostProvider { return &pipeHost{} }

// Connect opens a go-zookeeper session on the served fake: zk.Connect with
// Dial as its dialer, HostProvider's provider, and a logger that discards
// go-zookeeper's lines about every connect and reconnect. For other
// options call zk.Connect with those two yourself: go-zookeeper takes
// options only in Connect (its SetLogger races with the connection's own
// goroutine). As with zk.Connect, the session is established in the
// background: wait for zk.StateHasSession on the channel.
func (p *Pipe) Connect(sessionTimeout time.Duration) (*zk.Conn, <-chan zk.Event, error) {
	return zk.Connect([]string{PipeAddress}, sessionTimeout, zk.WithDialer(p.Dial), zk.WithHostProvider(p.HostProvider()), zk.WithLogger(discard{}))
}

// discard is a zk.Logger that logs nothing.
type discard struct{}

func (discard) Printf(string, ...any) {}

// pipeListener is a net.Listener whose connections are net.Pipe ends.
type pipeListener struct {
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	wedged chan struct{} // closed once the Pipe takes its test for stuck
	wedge1 sync.Once
}

func (l *pipeListener) wedge() { l.wedge1.Do(func() { close(l.wedged) }) }

func (l *pipeListener) isWedged() bool {
	select {
	case <-l.wedged:
		return true
	default:
		return false
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.wedged:
		<-l.done
		return nil, net.ErrClosed
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return PipeAddress }

// pipeClient is the client's end of a pipe. Once the server has closed its
// end, a write on a pipe fails at once with io.ErrClosedPipe, which
// go-zookeeper hands to the caller as it is; over TCP the bytes go into the
// socket's buffer and the close shows as EOF on the next read, which
// go-zookeeper reports as zk.ErrConnectionClosed. So a write after the
// server's close reports success, and the read that follows EOF.
type pipeClient struct {
	net.Conn
	closed atomic.Bool // closed by the client itself
}

func (c *pipeClient) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if errors.Is(err, io.ErrClosedPipe) && !c.closed.Load() {
		return len(b), nil
	}
	return n, err
}

func (c *pipeClient) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// pipeHost is a zk.HostProvider of the one pipe address, which behaves as
// go-zookeeper's own provider does with a one-server list: the first dial
// goes at once, and every later one, after a failed dial as after a lost
// connection, is a retry of the whole list, which the client makes after a
// second's pause. (A provider that let a failed dial retry at once would
// have the client dial a refusing Pipe in a loop that never waits.)
//
// A Client's provider (NewClient) waits, before it answers a retry, its
// link's ordinal in microseconds, as the fake's own Conns stagger their
// reconnect rounds. Clients cut off together retry a second later, all at
// one instant, and would otherwise reach the server in whatever order the
// Go scheduler ran them, which decides the order of their new sessions'
// ids. And go-zookeeper fails the requests queued at the moment of the
// answer with zk.ErrNoServer: the wait puts that moment after whatever the
// client's code asks at the instant its connection drops, rather than
// wherever the scheduler ran it.
type pipeHost struct {
	dialed  bool
	ordinal int // the link's, for a Client's provider; 0 waits for nothing
}

func (h *pipeHost) Init(servers []string) error { return nil }
func (h *pipeHost) Len() int                    { return 1 }
func (h *pipeHost) Connected()                  {}

// Next returns the address, and whether it starts the list over.
func (h *pipeHost) Next() (string, bool) {
	retry := h.dialed
	h.dialed = true
	if retry && h.ordinal > 0 {
		time.Sleep(time.Duration(h.ordinal) * time.Microsecond)
	}
	return PipeAddress, retry
}
