package ensemble

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// upstreamDialWait bounds the proxy's own connection to a member.
const upstreamDialWait = 5 * time.Second

// errLinkClosed is what the dialer returns once the test that owned the link
// has ended.
var errLinkClosed = errors.New("ensemble: the proxy for this connection is closed")

// link is one client's path to the ensemble: a loopback TCP proxy with a
// listener per member, which go-zookeeper reaches through link.dial (so the
// client still names the member it talks to, and Conn.Server() reports the
// member's own address).
//
// While the link is open, dial first connects to the member itself — so a
// member that is down fails the dial, as it would without the proxy, and
// go-zookeeper moves on to the next member — and then to the proxy, which
// pairs the two connections and carries bytes both ways.
//
// Cut, the link closes the connections that were open, and then:
//
//   - refusing (Partition): every reconnection attempt is refused at once,
//     as when no server listens. go-zookeeper tries each member in turn,
//     then waits a second; requests made meanwhile fail with ErrNoServer.
//   - holding (Expire): reconnection attempts reach the proxy but are held,
//     their connect request unanswered, until the link is healed, when they
//     go through to the member. go-zookeeper emits a StateConnecting event
//     for each refused attempt (three a second against three members) and
//     drops events once its six-slot channel is full; a held attempt costs
//     one StateConnecting and one StateConnected however long the hold, so
//     the StateExpired that follows still finds room.
type link struct {
	timeout time.Duration // the session timeout the client asked for

	mu        sync.Mutex
	mode      linkMode
	healed    chan struct{} // closed when a cut link is healed
	closed    bool
	listeners map[string]net.Listener // member address → proxy listener
	conns     map[*proxied]struct{}
	// handoffs pass the member connection dial made to the proxy side that
	// accepts the client's connection, keyed by the client's local address.
	handoffs map[string]*handoff
	wg       sync.WaitGroup

	loseNext bool    // LoseNextReply: lose the reply to the next request
	traffic  Traffic // the zxids seen passing (tap.go)
}

// linkMode says what a link does with a client's traffic.
type linkMode int

const (
	linkOpen linkMode = iota
	linkRefusing
	linkHolding
)

// handoff carries a member connection (or nil, when dial made none because
// the link was holding) from dial to serve.
type handoff struct {
	ready    chan struct{}
	upstream net.Conn
}

// handoffWait bounds how long the proxy waits for dial to hand over the
// member connection of a client connection it accepted; dial does so right
// after its own connect returns.
const handoffWait = 5 * time.Second

// newLink starts a proxy listener on 127.0.0.1 for each member.
func newLink(members []string, timeout time.Duration) (*link, error) {
	l := &link{
		timeout:   timeout,
		healed:    make(chan struct{}),
		listeners: map[string]net.Listener{},
		conns:     map[*proxied]struct{}{},
		handoffs:  map[string]*handoff{},
	}
	for _, member := range members {
		key, err := addrKey(member)
		if err != nil {
			l.close()
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			l.close()
			return nil, err
		}
		l.listeners[key] = ln
		l.wg.Add(1)
		go l.accept(ln, member)
	}
	return l, nil
}

// addrKey normalizes host:port the way go-zookeeper hands it to its dialer
// (after resolving the host), so "[::1]:2181" and "[0:0::1]:2181" agree.
func addrKey(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, port), nil
}

// dial is the client's zk.Dialer.
func (l *link) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	key, err := addrKey(addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	ln, ok := l.listeners[key]
	closed, mode := l.closed, l.mode
	l.mu.Unlock()
	switch {
	case closed:
		return nil, errLinkClosed
	case !ok:
		return nil, fmt.Errorf("ensemble: %s is not a member this connection was opened with", addr)
	case mode == linkRefusing:
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%s: partitioned: %w", addr, syscall.ECONNREFUSED)}
	}
	var upstream net.Conn
	if mode == linkOpen {
		if upstream, err = net.DialTimeout(network, addr, timeout); err != nil {
			return nil, err
		}
	}
	client, err := net.DialTimeout(network, ln.Addr().String(), timeout)
	if err != nil {
		if upstream != nil {
			upstream.Close()
		}
		return nil, err
	}
	h := l.handoff(client.LocalAddr().String())
	h.upstream = upstream
	close(h.ready)
	return client, nil
}

// handoff returns the handoff for a client address, creating it for
// whichever of dial and serve gets there first.
func (l *link) handoff(clientAddr string) *handoff {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.handoffs[clientAddr]
	if !ok {
		h = &handoff{ready: make(chan struct{})}
		l.handoffs[clientAddr] = h
	}
	return h
}

func (l *link) accept(ln net.Listener, member string) {
	defer l.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p := &proxied{client: client, killed: make(chan struct{})}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			client.Close()
			return
		}
		l.conns[p] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(p, member)
	}
}

