package wire

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/jute"
)

// watchKind is the kind of watch a client can hold on a path.
type watchKind uint8

const (
	watchData watchKind = iota + 1
	watchExist
	watchChild
	watchPersistent
	watchPersistentRecursive
)

type watchKey struct {
	path string
	kind watchKind
}

// session is one client session: a *zkfake.Conn, and the TCP connection its
// client is attached through, if any. A connection that drops leaves the
// session alive; it expires when no frame has come for its timeout.
type session struct {
	l       *Listener
	passwd  []byte
	timeout time.Duration

	mu         sync.Mutex
	id         int64
	conn       *zkfake.Conn
	cc         *clientConn
	timer      *time.Timer
	dead       bool
	down       bool              // the fake has the session's connection down (no quorum, its member stopped)
	deadline   time.Time         // when it expires unless its client is heard from
	pending    [][]byte          // notifications raised while detached
	registered map[watchKey]bool // watches the fake holds for this session

	// The real server sends a session's reply ahead of the events of the
	// changes made after its request: a client that set a watch hears of
	// it before its event. So the events raised once the fake has
	// answered a request in hand (answered), until the session has no
	// request in hand, wait in afterReply (see replied). A gated Client's
	// requests are handled in goroutines of their own, so several may be
	// in hand; the events then wait for them all, and a reply the fake
	// gave after such an event may reach the client ahead of it.
	inHand     int        // requests handle has in hand
	holding    bool       // the fake has answered one of them: events wait
	afterReply []zk.Event // watch events raised since, in order
}

// onEvent receives the fake session's events while the fake server holds
// its lock: it must not call the fake.
func (s *session) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.holding {
			s.afterReply = append(s.afterReply, ev)
			return
		}
		s.relay(ev)
	case zk.EventSession:
		switch ev.State {
		case zk.StateExpired:
			// Expired on the fake server itself (zkfake.Server.Expire):
			// end it here too.
			go s.end(false)
		case zk.StateDisconnected:
			// The fake took the session's connection down: its member
			// stopped, or the ensemble lost its quorum. A real member
			// stops serving its clients then, and takes none until it
			// serves again: the client's next ping or request finds its
			// connection closed (see handle), and its reconnects are
			// refused (see attach) until the fake has the session back.
			s.mu.Lock()
			s.down = true
			s.mu.Unlock()
		case zk.StateHasSession:
			s.mu.Lock()
			s.down = false
			s.mu.Unlock()
		}
	}
}

// relay sends a watch event to the session's client, or keeps it for the
// client's return. Called with s.mu held.
func (s *session) relay(ev zk.Event) {
	oneShot := false
	for _, k := range firedKinds(ev.Type) {
		key := watchKey{ev.Path, k}
		oneShot = oneShot || s.registered[key]
		delete(s.registered, key)
	}
	body := notification(ev.Type, ev.Path)
	switch {
	case s.cc != nil:
		s.cc.send(body)
	case oneShot || !s.persistentCovers(ev.Path):
		s.pending = append(s.pending, body)
	default:
		// Only a persistent watch asked for it, and the client is
		// away: the real server, which dropped the watch with the
		// connection and has it back from setWatches2, tells the
		// client nothing of what changed meanwhile.
	}
}

// take marks the start of handling a request: from the fake's answer on
// (answered), the session's watch events wait for the replies of the
// requests in hand.
func (s *session) take() {
	s.mu.Lock()
	s.inHand++
	s.mu.Unlock()
}

// answered is the fake's WithAnswerCallback: it has answered a request
// in hand (all the wire's calls to the fake are made for one). It runs
// while the fake server is locked.
func (s *session) answered() {
	s.mu.Lock()
	s.holding = s.inHand > 0
	s.mu.Unlock()
}

// replied ends a request in hand, its reply queued (or the connection
// failed). Once none is left, the events raised since the fake answered
// them follow the replies. Their watches are forgotten only now, so that
// a watch a request set, which handle registers after the fake's answer,
// is not left registered when its event came first.
func (s *session) replied() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inHand--; s.inHand > 0 {
		return
	}
	for _, ev := range s.afterReply {
		s.relay(ev)
	}
	s.afterReply, s.holding = s.afterReply[:0], false
}

// firedKinds lists the watches an event consumes.
func firedKinds(t zk.EventType) []watchKind {
	switch t {
	case zk.EventNodeCreated:
		return []watchKind{watchExist}
	case zk.EventNodeDataChanged:
		return []watchKind{watchExist, watchData}
	case zk.EventNodeChildrenChanged:
		return []watchKind{watchChild}
	case zk.EventNodeDeleted:
		return []watchKind{watchExist, watchData, watchChild}
	}
	return nil
}

// notification encodes a watch event as the server sends it: xid -1 and a
// WatcherEvent {type, state SyncConnected, path}.
func notification(t zk.EventType, path string) []byte {
	w := replyHeader(jute.XidNotification, -1, jute.CodeOK)
	w.Int32(int32(t))
	w.Int32(int32(zk.StateSyncConnected))
	w.String(path)
	return w.Bytes()
}

// errPartitioned is attach's refusal of a client cut off by Partition.
var errPartitioned = errors.New("wire: the session is partitioned")

