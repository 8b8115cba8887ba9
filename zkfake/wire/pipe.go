package wire

import (
	"errors"
	"io"
	"net"
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
type Pipe struct {
	*Listener
	ln *pipeListener
}

// ServePipe serves srv over pipes until Close, as Listen serves it over TCP.
func ServePipe(srv *zkfake.Server, opts ...Option) *Pipe {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	l := newListener(srv, ln, opts)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return &Pipe{Listener: l, ln: ln}
}

// PipeAddress is the address a Pipe's clients name; Dial ignores it.
const PipeAddress = "pipe:2181"

// Dial is a zk.Dialer (zk.WithDialer(p.Dial)): it hands the server one end
// of a new pipe and returns the other, or fails as a refused connection
// once the Pipe is closed.
func (p *Pipe) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.ln.conns <- server:
		return &pipeClient{Conn: client}, nil
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
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
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
// goes at once, and once a connection was made every later one is a retry
// of the whole list, which the client makes after a second's pause.
type pipeHost struct {
	connected bool
}

func (h *pipeHost) Init(servers []string) error { return nil }
func (h *pipeHost) Len() int                    { return 1 }
func (h *pipeHost) Connected()                  { h.connected = true }

// Next returns the address, and whether it starts the list over.
func (h *pipeHost) Next() (string, bool) { return PipeAddress, h.connected }