// serve carries one client connection: held while the link holds, then
// piped to the member in both directions until either side closes or the
// link is cut again.
func (l *link) serve(p *proxied, member string) {
	defer l.wg.Done()
	defer func() {
		p.kill()
		l.mu.Lock()
		delete(l.conns, p)
		l.mu.Unlock()
	}()

	// Take over the member connection dial made for this client, if any.
	key := p.client.RemoteAddr().String()
	h := l.handoff(key)
	select {
	case <-h.ready:
	case <-p.killed:
	case <-time.After(handoffWait):
	}
	l.mu.Lock()
	delete(l.handoffs, key)
	l.mu.Unlock()
	select {
	case <-h.ready:
		if h.upstream != nil && !p.attach(h.upstream) {
			return
		}
	default:
	}

	// Reading the client all along notices a client that gives up while
	// held, and keeps what it sent until there is a member to send it to.
	fromClient := make(chan []byte)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(fromClient)
		for {
			buf := make([]byte, 32<<10)
			n, err := p.client.Read(buf)
			if n > 0 {
				select {
				case fromClient <- buf[:n]:
				case <-p.killed:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var pending [][]byte
	for {
		l.mu.Lock()
		mode, healed, closed := l.mode, l.healed, l.closed
		p.held = mode == linkHolding
		killed := p.isKilled() // cut before this goroutine got going
		l.mu.Unlock()
		if closed || killed || mode == linkRefusing {
			return
		}
		if mode == linkOpen {
			break
		}
		// A member connection made before the cut belongs to the time
		// before it: drop it, and connect afresh when released.
		p.detach()
		select {
		case b, ok := <-fromClient:
			if !ok {
				return // the client gave up on this attempt
			}
			pending = append(pending, b)
		case <-healed:
		case <-p.killed:
			return
		}
	}

	upstream := p.upstreamConn()
	if upstream == nil {
		var err error
		if upstream, err = net.DialTimeout("tcp", member, upstreamDialWait); err != nil {
			return // the client sees the connection close, as if the member were down
		}
		if !p.attach(upstream) {
			return // cut (or closed) while dialing
		}
	}
	for _, b := range pending {
		if !l.toMember(p, upstream, b) {
			return
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer p.kill()
		buf := make([]byte, 32<<10)
		for {
			n, err := upstream.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				cut := p.down.scan(chunk, func(n int, head []byte) bool { return l.fromMember(p, n, head) })
				if cut >= 0 {
					chunk = chunk[:cut] // the lost reply and what follows it
				}
				if _, werr := p.client.Write(chunk); werr != nil || cut >= 0 {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case b, ok := <-fromClient:
			if !ok {
				return
			}
			if !l.toMember(p, upstream, b) {
				return
			}
		case <-p.killed:
			return
		}
	}
}

// toMember passes bytes the client sent on to the member, reading its
// frames on the way, and reports whether that worked.
func (l *link) toMember(p *proxied, upstream net.Conn, b []byte) bool {
	p.up.scan(b, func(n int, head []byte) bool {
		l.fromClient(p, n, head)
		return true
	})
	_, err := upstream.Write(b)
	return err == nil
}

// partition cuts the link in mode (linkRefusing or linkHolding): open
// connections are closed, and so are held ones when it now refuses.
func (l *link) partition(mode linkMode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == linkOpen {
		l.healed = make(chan struct{})
	}
	l.mode = mode
	for p := range l.conns {
		if !p.held || mode == linkRefusing {
			p.kill()
		}
	}
}

// heal lets held and new connections through to the members.
func (l *link) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode != linkOpen {
		l.mode = linkOpen
		close(l.healed)
	}
}

// isCut reports whether the link is partitioned.
func (l *link) isCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode != linkOpen
}

// close stops the proxy: listeners, connections and every goroutine.
func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.mode != linkOpen {
		l.mode = linkOpen
		close(l.healed)
	}
	for _, ln := range l.listeners {
		ln.Close()
	}
	for p := range l.conns {
		p.kill()
	}
	l.mu.Unlock()
	l.wg.Wait()
	// Member connections dial made for clients the proxy never served.
	l.mu.Lock()
	for key, h := range l.handoffs {
		select {
		case <-h.ready:
			if h.upstream != nil {
				h.upstream.Close()
			}
		default:
		}
		delete(l.handoffs, key)
	}
	l.mu.Unlock()
}

// proxied is one client connection through the proxy.
type proxied struct {
	client net.Conn
	held   bool // waiting for the link to heal; guarded by link.mu

	// doomed is the xid of the request whose reply LoseNextReply loses,
	// if dooming; guarded by link.mu.
	doomed  int32
	dooming bool
	// up and down follow the frames each way: up in serve's goroutine,
	// down in the one that reads the member.
	up, down frameScanner

	mu       sync.Mutex
	upstream net.Conn
	killed   chan struct{}
	dead     bool
}

// attach records the connection to the member, unless the proxied
// connection was killed meanwhile, in which case it closes upstream.
func (p *proxied) attach(upstream net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		upstream.Close()
		return false
	}
	p.upstream = upstream
	return true
}

// detach closes and forgets the member connection, if there is one.
func (p *proxied) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.upstream != nil {
		p.upstream.Close()
		p.upstream = nil
	}
}

func (p *proxied) upstreamConn() net.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

// isKilled reports whether kill has been called. Links kill connections
// while holding link.mu, so checking under link.mu orders the two.
func (p *proxied) isKilled() bool {
	select {
	case <-p.killed:
		return true
	default:
		return false
	}
}

// kill closes both sides; the member sees the client go away, the client
// sees the member go away.
func (p *proxied) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	p.dead = true
	close(p.killed)
	p.client.Close()
	if p.upstream != nil {
		p.upstream.Close()
	}
}
