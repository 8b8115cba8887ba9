package zkfake

// A server made WithEnsemble models a ZooKeeper ensemble: a leader that
// orders every write, and followers that apply the leader's transactions in
// order, each serving the reads and watches of the sessions connected to
// it. A follower set lagging applies nothing until something forces it: a
// write by one of its own sessions (a session never reads older than its
// own last write), a Sync, or CatchUp. That is all ZooKeeper promises:
// writes are linearizable, reads may be stale.

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
// ensemble's size).
func WithMember(i int) ConnOption { return func(c *Conn) { c.member = i; c.memberSet = true } }

// changeKind is what a replicated change does to a node.
type changeKind uint8

const (
	changeAdd changeKind = iota
	changeRemove
	changeData
	changeACL
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
	applied int64    // the last zxid this member has applied
	queue   []change // committed, not yet applied
	lagging bool
}

func (m *member) view() view { return view{m.tree, m.watches} }

// apply replays one change on the member's tree and returns the watches it
// fires there.
func (m *member) apply(ch change) []notification {
	switch ch.kind {
	case changeAdd:
		n := *ch.node
		n.children = map[string]struct{}{}
		m.tree.add(ch.path, &n, ch.zxid)
		return m.watches.created(ch.path, n.acl, m.tree.get(parentOf(ch.path)).acl)
	case changeRemove:
		acl := m.tree.get(ch.path).acl
		m.tree.remove(ch.path, ch.zxid)
		return m.watches.deleted(ch.path, acl, m.tree.get(parentOf(ch.path)).acl)
	case changeData:
		n := m.tree.get(ch.path)
		n.data, n.version, n.mzxid, n.mtime = ch.node.data, ch.node.version, ch.node.mzxid, ch.node.mtime
		return m.watches.changed(ch.path, n.acl)
	case changeACL:
		n := m.tree.get(ch.path)
		n.acl, n.aversion = ch.node.acl, ch.node.aversion
	}
	return nil
}

// initMembers builds the members: the leader shares the state's own tree
// and watches; each follower starts with a copy of the initial tree.
func (s *Server) initMembers(n int) {
	s.members = []*member{{tree: s.st.tree, watches: s.st.watches}}
	for i := 1; i < n; i++ {
		s.members = append(s.members, &member{tree: newTree(), watches: newWatchTable()})
	}
	s.st.replicate = n > 1
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
		if !m.lagging {
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
// of its sessions writes or calls Sync, or CatchUp is called, so its
// sessions read stale data and see their watches fire late.
func (s *Server) SetLagging(i int, lagging bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i <= 0 || i >= len(s.members) {
		return // the leader never lags
	}
	m := s.members[i]
	m.lagging = lagging
	s.log.add(Record{Kind: RecordFault, Op: "lagging", Input: memberName(i), Result: boolWord(lagging)})
	if !lagging {
		s.catchUp(m, s.st.zxid)
	}
}

// CatchUp makes ensemble member i apply everything the leader has
// committed, without ending its lag.
func (s *Server) CatchUp(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i > 0 && i < len(s.members) {
		s.catchUp(s.members[i], s.st.zxid)
	}
}

// Member returns the ensemble member the session is connected to.
func (c *Conn) Member() int { return c.member }

func memberName(i int) string { return "member " + string(rune('0'+i%10)) }

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
