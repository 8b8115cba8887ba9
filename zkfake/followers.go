package zkfake

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"
)

// A server made WithEnsemble models a ZooKeeper ensemble: a leader that
// orders every write, and followers that apply the leader's transactions in
// order, each serving the reads and watches of the sessions connected to
// it. A follower set lagging applies nothing until something forces it: a
// write by one of its own sessions (a session never reads older than its
// own last write), a new session opened on it (its createSession is such a
// write), a Sync, CatchUp, or a client reconnecting to it that has read a
// later zxid (a server refuses a client that has seen more than it has). That is all ZooKeeper promises: writes are linearizable, reads may
// be stale.

// WithEnsemble makes the server model an ensemble of n members (member 0
// leads). Sessions connect to members in turn, or to the one WithMember
// names. With n = 1, the default, every read is up to date.
func WithEnsemble(n int) Option {
	return func(c *config) {
		if n < 1 {
			n = 1
		}
		c.members = n
	}
}

// WithMember connects the session to ensemble member i (taken modulo the
// ensemble's size) and to it only, as a client given that one server's
// address: when the member is stopped, the client waits for it. A session
// connected without WithMember moves to another member instead.
func WithMember(i int) ConnOption { return func(c *Conn) { c.member = i; c.memberSet = true } }

// StartOn connects the session to ensemble member i (taken modulo the
// ensemble's size) first, without pinning it there: when the member is
// stopped, the session moves to another one, as a client given every
// server's address with member i's first. Without StartOn or WithMember
// sessions connect to the members in turn.
func StartOn(i int) ConnOption { return func(c *Conn) { c.member, c.startSet = i, true } }

// Members returns how many members the modelled ensemble has (WithEnsemble;
// 1 without it).
func (s *Server) Members() int { return len(s.members) }

// MemberUp reports whether ensemble member i serves: it exists and was not
// stopped (StopMember) or was started again.
func (s *Server) MemberUp(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return i >= 0 && i < len(s.members) && !s.members[i].down
}

// changeKind is what a replicated change does to a node.
type changeKind uint8

const (
	changeAdd changeKind = iota
	changeRemove
	changeData
	changeACL
	changeSequence // Server.SetSequence: the node's create counter
)

// change is one step of a transaction, replayed by followers.
type change struct {
	kind changeKind
	zxid int64
	path string
	node *znode // the node as the change left it; nil for a remove
}

// member is one server of the ensemble.
type member struct {
	tree    *tree
	watches watchTable
	applied int64          // the last zxid this member has applied
	queue   []change       // committed, not yet applied
	fired   []notification // what the last apply fired (see apply)
	lagging bool
	down    bool // stopped: serves nobody and applies nothing until started
}

func (m *member) view() view { return view{m.tree, m.watches} }

// apply replays one change on the member's tree and returns the watches it
// fires there, valid until the next apply (as state.commit's).
func (m *member) apply(ch change) []notification {
	out := reuseFired(m.fired)
	switch ch.kind {
	case changeAdd:
		n := *ch.node
		n.children = nil
		m.tree.add(ch.path, &n, ch.zxid)
		out = m.watches.created(out, ch.path, n.acl, m.tree.get(parentOf(ch.path)).acl)
	case changeRemove:
		acl := m.tree.get(ch.path).acl
		m.tree.remove(ch.path, ch.zxid)
		out = m.watches.deleted(out, ch.path, acl, m.tree.get(parentOf(ch.path)).acl)
	case changeData:
		n := m.tree.get(ch.path)
		n.data, n.version, n.mzxid, n.mtime = ch.node.data, ch.node.version, ch.node.mzxid, ch.node.mtime
		out = m.watches.changed(out, ch.path, n.acl)
	case changeACL:
		n := m.tree.get(ch.path)
		n.acl, n.aversion = ch.node.acl, ch.node.aversion
	case changeSequence:
		m.tree.get(ch.path).creates = ch.node.creates
	}
	m.fired = out
	return out
}

