package wire

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zksim/zksim/zkfake"
)

// A link is one client's network path to a Pipe: every connection the
// client dials goes over it, so that a fault on the link acts on whichever
// connection the client has, as a network would. Its connections are
// relayed through queues, one each way, as a TCP connection buffers what
// its peer has not read: a write never waits for the other side, and while
// the link is cut the bytes wait in the queues and flow again, in order,
// once it heals. A side that closes its end while the link is cut is seen
// to close by the other side only once the link heals, as a FIN caught in
// a partition is.
type link struct {
	mu     sync.Mutex
	cut    bool          // bytes wait in the queues; dials wait
	dead   bool          // the process crashed: dials are refused
	healed chan struct{} // closed and replaced at every Heal
	conns  []*relay
	// gate holds the client's requests at the server (WithGate);
	// arrivals numbers them as the server reads them (Request.Arrival).
	gate     Gate
	arrivals atomic.Int64
	// ordinal numbers the link among its Pipe's.
	ordinal int
	// next is the member the client's next new session starts on, if
	// nextSet (ReconnectTo).
	next    int
	nextSet bool
}

// takeNext returns the options for the link's next new session on the
// fake: the member ReconnectTo chose, once.
func (k *link) takeNext() []zkfake.ConnOption {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.nextSet {
		return nil
	}
	k.nextSet = false
	return []zkfake.ConnOption{zkfake.StartOn(k.next)}
}

func newLink() *link { return &link{healed: make(chan struct{})} }

// errRefused is a dial's failure once the link's process has crashed.
var errRefused = errors.New("wire: connection refused (the client's process crashed)")

// dial makes a new connection over the link to ln's server. A cut link
// makes the dial wait until it heals or timeout passes, as a SYN that gets
// no answer does; so does a connection the client gave up whose bytes are
// still on their way (see the loop). Redials are staggered by the
// client's host provider (pipeHost).
func (k *link) dial(ln *pipeListener, timeout time.Duration, wrap func(net.Conn) *linkEnd) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	k.mu.Lock()
	for {
		if k.dead {
			k.mu.Unlock()
			return nil, errRefused
		}
		if k.cut {
			healed := k.healed
			k.mu.Unlock()
			if err := dialWait(healed, deadline); err != nil {
				return nil, err
			}
			k.mu.Lock()
			continue
		}
		// What the client sent on a connection it has given up on still
		// reaches the server, and was sent before this dial: it arrives
		// first, and the server has seen that connection close before
		// the new one comes, as on a network whose path keeps its order.
		// (Otherwise the old connection's requests and the new one's
		// handshake would reach the server in the scheduler's order.)
		var abandoned *relay
		for _, r := range k.conns {
			if r.clientClosed() {
				abandoned = r
				break
			}
		}
		if abandoned == nil {
			break
		}
		k.mu.Unlock()
		if err := dialWait(abandoned.done, deadline); err != nil {
			return nil, err
		}
		k.mu.Lock()
	}
	if ln.isWedged() {
		k.mu.Unlock()
		<-ln.done
		return nil, net.ErrClosed
	}
	client, clientRelay := net.Pipe()
	serverRelay, server := net.Pipe()
	r := &relay{k: k, ends: [2]net.Conn{clientRelay, serverRelay}, done: make(chan struct{})}
	for i := range r.dirs {
		r.dirs[i] = &direction{signal: make(chan struct{}, 1)}
	}
	k.conns = append(k.conns, r)
	k.mu.Unlock()
	r.end = wrap(server)
	select {
	case ln.conns <- r.end:
	case <-ln.wedged:
		<-ln.done
		client.Close()
		r.close()
		return nil, net.ErrClosed
	case <-ln.done:
		client.Close()
		r.close()
		return nil, net.ErrClosed
	}
	r.start()
	return &pipeClient{Conn: client}, nil
}

// dialWait waits for ready, or fails as a dial that timed out at
// deadline.
func dialWait(ready <-chan struct{}, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-t.C:
		return &net.OpError{Op: "dial", Net: "pipe", Err: os.ErrDeadlineExceeded}
	}
}