// errEnded is attach's answer for a session that has ended.
var errEnded = errors.New("wire: the session has ended")

// attach makes cc the session's connection, dropping the one it had, answers
// the connect request and sends the notifications raised meanwhile. It
// fails with errEnded if the session has ended, and with errPartitioned,
// answering nothing, while Partition cuts the session off: the check is
// made under the session's lock, which Partition takes to drop the
// session's connection, so a partition cannot miss a client reconnecting.
func (s *session) attach(cc *clientConn, withReadOnly bool) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errEnded
	}
	if s.l.isPartitioned(s.id) || s.down {
		s.mu.Unlock()
		return errPartitioned
	}
	old := s.cc
	s.cc = cc
	if s.timer == nil {
		s.timer = time.AfterFunc(s.timeout, s.timedOut)
	} else {
		s.timer.Reset(s.timeout)
	}
	s.deadline = time.Now().Add(s.timeout)
	cc.send(encodeConnectResponse(int32(s.timeout/time.Millisecond), s.id, s.passwd, withReadOnly))
	for _, body := range s.pending {
		cc.send(body)
	}
	s.pending = nil
	s.mu.Unlock()
	if old != nil && old != cc {
		old.close()
	}
	return nil
}

// timedOut ends the session, its client unheard from for its timeout,
// unless the fake has its connection down: the fake expires it then, by
// its own rules (an ensemble without a quorum expires no session), and
// the wire waits another timeout.
func (s *session) timedOut() {
	s.mu.Lock()
	down := s.down && !s.dead
	if down {
		s.timer.Reset(s.timeout)
		s.deadline = time.Now().Add(s.timeout)
	}
	s.mu.Unlock()
	if !down {
		s.end(true)
	}
}

// detach forgets cc if it is still the session's connection.
func (s *session) detach(cc *clientConn) {
	s.mu.Lock()
	if s.cc == cc {
		s.cc = nil
	}
	s.mu.Unlock()
}

// touch records that the client was heard from: the session lives for
// another timeout.
func (s *session) touch() {
	s.mu.Lock()
	if !s.dead && s.timer != nil {
		s.timer.Reset(s.timeout)
		s.deadline = time.Now().Add(s.timeout)
	}
	s.mu.Unlock()
}

// end ends the session once: expired on the fake server if expire is set
// (its timeout passed), and in any case closed there and dropped from the
// listener, with its connection closed, as the real server closes the
// connection of a session it expires.
func (s *session) end(expire bool) {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return
	}
	s.dead = true
	if s.timer != nil {
		s.timer.Stop()
	}
	cc, id, conn := s.cc, s.id, s.conn
	s.cc = nil
	s.mu.Unlock()
	if expire && conn != nil {
		s.l.srv.Expire(id)
	}
	if conn != nil {
		conn.Close()
	}
	s.l.mu.Lock()
	delete(s.l.sessions, id)
	s.l.mu.Unlock()
	if cc != nil {
		cc.close()
	}
}

// isDown reports whether the fake has the session's connection down.
func (s *session) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// alive reports whether the session still runs on the fake as the same
// session (the fake's SessionID changes when it has been expired there).
func (s *session) alive() bool {
	s.mu.Lock()
	dead, conn, id := s.dead, s.conn, s.id
	s.mu.Unlock()
	// SessionID is not called under s.mu: onEvent takes s.mu while the
	// fake holds its own lock.
	return !dead && conn.SessionID() == id
}

func (s *session) register(path string, kind watchKind) {
	s.mu.Lock()
	s.registered[watchKey{path, kind}] = true
	s.mu.Unlock()
}

// unregister forgets the watches a removeWatches of the watcher type took
// from the fake. Removing one table's watches takes half of a persistent
// watch; the client still holds the whole, so the wire no longer counts it
// as held and sets it again, whole, if the client re-arms it.
func (s *session) unregister(path string, typ int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := []watchKind{watchPersistent, watchPersistentRecursive}
	if typ == jute.WatcherData || typ == jute.WatcherAny {
		kinds = append(kinds, watchData, watchExist)
	}
	if typ == jute.WatcherChildren || typ == jute.WatcherAny {
		kinds = append(kinds, watchChild)
	}
	for _, k := range kinds {
		delete(s.registered, watchKey{path, k})
	}
}

// persistentCovers reports whether one of the session's persistent watches
// may have fired for a change at path: a persistent watch on it or a
// recursive one on it or an ancestor. Called with s.mu held.
func (s *session) persistentCovers(path string) bool {
	if s.registered[watchKey{path, watchPersistent}] {
		return true
	}
	for p := path; ; p = parentOf(p) {
		if s.registered[watchKey{p, watchPersistentRecursive}] {
			return true
		}
		if p == "/" || !strings.HasPrefix(p, "/") {
			return false
		}
	}
}

// parentOf returns the parent of an absolute path, "/" for "/" itself.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// watching reports whether the session holds watches on the fake: its
// client then holds them too, and sends setWatches as it reconnects.
func (s *session) watching() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.registered) > 0
}

func (s *session) holds(path string, kind watchKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered[watchKey{path, kind}]
}
