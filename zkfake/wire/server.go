package wire

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/jute"
)

// MaxFrameSize is the largest frame the server accepts: ZooKeeper's default
// jute.maxbuffer. A longer (or negative) length prefix closes the connection,
// as the real server's "Len error" does.
const MaxFrameSize = 0xfffff

// Option configures a Listener.
type Option func(*config)

type config struct {
	fourLetterWords []string // nil: every one
	maxConnections  int
	maxFrameSize    int
	idleLimit       time.Duration     // a Pipe's (WithIdleLimit)
	saslUsers       map[string]string // nil: no SASL (WithSASLUsers)
}

// WithMaxConnections caps the number of client connections open at once
// (ZooKeeper's maxClientCnxns, default 60 per client address; every client
// here is on loopback, so the cap is global). Connections over the cap are
// closed at once, as the real server closes them. Zero or less means no cap.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxConnections = n } }

// WithMaxFrameSize sets the largest frame accepted (default MaxFrameSize).
func WithMaxFrameSize(n int) Option { return func(c *config) { c.maxFrameSize = n } }

// Listener serves a zkfake.Server over ZooKeeper's client protocol. It
// negotiates session timeouts with the server's tickTime
// (zkfake.WithTickTime), clamped to 2..20 ticks as ZooKeeper clamps them.
type Listener struct {
	srv     *zkfake.Server
	ln      net.Listener
	cfg     config
	started time.Time

	mu          sync.Mutex
	sessions    map[int64]*session
	conns       map[*clientConn]struct{}
	partitioned map[int64]bool // sessions whose reconnects are refused (Partition)
	closed      bool
	quit        chan struct{} // closed by Close
	wg          sync.WaitGroup

	received, sent atomic.Int64
	traceMask      atomic.Int64 // gtmk and stmk

	// active, if set, is told of every connection and every request
	// but a ping (a Pipe's watch for a stuck test).
	active func()
}

// heard tells the listener's watch that a client did something.
func (l *Listener) heard() {
	if l.active != nil {
		l.active()
	}
}

// Listen serves srv on addr (a loopback address such as "127.0.0.1:0") until
// Close is called.
func Listen(srv *zkfake.Server, addr string, opts ...Option) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := newListener(srv, ln, opts)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return l, nil
}

// Serve serves srv on ln until ln fails (for instance because it was closed)
// and returns that error; then it closes every connection it accepted and
// every session it opened.
func Serve(srv *zkfake.Server, ln net.Listener, opts ...Option) error {
	l := newListener(srv, ln, opts)
	err := l.acceptLoop()
	l.Close()
	return err
}

func newListener(srv *zkfake.Server, ln net.Listener, opts []Option) *Listener {
	cfg := config{maxConnections: 60, maxFrameSize: MaxFrameSize}
	for _, o := range opts {
		o(&cfg)
	}
	l := &Listener{
		srv: srv, ln: ln, cfg: cfg, started: time.Now(),
		sessions:    map[int64]*session{},
		conns:       map[*clientConn]struct{}{},
		partitioned: map[int64]bool{},
		quit:        make(chan struct{}),
	}
	l.traceMask.Store(defaultTraceMask)
	return l
}

// Addr returns the address the listener serves.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops listening, drops every client connection and closes every
// session it opened on the fake server (their ephemeral nodes go).
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.quit)
	conns := make([]*clientConn, 0, len(l.conns))
	for cc := range l.conns {
		conns = append(conns, cc)
	}
	sessions := make([]*session, 0, len(l.sessions))
	for _, s := range l.sessions {
		sessions = append(sessions, s)
	}
	l.mu.Unlock()
	err := l.ln.Close()
	for _, cc := range conns {
		cc.close()
	}
	for _, s := range sessions {
		s.end(false)
	}
	l.wg.Wait()
	return err
}

