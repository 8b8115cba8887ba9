package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// RawDialer is implemented by environments whose server a scenario can
// reach with a connection of its own, to speak ZooKeeper's client protocol
// itself: the operations ZooKeeper 3.8 has and go-zookeeper v1.0.4 cannot
// send (addWatch, removeWatches, checkWatches, multiRead, getEphemerals,
// getAllChildrenNumber, whoAmI, create2) are checked that way. Scenarios
// that need it skip on an Env without it.
type RawDialer interface {
	// DialRaw opens a new connection, on which nothing has been sent yet,
	// to the server the Env's sessions use (on an ensemble, the home
	// member, so that a raw session sees what the Env's other sessions
	// wrote).
	DialRaw() (net.Conn, error)
}

// rawWait bounds every wait for a reply or a notification that must come.
const rawWait = 10 * time.Second

// rawSession is one session spoken by hand, request by request: a test
// client of the protocol, not a library. It fails its test on anything the
// protocol does not allow (a reply out of turn, a broken frame). Replies
// come in the order of the requests; the notifications that arrive before
// a reply are kept, in order, for nextEvent.
type rawSession struct {
	t        testing.TB
	dialer   RawDialer
	nc       net.Conn
	id       int64
	passwd   []byte
	timeout  time.Duration // negotiated
	xid      int32
	lastZxid int64
	events   []zk.Event
	lastSent time.Time
}

// rawConnect opens a raw session with the requested timeout, or skips the
// test if env cannot be dialled. The session is closed when the test ends.
func rawConnect(t testing.TB, env Env, timeout time.Duration) *rawSession {
	t.Helper()
	d, ok := env.(RawDialer)
	if !ok {
		t.Skip("the target cannot be reached with the raw protocol (no zktest.RawDialer)")
	}
	s := &rawSession{t: t, dialer: d, passwd: make([]byte, 16)}
	s.dial(timeout)
	t.Cleanup(s.close)
	return s
}

// dial connects, resuming the session if it has one.
func (s *rawSession) dial(timeout time.Duration) {
	s.t.Helper()
	nc, err := s.dialer.DialRaw()
	if err != nil {
		s.t.Fatalf("raw dial: %v", err)
	}
	s.nc = nc
	w := &jute.Writer{}
	w.Int32(0) // protocol version
	w.Int64(s.lastZxid)
	w.Int32(int32(timeout / time.Millisecond))
	w.Int64(s.id)
	w.Buffer(s.passwd)
	s.send(w.Bytes())
	r := jute.NewReader(s.readFrame())
	r.Int32() // protocol version
	negotiated, id, passwd := r.Int32(), r.Int64(), r.Buffer()
	if r.Err() != nil || id == 0 {
		s.t.Fatalf("raw connect: session %#x, err %v", id, r.Err())
	}
	s.id, s.passwd, s.timeout = id, passwd, time.Duration(negotiated)*time.Millisecond
}

func (s *rawSession) send(body []byte) {
	s.t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	s.nc.SetWriteDeadline(time.Now().Add(rawWait))
	if _, err := s.nc.Write(append(frame, body...)); err != nil {
		s.t.Fatalf("raw write: %v", err)
	}
	s.lastSent = time.Now()
}

// readFrame reads one frame, failing the test if none comes in rawWait.
func (s *rawSession) readFrame() []byte {
	s.t.Helper()
	frame, err := s.tryRead(time.Now().Add(rawWait))
	if err != nil {
		s.t.Fatalf("raw read: %v", err)
	}
	return frame
}