// initMembers builds the members: the leader shares the state's own tree
// and watches; each follower starts with a copy of the initial tree.
func (s *Server) initMembers(n int) {
	s.members = []*member{{tree: s.st.tree, watches: s.st.watches}}
	for i := 1; i < n; i++ {
		s.members = append(s.members, &member{tree: newTree(), watches: newWatchTable()})
	}
	s.st.replicate = n > 1
	s.initConfigNode()
}

// memberOf returns the member a Conn is connected to.
func (s *Server) memberOf(c *Conn) *member { return s.members[c.member] }

// viewOf returns what c's reads see.
func (s *Server) viewOf(c *Conn) view { return s.memberOf(c).view() }

// replicate hands the last transaction's changes to the followers; those
// not lagging apply them at once. Called with s.mu held after every
// transaction.
func (s *Server) replicate() {
	s.members[0].applied = s.st.zxid
	if len(s.members) == 1 {
		return
	}
	for _, m := range s.members[1:] {
		m.queue = append(m.queue, s.st.changes...)
		if !m.lagging && !m.down {
			s.catchUp(m, s.st.zxid)
		}
	}
	s.st.changes = s.st.changes[:0]
}

// catchUp makes m apply every queued change up to zxid, delivering the
// watches they fire to m's sessions. Called with s.mu held.
func (s *Server) catchUp(m *member, zxid int64) {
	i := 0
	for ; i < len(m.queue) && m.queue[i].zxid <= zxid; i++ {
		s.deliver(m.apply(m.queue[i]), m.queue[i].zxid)
	}
	m.queue = append(m.queue[:0], m.queue[i:]...)
	if zxid > m.applied {
		m.applied = zxid
	}
}

// SetLagging makes ensemble member i lag (or stop lagging, catching up at
// once). A lagging member applies the leader's transactions only when one
// of its sessions writes or calls Sync, a session is opened on it, or
// CatchUp is called, so its sessions read stale data and see their watches
// fire late.
func (s *Server) SetLagging(i int, lagging bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i <= 0 || i >= len(s.members) {
		return // the leader never lags
	}
	m := s.members[i]
	m.lagging = lagging
	s.log.add(Record{Kind: RecordFault, Op: "lagging", Input: memberName(i), Result: boolWord(lagging)})
	if !lagging && !m.down {
		s.catchUp(m, s.st.zxid)
	}
}

// CatchUp makes ensemble member i apply everything the leader has
// committed, without ending its lag.
func (s *Server) CatchUp(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i > 0 && i < len(s.members) && !s.members[i].down {
		s.catchUp(s.members[i], s.st.zxid)
	}
}

// Member returns the ensemble member the session is connected to.
func (c *Conn) Member() int {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.member
}

// ReconnectTo sends the client's next reconnect to ensemble member i (taken
// modulo the ensemble's size), as go-zookeeper, whose connection dropped,
// dials the next server of its list. It does not drop the connection: it
// takes effect at the next reconnect, whatever causes it — a lost reply, a
// partition noticed, a stopped member, an expiry. A Conn made WithMember
// is pinned to member i from that reconnect on.
//
// The member takes the client as ZooKeeper's processConnectRequest does: a
// server whose last zxid is behind the client's last-seen one refuses it
// and the client moves on, which the fake models by having the member
// catch up first. The client has seen only the zxids of replies it read,
// so after a lost reply the member may still lack that write, and the
// client's reads there do not show it until the member catches up.
func (c *Conn) ReconnectTo(i int) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.members)
	c.next, c.nextSet = (i%n+n)%n, true
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "reconnectTo", Input: memberName(c.next)})
}

func memberName(i int) string { return "member " + strconv.Itoa(i) }