func (l *Listener) acceptLoop() error {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			return err
		}
		cc := &clientConn{l: l, nc: nc, wake: make(chan struct{}, 1), done: make(chan struct{}), hold: -1}
		end, _ := nc.(*linkEnd)
		if end != nil {
			cc.pipe, cc.link = true, end.k
		}
		l.mu.Lock()
		full := l.cfg.maxConnections > 0 && len(l.conns) >= l.cfg.maxConnections
		if l.closed || full {
			l.mu.Unlock()
			nc.Close()
			continue
		}
		l.conns[cc] = struct{}{}
		l.wg.Add(2)
		l.mu.Unlock()
		if end != nil {
			end.serve(cc)
		}
		go func() {
			defer l.wg.Done()
			cc.writeLoop()
		}()
		go func() {
			defer l.wg.Done()
			cc.serve()
		}()
	}
}

// negotiate clamps a requested session timeout to 2..20 ticks.
func (l *Listener) negotiate(ms int32) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	tick := l.srv.TickTime()
	lo, hi := 2*tick, 20*tick
	return min(max(d, lo), hi)
}

// clientConn is one TCP connection. Its frames go out through a queue so that
// watch notifications, which the fake raises while it holds its lock, never
// block, and leave in the order they were raised relative to replies.
type clientConn struct {
	l  *Listener
	nc net.Conn

	mu      sync.Mutex
	queue   [][]byte
	closing bool // close once the queue is flushed
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once
	session *session
	stats   connStats
	// hold, from 0 up, is how many of the queued frames may go out
	// while the rest wait (see holdReplies); -1 lets them all go.
	hold int

	// pipe: the connection is a Pipe's, to a go-zookeeper client in this
	// process; link is the client's path, if it has one of its own
	// (Pipe.NewClient).
	pipe bool
	link *link

	// sasl is the connection's SASL login, from its first SASL request
	// on (see handleSASL); only the connection's reading goroutine uses it.
	sasl *digestServer

	received, sent atomic.Int64
}

// isClosed reports whether the connection has closed.
func (cc *clientConn) isClosed() bool {
	select {
	case <-cc.done:
		return true
	default:
		return false
	}
}

// holdReplies holds every frame queued from now on, until releaseReplies.
//
// go-zookeeper v1.0.4 reads its last-seen zxid, to send it with
// setWatches, on its connection goroutine, while the goroutine that reads
// replies may be writing it (go-zookeeper/zk#35): a data race -race
// reports, with no harm done, whenever a reply comes in before the
// setWatches has been built. The wire does not let one: on a resumed
// session's connection to a client of this process that holds watches,
// nothing more goes out after the connect response and the notifications
// held for the session until the client has sent setWatches, which it
// builds before it sends it, or, should it have no watch left to set
// after all, its first ping. (A client that holds none reads no zxid.)
// One case is
// left: a client that has added auth re-sends it first and waits for the
// answer before it sends anything else, so the answer goes at once, and
// may race the zxid's read if the client also holds watches.
func (cc *clientConn) holdReplies() {
	cc.mu.Lock()
	cc.hold = len(cc.queue)
	cc.mu.Unlock()
}

// releaseReplies lets held frames go, once op shows that go-zookeeper
// has read its zxid, if it was to.
func (cc *clientConn) releaseReplies(op int32) {
	if op != jute.OpPing && op != jute.OpSetWatches && op != jute.OpSetWatches2 && op != jute.OpSetAuth {
		return
	}
	cc.mu.Lock()
	held := cc.hold >= 0
	cc.hold = -1
	cc.mu.Unlock()
	if held {
		select {
		case cc.wake <- struct{}{}:
		default:
		}
	}
}

// send queues a frame body (without its length prefix).
func (cc *clientConn) send(body []byte) {
	cc.mu.Lock()
	cc.queue = append(cc.queue, body)
	cc.mu.Unlock()
	select {
	case cc.wake <- struct{}{}:
	default:
	}
}

// sendAndClose queues a last frame and closes the connection once it is out.
func (cc *clientConn) sendAndClose(body []byte) {
	cc.mu.Lock()
	cc.queue = append(cc.queue, body)
	cc.closing = true
	cc.mu.Unlock()
	select {
	case cc.wake <- struct{}{}:
	default:
	}
}

