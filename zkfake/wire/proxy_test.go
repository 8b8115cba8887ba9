package wire_test

import (
	"net"
	"sync"
	"testing"
)

// partitionProxy relays one client's TCP connections to the listener and,
// while partitioned, holds everything in both directions — bytes, new
// connections, closes — as a network partition does, releasing it on heal.
type partitionProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	healed chan struct{} // closed while traffic flows
	closed chan struct{}
	conns  []net.Conn
}

func newPartitionProxy(t testing.TB, target string) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, target: target, healed: make(chan struct{}), closed: make(chan struct{})}
	close(p.healed)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *partitionProxy) addr() string { return p.ln.Addr().String() }

func (p *partitionProxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default:
	}
}

func (p *partitionProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
}

// gate waits while the proxy is partitioned; false once it is closed.
func (p *partitionProxy) gate() bool {
	p.mu.Lock()
	healed := p.healed
	p.mu.Unlock()
	select {
	case <-healed:
		return true
	case <-p.closed:
		return false
	}
}

func (p *partitionProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return
	default:
	}
	close(p.closed)
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *partitionProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		c.Close()
		return false
	default:
		p.conns = append(p.conns, c)
		return true
	}
}

func (p *partitionProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		go func() {
			if !p.gate() {
				return
			}
			server, err := net.Dial("tcp", p.target)
			if err != nil || !p.track(server) {
				client.Close()
				return
			}
			go p.pipe(server, client)
			go p.pipe(client, server)
		}()
	}
}

// pipe copies src to dst, holding each chunk, and the close that ends the
// stream, while partitioned.
func (p *partitionProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if !p.gate() {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}
