package wire

import (
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// Client is one go-zookeeper client of a Pipe, as zk.Connect gives it to a
// program — the connection (a *zk.Conn, embedded) and its session's
// events — with the faults a zkfake.Conn offers its own client, in the
// same words: Partition and Heal, Pause and Resume, Crash, ReconnectTo and
// Member. They act where a real network and a real process would put
// them, on the client's own path to the server and at the server, never
// inside go-zookeeper: its reconnect, ping and setWatches logic runs as it
// is. The server's own faults (zkfake.Server's Expire, LoseReplies,
// StopMember, SetLagging) reach it as they reach any client.
//
// A Client's connections are relayed through queues, one each way, as a
// TCP socket buffers what its peer has not read yet; a fault holds the
// bytes there or drops the connections.
type Client struct {
	*zk.Conn
	// Events is the session's event channel, as zk.Connect returns it.
	Events <-chan zk.Event

	p *Pipe
	k *link
}

// ClientOption configures a Client.
type ClientOption func(*clientConfig)

type clientConfig struct {
	gate Gate
	zk   []func(*zk.Conn)
}

// WithGate has every request of the client's — every create, delete,
// exists, getData, setData, getChildren, multi, sync, getACL and setACL —
// wait at the server for gate.Before before the server applies it, and
// report to gate.After once applied: the gate decides when each request is
// applied, as the fuzz harness does. Requests of one client that wait
// together may be let through in any order (they came from goroutines
// racing to send), and a request still waiting when its connection closes
// is dropped unapplied, as one still in the network would be. Pings,
// setWatches, auth and closeSession are go-zookeeper's own and pass at
// once; a ping is answered even while a request of the client's waits.
func WithGate(gate Gate) ClientOption {
	return func(c *clientConfig) { c.gate = gate }
}

// WithConnOptions passes go-zookeeper's options to zk.Connect
// (zk.WithEventCallback, say), beside the pipe's dialer and host provider.
func WithConnOptions(opts ...func(*zk.Conn)) ClientOption {
	return func(c *clientConfig) { c.zk = append(c.zk, opts...) }
}

// NewClient opens a go-zookeeper session on the served fake over a
// network path of its own, as Connect does, and returns it with its
// faults. As with zk.Connect, the session is established in the
// background: wait for zk.StateHasSession on Events.
func (p *Pipe) NewClient(sessionTimeout time.Duration, opts ...ClientOption) (*Client, error) {
	var cfg clientConfig
	for _, o := range opts {
		o(&cfg)
	}
	k := newLink()
	k.gate, k.ordinal = cfg.gate, int(p.links.Add(1))
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return k.dial(p.ln, timeout, func(c net.Conn) *linkEnd { return &linkEnd{Conn: c, k: k} })
	}
	// go-zookeeper's option type is unexported: the caller's options go
	// in as one, made of the logger's.
	quiet := zk.WithLogger(discard{})
	options := quiet
	options = func(c *zk.Conn) {
		quiet(c)
		for _, o := range cfg.zk {
			o(c)
		}
	}
	conn, events, err := zk.Connect([]string{PipeAddress}, sessionTimeout, zk.WithDialer(dial), zk.WithHostProvider(&pipeHost{ordinal: k.ordinal}), options)
	if err != nil {
		return nil, err
	}
	return &Client{Conn: conn, Events: events, p: p, k: k}, nil
}

// linkEnd is the server's end of a connection of a Pipe's: the server
// finds the link's gate and member choice through it (k is nil for a
// plain Dial), and the link closes the server's side of the connection
// through it.
type linkEnd struct {
	net.Conn
	k *link

	mu     sync.Mutex
	server *clientConn
	closed bool
}

// serve records the server's side of the connection.
func (e *linkEnd) serve(cc *clientConn) {
	e.mu.Lock()
	closed := e.closed
	e.server = cc
	e.mu.Unlock()
	if closed {
		cc.close()
	}
}

// closeServer closes the server's side of the connection, now or as soon
// as it is served.
func (e *linkEnd) closeServer() {
	e.mu.Lock()
	cc := e.server
	e.closed = true
	e.mu.Unlock()
	if cc != nil {
		cc.close()
	}
}

// Partition cuts the client off from the server, both ways, as
// zkfake.Conn.Partition does: nothing is visible at first, until the
// client's read deadline passes and go-zookeeper drops the connection and
// dials again, in vain, every second. The server hears nothing from the
// session either and expires it once its timeout has passed. What was
// sent meanwhile waits on the link.
func (c *Client) Partition() { c.k.setCut(true) }

// Heal ends a partition or a pause: what waited on the link flows on, and
// the client's dials get through.
func (c *Client) Heal() { c.k.setCut(false) }

// Pause freezes the client's traffic as a stopped process's is frozen: it
// sends nothing and reads nothing, and the server expires its session once
// the timeout passes. go-zookeeper's own timers cannot be frozen from
// outside it: they run on, so unlike a zkfake.Conn's a paused Client
// notices its connection gone after its read deadline, and its dials wait
// until Resume. The code that uses the connection is the caller's to
// freeze (the fuzz harness holds its requests).
func (c *Client) Pause() { c.k.setCut(true) }

// Resume thaws a paused client: as Heal.
func (c *Client) Resume() { c.k.setCut(false) }

// Crash makes the client stop as a crashed process does: its connection
// closes, as the kernel closes a dead process's socket, and it never
// reaches the server again, so the server expires its session once the
// timeout has passed. The *zk.Conn is closed in the background so that its
// goroutines end; its closeSession never gets through, and the calls of
// the crashed code fail with zk.ErrClosing or zk.ErrConnectionClosed.
func (c *Client) Crash() {
	c.k.kill(true)
	go c.Conn.Close()
}

// Drop closes the client's connection, as a network blip does: the client
// dials again at once and resumes its session.
func (c *Client) Drop() { c.k.kill(false) }

// ReconnectTo sends the client's next reconnect to ensemble member i, as
// zkfake.Conn.ReconnectTo does: the session moves there at its next
// reconnect on the server's side (a lost reply), and the client's next
// new session starts there.
func (c *Client) ReconnectTo(i int) {
	c.k.mu.Lock()
	c.k.next, c.k.nextSet = i, true
	c.k.mu.Unlock()
	if conn := c.backing(); conn != nil {
		conn.ReconnectTo(i)
	}
}

// Member returns the ensemble member the client's session is on; 0 while
// it has none.
func (c *Client) Member() int {
	if conn := c.backing(); conn != nil {
		return conn.Member()
	}
	return 0
}

// backing returns the fake's Conn that carries the client's session on
// the server, nil if the listener holds none.
func (c *Client) backing() *zkfake.Conn {
	s, err := c.p.session(c.Conn.SessionID())
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}