func (cc *clientConn) writeLoop() {
	for {
		select {
		case <-cc.done:
			return
		case <-cc.wake:
		}
		cc.mu.Lock()
		q, closing := cc.queue, cc.closing
		cc.queue = nil
		if cc.hold >= 0 {
			q, cc.queue, cc.hold = q[:cc.hold], q[cc.hold:], 0
			closing = false
		}
		cc.mu.Unlock()
		var buf []byte
		for _, body := range q {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
			buf = append(buf, body...)
		}
		if len(buf) > 0 {
			// A client that stops reading is dropped rather than left to
			// pile up replies and notifications without bound.
			cc.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := cc.nc.Write(buf); err != nil {
				cc.close()
				return
			}
			cc.sent.Add(int64(len(q)))
			cc.l.sent.Add(int64(len(q)))
		}
		if closing {
			cc.close()
			return
		}
	}
}

// close drops the connection; its session, if any, lives on until it
// times out or the client reconnects.
func (cc *clientConn) close() {
	cc.once.Do(func() {
		// Leave the listener's count before the client can see the close,
		// so that what it asks next (a four-letter word, say) does not
		// count this connection.
		cc.l.mu.Lock()
		delete(cc.l.conns, cc)
		cc.l.mu.Unlock()
		close(cc.done)
		cc.nc.Close()
		cc.mu.Lock()
		s := cc.session
		cc.mu.Unlock()
		if s != nil {
			s.detach(cc)
		}
	})
}

// readFrame reads one length-prefixed frame, refusing a length outside
// 0..maxFrameSize as the real server does.
func (cc *clientConn) readFrame() ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(cc.nc, lenBuf[:]); err != nil {
		return nil, err
	}
	return cc.readBody(int32(binary.BigEndian.Uint32(lenBuf[:])))
}

var errFrameLength = errors.New("wire: frame length out of range")