// tryRead reads one frame by deadline.
func (s *rawSession) tryRead(deadline time.Time) ([]byte, error) {
	s.nc.SetReadDeadline(deadline)
	var n [4]byte
	if _, err := io.ReadFull(s.nc, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(s.nc, body); err != nil {
		return nil, err
	}
	return body, nil
}

// reply is a decoded reply header with its body left to read.
type reply struct {
	zxid int64
	code int32
	body *jute.Reader
}

// call sends a request of op with the body req writes and returns the
// reply. Notifications read meanwhile are kept for nextEvent.
func (s *rawSession) call(op int32, req func(w *jute.Writer)) reply {
	s.t.Helper()
	s.xid++
	xid := s.xid
	w := &jute.Writer{}
	w.Int32(xid)
	w.Int32(op)
	if req != nil {
		req(w)
	}
	s.send(w.Bytes())
	for {
		r := jute.NewReader(s.readFrame())
		gotXid, zxid, code := r.Int32(), r.Int64(), r.Int32()
		switch {
		case r.Err() != nil:
			s.t.Fatalf("raw reply to op %d: %v", op, r.Err())
		case gotXid == jute.XidNotification:
			s.notification(r)
		case gotXid == jute.XidPing:
		case gotXid != xid:
			s.t.Fatalf("raw reply with xid %d to request %d (op %d)", gotXid, xid, op)
		default:
			if zxid > s.lastZxid {
				s.lastZxid = zxid
			}
			return reply{zxid: zxid, code: code, body: r}
		}
	}
}

func (s *rawSession) notification(r *jute.Reader) {
	s.t.Helper()
	typ, state, path := r.Int32(), r.Int32(), r.String()
	if r.Err() != nil {
		s.t.Fatalf("raw notification: %v", r.Err())
	}
	s.events = append(s.events, zk.Event{Type: zk.EventType(typ), State: zk.State(state), Path: path})
}

// nextEvent returns the next notification, waiting up to wait for one; ok
// is false if none came. It pings while it waits, so that the session
// lives however long the wait.
func (s *rawSession) nextEvent(wait time.Duration) (ev zk.Event, ok bool) {
	s.t.Helper()
	deadline := time.Now().Add(wait)
	for len(s.events) == 0 {
		now := time.Now()
		if !now.Before(deadline) {
			return zk.Event{}, false
		}
		if now.Sub(s.lastSent) >= s.timeout/3 {
			w := &jute.Writer{}
			w.Int32(jute.XidPing)
			w.Int32(jute.OpPing)
			s.send(w.Bytes())
		}
		until := s.lastSent.Add(s.timeout / 3)
		if deadline.Before(until) {
			until = deadline
		}
		frame, err := s.tryRead(until)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		if err != nil {
			s.t.Fatalf("raw read while waiting for an event: %v", err)
		}
		r := jute.NewReader(frame)
		xid := r.Int32()
		r.Int64()
		r.Int32()
		switch xid {
		case jute.XidNotification:
			s.notification(r)
		case jute.XidPing:
		default:
			s.t.Fatalf("raw reply with xid %d while no request was out", xid)
		}
	}
	ev = s.events[0]
	s.events = s.events[1:]
	return ev, true
}

// drop closes the connection without ending the session, as a client
// whose network fails; reconnect resumes it.
func (s *rawSession) drop() {
	s.nc.Close()
}

// reconnect resumes the session on a new connection, with the client's
// last-seen zxid, and re-arms watches as ZooKeeper 3.8's client does after
// a reconnect: one setWatches2 request with the watches it still holds.
func (s *rawSession) reconnect(w rawWatches) {
	s.t.Helper()
	s.dial(s.timeout)
	rel := s.lastZxid
	rep := s.call(jute.OpSetWatches2, func(req *jute.Writer) {
		req.Int64(rel)
		req.Strings(w.data)
		req.Strings(w.exist)
		req.Strings(w.child)
		req.Strings(w.persistent)
		req.Strings(w.recursive)
	})
	if rep.code != jute.CodeOK {
		s.t.Fatalf("setWatches2: code %d", rep.code)
	}
}

// rawWatches are the lists of a setWatches2 request.
type rawWatches struct {
	data, exist, child, persistent, recursive []string
}

// close ends the session with closeSession, once.
func (s *rawSession) close() {
	if s.nc == nil {
		return
	}
	defer func() {
		s.nc.Close()
		s.nc = nil
	}()
	s.xid++
	w := &jute.Writer{}
	w.Int32(s.xid)
	w.Int32(jute.OpClose)
	// A connection the test has dropped or the server has closed ends
	// here: the session then expires on its own.
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(w.Bytes())))
	s.nc.SetWriteDeadline(time.Now().Add(rawWait))
	if _, err := s.nc.Write(append(frame, w.Bytes()...)); err != nil {
		return
	}
	deadline := time.Now().Add(rawWait)
	for {
		frame, err := s.tryRead(deadline)
		if err != nil || int32(binary.BigEndian.Uint32(frame)) == s.xid {
			return
		}
	}
}

// The requests the scenarios send, each returning the reply's code and
// what its body holds when the code is OK.

func (s *rawSession) create(path string, data []byte, flags int32) (string, int32) {
	s.t.Helper()
	rep := s.call(jute.OpCreate, func(w *jute.Writer) {
		w.String(path)
		w.Buffer(data)
		w.ACLs(OpenACL)
		w.Int32(flags)
	})
	return rep.body.String(), rep.code
}

// create2 sends a create2 request (or, with op, createContainer or
// createTTL, which ttl is for) and reads the Create2Response: the path and
// the new node's stat.
func (s *rawSession) create2(op int32, path string, data []byte, flags int32, ttl int64) (string, zk.Stat, int32) {
	s.t.Helper()
	rep := s.call(op, func(w *jute.Writer) {
		w.String(path)
		w.Buffer(data)
		w.ACLs(OpenACL)
		w.Int32(flags)
		if op == jute.OpCreateTTL {
			w.Int64(ttl)
		}
	})
	if rep.code != jute.CodeOK {
		return "", zk.Stat{}, rep.code
	}
	return rep.body.String(), rep.body.Stat(), rep.code
}