func boolWord(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// dropWatches forgets a session's watches on every member.
func (s *Server) dropWatches(session int64) {
	for _, m := range s.members {
		m.watches.dropSession(session)
	}
}

// quorum reports whether a majority of the members is up, without which
// the ensemble serves no one.
func (s *Server) quorum() bool {
	up := 0
	for _, m := range s.members {
		if !m.down {
			up++
		}
	}
	return 2*up > len(s.members)
}

// reachable reports whether c can connect now, moving it to the next
// member that is up if its own is stopped and it is not pinned to it.
func (s *Server) reachable(c *Conn) bool {
	if !s.quorum() {
		return false
	}
	if !s.members[c.member].down {
		return true
	}
	if c.memberSet {
		return false
	}
	for k := 1; k < len(s.members); k++ {
		if i := (c.member + k) % len(s.members); !s.members[i].down {
			c.member = i
			return true
		}
	}
	return false
}

// StopMember stops ensemble member i, as a server that crashed or was shut
// down: its clients lose their connection and reconnect to another member
// (those connected WithMember wait for it), keeping their sessions. The
// committed state lives on in the remaining members, so stopping member 0,
// the leader, only moves its clients: the others elect a new leader. With
// no majority left up, the ensemble serves no one — every client is
// disconnected and retries each second — and expires no session until a
// majority is back; then, as a new leader does, it gives every session that
// has not reconnected a fresh timeout.
func (s *Server) StopMember(i int) { s.StopMembers(i) }

// StopMembers stops several ensemble members at one instant, as a power
// cut or a network split takes them, each as StopMember does. Between two
// StopMember calls a client of the first may reconnect to the second, and
// have its session again for a moment; here it finds them both down.
func (s *Server) StopMembers(members ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopMembers(members)
}

// stopMembers is StopMembers. Called with s.mu held.
func (s *Server) stopMembers(members []int) {
	hadQuorum := s.quorum()
	stopped := map[int]bool{}
	for _, i := range members {
		if i < 0 || i >= len(s.members) || s.members[i].down {
			continue
		}
		s.members[i].down = true
		stopped[i] = true
		s.log.add(Record{Kind: RecordFault, Op: "stopMember", Input: memberName(i)})
	}
	if len(stopped) == 0 {
		// Every lost request's rule comes here (Conn.lose), most with no
		// member to stop: nothing changed, and no connection need be
		// looked at.
		return
	}
	lost := hadQuorum && !s.quorum()
	if lost {
		for id := range s.expiry {
			s.disarmExpiry(id)
		}
	}
	for _, c := range s.connsInOrder() {
		if c.link == linkUp && (lost || stopped[c.member]) {
			c.bounce()
		}
	}
}

// StartMember starts a stopped ensemble member again. It catches up with
// what it missed; if that restores a majority, waiting clients get through
// at their next attempt.
func (s *Server) StartMember(i int) { s.StartMembers(i) }

// StartMembers starts several stopped ensemble members at one instant,
// each as StartMember does.
func (s *Server) StartMembers(members ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hadQuorum := s.quorum()
	for _, i := range members {
		if i < 0 || i >= len(s.members) || !s.members[i].down {
			continue
		}
		m := s.members[i]
		m.down = false
		s.log.add(Record{Kind: RecordFault, Op: "startMember", Input: memberName(i)})
		if i > 0 && !m.lagging {
			s.catchUp(m, s.st.zxid)
		}
	}
	if !hadQuorum && s.quorum() {
		// In the order of the sessions' ids: sessions of one timeout
		// then expire at one instant, and the clock runs timers due
		// together in the order they were set.
		for _, id := range slices.Sorted(maps.Keys(s.st.sessions)) {
			if c := s.conns[id]; c == nil || c.link != linkUp {
				s.disarmExpiry(id)
				s.armExpiry(id, time.Duration(s.st.sessions[id].timeout)*time.Millisecond)
			}
		}
	}
}

// connsInOrder returns the live sessions' Conns by session id, so that
// faults touch them in an order that does not vary from run to run.
func (s *Server) connsInOrder() []*Conn {
	ids := make([]int64, 0, len(s.conns))
	for id := range s.conns {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := make([]*Conn, len(ids))
	for k, id := range ids {
		out[k] = s.conns[id]
	}
	return out
}