// setCut cuts the link or heals it.
func (k *link) setCut(cut bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cut == cut {
		return
	}
	k.cut = cut
	if !cut {
		close(k.healed)
		k.healed = make(chan struct{})
	}
	for _, r := range k.conns {
		r.wake()
	}
}

// kill closes every connection of the link at once, both ends, and
// refuses its dials from now on (crash), or not (drop).
func (k *link) kill(forever bool) {
	k.mu.Lock()
	conns := k.conns
	k.conns = nil
	if forever {
		k.dead = true
		close(k.healed)
		k.healed = make(chan struct{})
	}
	k.mu.Unlock()
	for _, r := range conns {
		r.close()
	}
}

// forget drops r from the link's connections once it has closed.
func (k *link) forget(r *relay) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, c := range k.conns {
		if c == r {
			k.conns = append(k.conns[:i], k.conns[i+1:]...)
			return
		}
	}
}

// isCut reports whether bytes wait.
func (k *link) isCut() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cut
}

// relay carries one connection's bytes between its two pipes: ends[0]
// faces the client, ends[1] the server.
type relay struct {
	k    *link
	ends [2]net.Conn
	dirs [2]*direction // dirs[0] carries the client's bytes to the server
	end  *linkEnd      // the server's end
	left atomic.Int32  // the ways not yet done
	// open counts the sides that have not closed their end. Once neither
	// has, nothing waiting in the queues can be delivered: the relay
	// closes, cut or not.
	open atomic.Int32
	done chan struct{}
	once sync.Once
}

// direction is one way of a relay: what one side wrote and the other has
// not yet been given.
type direction struct {
	mu     sync.Mutex
	queue  []byte
	eof    bool // the writer closed its end after queue
	signal chan struct{}
}

func (r *relay) start() {
	r.left.Store(2)
	r.open.Store(2)
	go r.read(r.ends[0], r.dirs[0])
	go r.read(r.ends[1], r.dirs[1])
	go r.write(r.ends[1], r.dirs[0])
	go r.write(r.ends[0], r.dirs[1])
}

// clientClosed reports whether the client has closed its end of r.
func (r *relay) clientClosed() bool {
	d := r.dirs[0]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.eof
}

// read takes in all one side writes, at once.
func (r *relay) read(from net.Conn, d *direction) {
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		d.mu.Lock()
		d.queue = append(d.queue, buf[:n]...)
		d.eof = err != nil
		d.mu.Unlock()
		d.poke()
		if err != nil {
			if r.open.Add(-1) == 0 {
				r.close()
			}
			return
		}
	}
}

// write gives the other side what waits, whenever the link is not cut,
// and closes it after the writer's close, as a FIN follows the data sent
// before it. A side that has gone takes nothing more, but what the other
// side sent before it went still reaches it: each way ends on its own,
// and the relay closes once both have (or once both sides have closed
// their ends, when nobody is left to deliver to; see read).
func (r *relay) write(to net.Conn, d *direction) {
	defer r.finish()
	for {
		select {
		case <-d.signal:
		case <-r.done:
			return
		}
		if r.k.isCut() {
			continue
		}
		d.mu.Lock()
		q, eof := d.queue, d.eof
		d.queue = nil
		d.mu.Unlock()
		if len(q) > 0 {
			if _, err := to.Write(q); err != nil {
				return
			}
		}
		if eof {
			to.Close()
			return
		}
	}
}

// finish counts one way of the relay done; the second closes it.
func (r *relay) finish() {
	if r.left.Add(-1) == 0 {
		r.close()
	}
}

func (d *direction) poke() {
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

// wake has both writers look at the link again (it healed).
func (r *relay) wake() {
	for _, d := range r.dirs {
		d.poke()
	}
}

// close closes both ends: each side reads EOF. The server's side of the
// connection is closed at once, not when its reader gets to the EOF, so
// that once a crash has returned no request of the crashed client's still
// waiting at the server can be applied.
func (r *relay) close() {
	r.once.Do(func() {
		// Forgotten before done closes: a dial that waits for done then
		// finds the link without it.
		r.k.forget(r)
		close(r.done)
		for _, e := range r.ends {
			e.Close()
		}
		if r.end != nil {
			r.end.closeServer()
		}
	})
}
