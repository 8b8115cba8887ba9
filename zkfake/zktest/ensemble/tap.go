package ensemble

import (
	"encoding/binary"
	"testing"

	"github.com/zksim/zksim/zkfake/zktest"
)

// The proxy reads the frames it carries — ZooKeeper's client protocol is
// length-prefixed frames both ways — far enough to see the zxids the
// client learns and sends, and to lose one chosen reply.

// Traffic is what the proxy has seen of a client's exchanges with the
// ensemble: the zxids go-zookeeper learned from replies and the ones it
// sent when it connected.
type Traffic struct {
	// ConnectZxids holds the LastZxidSeen of each connect request the
	// client sent, one per connection, in order: the zxid a member compares
	// with its own before it takes the client.
	ConnectZxids []int64
	// ReplyZxid is the zxid in the header of the last reply passed to the
	// client that go-zookeeper takes its last-seen zxid from: a reply to a
	// request (xid 0 or more) with a zxid above 0. Pings, watch events and
	// the replies to setWatches and auth teach it nothing.
	ReplyZxid int64
	// LostZxid is the zxid in the header of the reply LoseNextReply
	// dropped, 0 before that: the member's last zxid once it had applied
	// the request.
	LostZxid int64
}

// LoseNextReply loses the reply to conn's next request: the request goes
// through and the member applies it, but when its reply arrives the proxy
// closes the client's connection instead of passing it on (what the member
// sent before it, watch events among them, is passed on). The call fails
// with zk.ErrConnectionClosed and go-zookeeper reconnects with its session.
func (e *Env) LoseNextReply(conn zktest.Conn) error {
	l, err := e.linkOf(conn)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseNext = true
	return nil
}

// Traffic returns what the proxy has seen of conn's exchanges so far.
func (e *Env) Traffic(t testing.TB, conn zktest.Conn) Traffic {
	t.Helper()
	l, err := e.linkOf(conn)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tr := l.traffic
	tr.ConnectZxids = append([]int64(nil), tr.ConnectZxids...)
	return tr
}

// fromClient reads a frame the client sent. Called by the goroutine that
// passes the client's bytes on, before the frame reaches the member.
func (l *link) fromClient(p *proxied, n int, head []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n == 0 {
		// The connect request: protocol version, then LastZxidSeen.
		if len(head) >= 12 {
			l.traffic.ConnectZxids = append(l.traffic.ConnectZxids, int64(binary.BigEndian.Uint64(head[4:12])))
		}
		return
	}
	if len(head) >= 4 && l.loseNext {
		if xid := int32(binary.BigEndian.Uint32(head)); xid >= 0 {
			l.loseNext = false
			p.doomed, p.dooming = xid, true
		}
	}
}

// fromMember reads a frame the member sent and reports whether to pass it
// on; false means it is the reply to lose. Called by the goroutine that
// passes the member's bytes on.
func (l *link) fromMember(p *proxied, n int, head []byte) bool {
	if n == 0 || len(head) < 12 {
		return true // the connect response
	}
	xid := int32(binary.BigEndian.Uint32(head))
	zxid := int64(binary.BigEndian.Uint64(head[4:12]))
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.dooming && xid == p.doomed {
		l.traffic.LostZxid = zxid
		return false
	}
	if xid >= 0 && zxid > 0 {
		l.traffic.ReplyZxid = zxid
	}
	return true
}

// headLen is how much of each frame's body the scanner hands on: a reply
// header (xid, zxid, error code) or the start of a connect request.
const headLen = 16

// frameScanner follows one direction of a connection frame by frame as
// its bytes pass, in chunks cut anywhere.
type frameScanner struct {
	pre   []byte // the current frame's length prefix and head, as far as read
	skip  int    // bytes of the current frame's body still to pass after its head
	count int    // frames handed on so far
}

// header returns the size of the frame s.pre begins, once its 4-byte
// length prefix is in, and how many of its bytes scan keeps: the prefix and
// the head of the body (4 until the prefix is in).
func (s *frameScanner) header() (size, need int) {
	if len(s.pre) < 4 {
		return 0, 4
	}
	size = max(int(int32(binary.BigEndian.Uint32(s.pre))), 0)
	return size, 4 + min(size, headLen)
}

// scan passes p through s and calls f with each frame's number (from 0)
// and head (its first headLen body bytes, fewer if the frame is shorter).
// If f returns false, scan stops and returns where that frame began in p
// (0 if it began in an earlier chunk); otherwise it returns -1.
func (s *frameScanner) scan(p []byte, f func(n int, head []byte) bool) int {
	start := 0
	for i := 0; i < len(p); {
		if s.skip > 0 {
			k := min(s.skip, len(p)-i)
			i += k
			s.skip -= k
			continue
		}
		if len(s.pre) == 0 {
			start = i
		}
		size, need := s.header()
		k := min(need-len(s.pre), len(p)-i)
		s.pre = append(s.pre, p[i:i+k]...)
		i += k
		if len(s.pre) == 4 {
			size, need = s.header()
		}
		if len(s.pre) < need {
			continue
		}
		head := s.pre[4:]
		s.skip = size - len(head)
		n := s.count
		s.count++
		ok := f(n, head)
		s.pre = s.pre[:0]
		if !ok {
			return start
		}
	}
	return -1
}