func (s *rawSession) setData(path string, data []byte) (zk.Stat, int32) {
	s.t.Helper()
	rep := s.call(jute.OpSetData, func(w *jute.Writer) {
		w.String(path)
		w.Buffer(data)
		w.Int32(-1)
	})
	return rep.body.Stat(), rep.code
}

func (s *rawSession) delete(path string) int32 {
	s.t.Helper()
	return s.call(jute.OpDelete, func(w *jute.Writer) {
		w.String(path)
		w.Int32(-1)
	}).code
}

// read sends a getData, exists or getChildren request, setting a watch if
// asked, and returns the reply.
func (s *rawSession) read(op int32, path string, watch bool) reply {
	s.t.Helper()
	return s.call(op, func(w *jute.Writer) {
		w.String(path)
		w.Bool(watch)
	})
}

// watchCall sends addWatch (arg the mode), checkWatches or removeWatches
// (arg the watcher type).
func (s *rawSession) watchCall(op int32, path string, arg int32) int32 {
	s.t.Helper()
	return s.call(op, func(w *jute.Writer) {
		w.String(path)
		w.Int32(arg)
	}).code
}

func (s *rawSession) getEphemerals(prefix string) ([]string, int32) {
	s.t.Helper()
	rep := s.call(jute.OpGetEphemerals, func(w *jute.Writer) { w.String(prefix) })
	if rep.code != jute.CodeOK {
		return nil, rep.code
	}
	return rep.body.Strings(), rep.code
}

func (s *rawSession) getAllChildrenNumber(path string) (int32, int32) {
	s.t.Helper()
	rep := s.call(jute.OpGetAllChildrenNumber, func(w *jute.Writer) { w.String(path) })
	if rep.code != jute.CodeOK {
		return 0, rep.code
	}
	return rep.body.Int32(), rep.code
}

// clientInfo is one identity whoAmI reports: a scheme and, for digest, the
// user name, for ip the address.
type clientInfo struct{ scheme, user string }

func (s *rawSession) whoAmI() ([]clientInfo, int32) {
	s.t.Helper()
	rep := s.call(jute.OpWhoAmI, nil)
	if rep.code != jute.CodeOK {
		return nil, rep.code
	}
	n := rep.body.Int32()
	var out []clientInfo
	for range n {
		out = append(out, clientInfo{rep.body.String(), rep.body.String()})
	}
	return out, rep.code
}

func (s *rawSession) addAuth(scheme, auth string) int32 {
	s.t.Helper()
	return s.call(jute.OpSetAuth, func(w *jute.Writer) {
		w.Int32(0)
		w.String(scheme)
		w.Buffer([]byte(auth))
	}).code
}

// readOp is one op of a multiRead: getData or getChildren of a path, with
// the watch flag a read carries (or, to see the server refuse it, another
// op code, written as a create with flags 0 or as a path and an int).
type readOp struct {
	op    int32
	path  string
	watch bool
}

// readResult is one result of a multiRead, as the MultiResponse carries
// it: the op code of the result (getData, getChildren or error), its code,
// and its fields.
type readResult struct {
	op       int32
	code     int32
	data     []byte
	stat     zk.Stat
	children []string
}

// sendMultiRead sends ops as a multiRead and returns the reply undecoded.
func (s *rawSession) sendMultiRead(ops []readOp) reply {
	s.t.Helper()
	return s.call(jute.OpMultiRead, func(w *jute.Writer) {
		for _, op := range ops {
			w.Int32(op.op)
			w.Bool(false)
			w.Int32(-1)
			w.String(op.path)
			switch op.op {
			case jute.OpGetData, jute.OpGetChildren, jute.OpExists:
				w.Bool(op.watch)
			case jute.OpCreate:
				w.Buffer(nil)
				w.ACLs(OpenACL)
				w.Int32(0)
			default:
				w.Int32(-1)
			}
		}
		w.Int32(-1)
		w.Bool(true)
		w.Int32(-1)
	})
}

// multiRead sends ops as a multiRead and decodes the MultiResponse.
func (s *rawSession) multiRead(ops []readOp) ([]readResult, int32) {
	s.t.Helper()
	rep := s.sendMultiRead(ops)
	if rep.code != jute.CodeOK {
		return nil, rep.code
	}
	var out []readResult
	r := rep.body
	for {
		typ, done, code := r.Int32(), r.Bool(), r.Int32()
		if r.Err() != nil {
			s.t.Fatalf("multiRead response: %v", r.Err())
		}
		if done {
			return out, rep.code
		}
		res := readResult{op: typ, code: code}
		switch typ {
		case jute.OpGetData:
			res.data, res.stat = r.Buffer(), r.Stat()
		case jute.OpGetChildren:
			res.children = r.Strings()
		case jute.OpError:
			res.code = r.Int32()
		default:
			s.t.Fatalf("multiRead response with a result of type %d", typ)
		}
		out = append(out, res)
	}
}