func (cc *clientConn) readBody(n int32) ([]byte, error) {
	if n < 0 || int(n) > cc.l.cfg.maxFrameSize {
		return nil, errFrameLength
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(cc.nc, buf); err != nil {
		return nil, err
	}
	cc.received.Add(1)
	cc.l.received.Add(1)
	return buf, nil
}

// writeTimeout bounds how long a client may leave its replies unread.
const writeTimeout = 30 * time.Second

// connectTimeout bounds how long a connection may stay without a session.
const connectTimeout = 10 * time.Second

func (cc *clientConn) serve() {
	defer func() {
		cc.mu.Lock()
		closing := cc.closing
		cc.mu.Unlock()
		if closing {
			// A last reply is queued: the writer closes once it is out.
			<-cc.done
		} else {
			cc.close()
		}
	}()
	cc.nc.SetReadDeadline(time.Now().Add(connectTimeout))
	var lenBuf [4]byte
	if _, err := io.ReadFull(cc.nc, lenBuf[:]); err != nil {
		return
	}
	if word := string(lenBuf[:]); isFourLetterWord(word) {
		// The real server counts the word as a packet received.
		cc.received.Add(1)
		cc.l.received.Add(1)
		cc.sendRaw([]byte(cc.l.fourLetterWord(word, cc)))
		return
	}
	frame, err := cc.readBody(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if err != nil {
		cc.drain(err)
		return
	}
	creq, err := decodeConnect(frame)
	if err != nil {
		return
	}
	cc.l.heard()
	s := cc.l.handshake(cc, creq)
	if s == nil {
		return
	}
	cc.nc.SetReadDeadline(time.Time{})
	var gate Gate
	if cc.link != nil {
		gate = cc.link.gate
	}
	for {
		frame, err := cc.readFrame()
		if err != nil {
			cc.drain(err)
			return
		}
		s.touch()
		req, err := decodeRequest(frame)
		if err != nil {
			return
		}
		cc.releaseReplies(req.op)
		if req.op != jute.OpPing {
			cc.l.heard()
		}
		if gate.Before != nil || gate.After != nil {
			if gr, ok := gateRequest(req); ok {
				if cc.link != nil {
					gr.Arrival = cc.link.arrivals.Add(1)
				}
				go s.gated(cc, req, gr, gate)
				continue
			}
		}
		if !s.handle(cc, req) {
			return
		}
	}
}

// drain reads and discards, for a moment, what the client is still sending
// after a frame was refused for its length, so that the client sees the
// connection closed (EOF) rather than reset under its write, as it does with
// the real server, which has taken its bytes in before it closes.
func (cc *clientConn) drain(err error) {
	if err != errFrameLength {
		return
	}
	cc.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	io.CopyN(io.Discard, cc.nc, 4*int64(cc.l.cfg.maxFrameSize))
}

// sendRaw writes bytes with no framing (four-letter-word answers).
func (cc *clientConn) sendRaw(b []byte) {
	cc.nc.SetWriteDeadline(time.Now().Add(connectTimeout))
	cc.nc.Write(b)
}

// handshake answers a connect request: a new session, a resumed one, or,
// for a session that is gone or a wrong password, the zero answer go-zookeeper
// and the Java client read as expiry. It returns nil if the connection has
// no session.
func (l *Listener) handshake(cc *clientConn, creq *connectRequest) *session {
	if creq.lastZxidSeen > l.srv.Zxid() {
		// The client has seen a newer state than this server's: the real
		// server refuses it so that it moves to another member.
		return nil
	}
	if creq.sessionID != 0 {
		l.mu.Lock()
		s := l.sessions[creq.sessionID]
		l.mu.Unlock()
		err := errEnded
		if s != nil && string(s.passwd) == string(creq.passwd) {
			// cc knows its session before attach answers the client, as
			// a new session's does: a Drop or Partition the client asks
			// for once it hears the answer closes cc, and close detaches
			// cc from the session it knows.
			cc.gotSession(s)
			if err = s.attach(cc, creq.hasReadOnly); err != nil {
				cc.gotSession(nil)
			}
		}
		if err == errEnded && l.isPartitioned(creq.sessionID) {
			// A partition outlives the session it cut off: the client
			// learns of the expiry once healed, as from a real server.
			err = errPartitioned
		}
		switch err {
		case nil:
			if cc.pipe && s.watching() {
				cc.holdReplies()
			}
			return s
		case errPartitioned:
			// Cut off (Partition): as if no server answered.
			return nil
		}
		cc.sendAndClose(encodeConnectResponse(0, 0, make([]byte, 16), creq.hasReadOnly))
		<-cc.done
		return nil
	}
	var opts []zkfake.ConnOption
	if cc.link != nil {
		opts = cc.link.takeNext()
	}
	s, err := l.newSession(creq.timeout, opts...)
	if err != nil {
		return nil
	}
	cc.gotSession(s)
	if s.attach(cc, creq.hasReadOnly) != nil {
		return nil
	}
	return s
}

// gotSession attaches cc to s for cons and stat (to none if s is nil),
// and for close, which detaches cc from s.
func (cc *clientConn) gotSession(s *session) {
	zxid := cc.l.srv.Zxid() // not under cc.mu: the fake calls send, which takes it, under its own lock
	now := time.Now()
	cc.mu.Lock()
	cc.session = s
	cc.stats = connStats{established: now, lastOp: "SESS", lastZxid: zxid, lastResp: now}
	cc.mu.Unlock()
}

func (l *Listener) newSession(timeoutMs int32, opts ...zkfake.ConnOption) (*session, error) {
	timeout := l.negotiate(timeoutMs)
	s := &session{l: l, timeout: timeout, passwd: make([]byte, 16), registered: map[watchKey]bool{}}
	rand.Read(s.passwd)
	conn, events, err := l.srv.Connect(timeout, append(opts, zkfake.WithEventCallback(s.onEvent), zkfake.WithAnswerCallback(s.answered), zkfake.WithoutRenewal())...)
	if err != nil {
		return nil, err
	}
	// Without a quorum the fake's Conn dials in rounds until one serves
	// it; a listener that closes meanwhile stops waiting.
	for waiting := true; waiting; {
		select {
		case ev, ok := <-events:
			waiting = ok && ev.State != zk.StateHasSession
		case <-l.quit:
			conn.Close()
			return nil, net.ErrClosed
		}
	}
	s.conn, s.id = conn, conn.SessionID()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		conn.Close()
		return nil, net.ErrClosed
	}
	l.sessions[s.id] = s
	l.mu.Unlock()
	return s, nil
}
