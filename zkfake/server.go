package zkfake

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Server is an in-memory ZooKeeper. It is safe for many goroutines. Its
// timers (session expiry, TTL and container reaping) run on the time
// package, so inside a testing/synctest bubble time is virtual and a
// 30-second session timeout passes at once.
type Server struct {
	// mu guards everything below; plain reads take one shard of it shared.
	mu    serverLock
	lossy atomic.Bool // a lost-reply rule or rate was ever set

	conns64 atomic.Int64 // Conns made, to spread them over the lock's shards
	cfg     config
	st      *state
	rng     *rand.Rand
	conns   map[int64]*Conn // live session id → the Conn that owns it
	// clients are the Conns neither closed nor crashed, whether their
	// session lives or not (one cut off past its expiry owns none until it
	// reconnects): Close must end every one.
	clients map[*Conn]struct{}

	nextSession int64
	clock       clock
	expiry      map[int64]timer // sessions with no live link, by id
	reaper      timer
	log         eventLog
	losses      lossRules
	delivered   map[int64]int // watch events delivered, by session
	closed      bool
	members     []*member // the ensemble; members[0] leads
	nextMember  int
	// halt is closed by Close: it stops the goroutines that hand
	// persistent watch events to their channels.
	halt chan struct{}
}

type config struct {
	seed          uint64
	tickTime      time.Duration
	checkInterval time.Duration
	keepLog       bool
	addr          string
	manual        *manualClock
	members       int
	shuffled      bool
	sequenceStart int32
	saslScheme    bool
	quorum        []QuorumServer // WithQuorum
}

// Option configures a Server.
type Option func(*config)

// WithSeed makes every choice the server draws — session ids, the GUIDs of
// protected creates, randomly lost replies, the order of listings with
// WithShuffledChildren — come from seed, so a scenario run twice under
// synctest produces the same event log byte for byte.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithTickTime sets ZooKeeper's tickTime (default 2s, as in the server's
// sample configuration). Negotiated session timeouts are clamped to 2 to 20
// ticks, as the server clamps them.
func WithTickTime(d time.Duration) Option { return func(c *config) { c.tickTime = d } }

// WithContainerCheckInterval sets how often empty containers and expired TTL
// nodes are reaped (ZooKeeper's znode.container.checkIntervalMs, default 60s).
func WithContainerCheckInterval(d time.Duration) Option {
	return func(c *config) { c.checkInterval = d }
}

// WithoutEventLog turns the event log off, for benchmarks and long runs that
// do not read it.
func WithoutEventLog() Option { return func(c *config) { c.keepLog = false } }

// WithShuffledChildren makes every listing (Children, ChildrenW) come in an
// order drawn from the server's seed (WithSeed) instead of sorted.
// ZooKeeper lists a directory in its hash set's order, which no client may
// rely on; a recipe that trusts the order it is given passes on a sorted
// fake and fails on a real ensemble, and this option makes it fail on the
// fake too. The order is a function of the seed, the directory and the
// state of its children: the same seed gives the same orders, a listing
// repeated with nothing changed comes back the same, and a change of
// children draws a new order. It does not hang on the GUIDs in the
// children's names, which a client library draws from crypto/rand, but on
// the order they were made, so a scenario run twice lists them the same
// way.
func WithShuffledChildren() Option { return func(c *config) { c.shuffled = true } }

// WithAddr sets the address Conn.Server reports (default "127.0.0.1:2181").
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithSequenceStart starts the sequence counter of every znode created
// from then on at n, as Server.SetSequence would for each: the first
// sequential child made under any new node gets the suffix n. A test sets
// it to a few creates before the counter's int32 wrap so that every
// directory a recipe makes — its own top directory and whatever it makes
// below (a semaphore's lease directory, a barrier's per-round node) —
// meets the wrap, without the test knowing their names. The nodes that
// exist when the server starts ("/", "/zookeeper") keep counting from zero.
func WithSequenceStart(n int32) Option { return func(c *config) { c.sequenceStart = n } }

// WithSASLScheme gives the server ZooKeeper's "sasl" ACL scheme, as
// authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
// gives the real server: an ACL entry sasl:NAME is valid when NAME is a
// name Kerberos can parse (SASLAuthenticationProvider.isValid), and grants
// its permissions to a session with the identity sasl:NAME or sasl:super.
// Without it, as on a server without the provider, such an entry is
// refused with zk.ErrInvalidACL. Sessions get a sasl identity from a SASL
// login (package wire serves them; Conn.AddSASLIdentity).
func WithSASLScheme() Option { return func(c *config) { c.saslScheme = true } }

// NewServer returns a fresh server holding the tree a new ZooKeeper 3.8 has:
// "/" and "/zookeeper" with its "quota" and "config" children.
func NewServer(opts ...Option) *Server {
	cfg := config{members: 1, seed: 1, tickTime: 2 * time.Second, checkInterval: time.Minute, keepLog: true, addr: "127.0.0.1:2181"}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		mu:        newServerLock(),
		cfg:       cfg,
		st:        newState(cfg.shuffled, cfg.seed),
		rng:       rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		conns:     map[int64]*Conn{},
		clients:   map[*Conn]struct{}{},
		clock:     newOrderedClock(),
		expiry:    map[int64]timer{},
		delivered: map[int64]int{},
		halt:      make(chan struct{}),
	}
	// Session ids look like the server's: the server id in the top byte and
	// a time-derived counter below; here the counter starts at a seeded value.
	s.nextSession = 1<<56 | int64(s.rng.Uint32())<<8
	if cfg.manual != nil {
		s.clock = cfg.manual
	}
	s.st.sequenceStart = cfg.sequenceStart
	s.st.saslScheme = cfg.saslScheme
	s.initMembers(cfg.members)
	s.log.enabled = cfg.keepLog
	s.log.clock = s.clock
	return s
}

// Connect opens a new session with the requested timeout, as zk.Connect
// does, and returns its Conn and event channel. The channel first carries
// StateConnecting, StateConnected and StateHasSession. When no member can
// serve the client (the ensemble has no quorum) the Conn dials in rounds,
// as go-zookeeper's does, and opens its session once one can; its requests
// wait meanwhile, and fail with zk.ErrNoServer at each round.
func (s *Server) Connect(sessionTimeout time.Duration, opts ...ConnOption) (*Conn, <-chan zk.Event, error) {
	c := &Conn{
		srv:        s,
		readKey:    s.conns64.Add(1),
		events:     make(chan zk.Event, eventChanSize),
		watchers:   map[watchKey][]chan zk.Event{},
		persistent: map[watchKey][]*eventQueue{},
		changed:    make(chan struct{}),
		requested:  sessionTimeout,
	}
	for _, o := range opts {
		o(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, zk.ErrNoServer
	}
	if !c.memberSet && !c.startSet {
		c.member = s.nextMember
		s.nextMember++
	}
	c.member %= len(s.members)
	c.sendEvent(sessionEvent(zk.StateConnecting, s.cfg.addr))
	s.clients[c] = struct{}{}
	if !s.reachable(c) {
		// No member serves (the ensemble has no quorum, or a pinned
		// member is down): as go-zookeeper's Connect, the Conn is
		// returned at once, dials in rounds, and opens its session once
		// a member answers; requests wait meanwhile.
		c.link = linkDown
		c.round = make(chan struct{})
		c.scheduleDial()
		return c, c.events, nil
	}
	c.sendEvent(sessionEvent(zk.StateConnected, s.cfg.addr))
	s.openSession(c)
	return c, c.events, nil
}

// TickTime returns the server's tickTime (WithTickTime): negotiated
// session timeouts are clamped to 2 to 20 ticks.
func (s *Server) TickTime() time.Duration { return s.cfg.tickTime }

// negotiate clamps a requested session timeout to 2..20 ticks.
func (s *Server) negotiate(requested time.Duration) time.Duration {
	lo, hi := 2*s.cfg.tickTime, 20*s.cfg.tickTime
	return min(max(requested.Truncate(time.Millisecond), lo), hi)
}

// openSession gives c a new session. Called with s.mu held.
func (s *Server) openSession(c *Conn) {
	id := s.nextSession
	s.nextSession++
	c.timeout = s.negotiate(c.requested)
	s.st.createSession(id, c.timeout.Milliseconds())
	s.replicate()
	// createSession is a transaction, and the member answers the connect
	// only once it has applied it (FinalRequestProcessor), so after every
	// transaction before it: a new session, even on a member that lags and
	// even after its client forgot every zxid of an expired one, reads
	// nothing older than its own creation.
	if m := s.memberOf(c); m.applied < s.st.zxid {
		s.catchUp(m, s.st.zxid)
	}
	s.conns[id] = c
	c.session = id
	c.sessionID.Store(id)
	// The connect response carries no zxid: go-zookeeper starts a session
	// (a new one, or the next after an expiry) having seen none.
	c.lastZxid.Store(0)
	c.link = linkUp
	for _, cred := range c.creds {
		s.st.addAuth(id, cred.scheme, cred.auth)
	}
	s.log.add(Record{Kind: RecordSession, Session: id, Zxid: s.st.zxid, Op: "createSession", Result: c.timeout.String()})
	c.sendEvent(sessionEvent(zk.StateHasSession, s.cfg.addr))
	c.wake()
}

// now is the transaction time in milliseconds.
func (s *Server) now() int64 { return s.clock.Now().UnixMilli() }

// deliver hands fired watches to the sessions' connections. A session whose
// link is down misses them here; its client asks again on reconnect, as
// ZooKeeper's setWatches does. Called with s.mu held.
func (s *Server) deliver(ns []notification, zxid int64) {
	for _, n := range ns {
		c := s.conns[n.session]
		if c == nil || (c.link != linkUp && c.link != linkCut) {
			continue
		}
		if n.acl != nil && checkACL(n.acl, zk.PermRead, s.st.ids(s.st.sessions[n.session])) != nil {
			// The watch is used up, but a session that may not read the
			// node is not told (ZOOKEEPER-4799).
			continue
		}
		if c.link == linkCut {
			// Sent into a connection that is cut but not yet known to be
			// gone: it arrives if the link heals first.
			c.held = append(c.held, heldEvent{n.event, zxid})
			continue
		}
		s.handOver(c, n.event, zxid)
	}
}

// handOver gives a watch event to a connected client, counting and logging
// it. Called with s.mu held.
func (s *Server) handOver(c *Conn, ev zk.Event, zxid int64) {
	s.delivered[c.session]++
	s.log.add(Record{Kind: RecordWatch, Session: c.session, Zxid: zxid, Op: ev.Type.String(), Path: ev.Path})
	c.receive(ev)
}

// endSession closes or expires a session: one transaction that deletes its
// ephemerals and fires the watches that removal triggers. Called with s.mu
// held.
func (s *Server) endSession(id int64, why string) bool {
	ns, ok := s.st.closeSession(id, s.now())
	if !ok {
		return false
	}
	if t := s.expiry[id]; t != nil {
		t.Stop()
		delete(s.expiry, id)
	}
	s.log.add(Record{Kind: RecordSession, Session: id, Zxid: s.st.zxid, Op: why})
	// The session's own connection, if still up, hears of its ephemerals'
	// deletion too: the server sends the events before it closes the
	// connection.
	s.deliver(ns, s.st.zxid)
	s.replicate()
	s.st.forgetSession(id)
	s.dropWatches(id)
	delete(s.conns, id)
	return true
}

// armExpiry starts the server's countdown for a session that stopped
// talking. Called with s.mu held.
func (s *Server) armExpiry(id int64, timeout time.Duration) {
	if s.expiry[id] != nil || s.closed || !s.quorum() {
		// Without a quorum there is no leader to expire sessions; the next
		// leader gives every silent session a fresh timeout.
		return
	}
	var t timer
	t = s.clock.AfterFunc(timeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.expiry[id] != t {
			// Disarmed (the client came back) after the timer fired but
			// before this ran.
			return
		}
		delete(s.expiry, id)
		s.endSession(id, "expireSession")
	})
	s.expiry[id] = t
}

// disarmExpiry stops the countdown of a session whose client is back.
func (s *Server) disarmExpiry(id int64) {
	if t := s.expiry[id]; t != nil {
		t.Stop()
		delete(s.expiry, id)
	}
}

// Expire expires a session now, as the server does when it has not heard
// from the client within the timeout: its ephemeral nodes are deleted and
// their watchers notified. The owner learns of it at its next contact with
// the server — at once if it is connected — sees StateExpired, and carries
// on with a new session, as go-zookeeper does. It returns false if there is
// no such session.
func (s *Server) Expire(sessionID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.sessions[sessionID]; !ok {
		return false
	}
	if c := s.expireLocked(sessionID); c != nil {
		c.reconnect()
	}
	return true
}

// expireLocked ends a live session as expired and returns its Conn if it
// was connected, for the caller to reconnect: the client then learns of
// the expiry. A session expires because the server stopped hearing from
// it, so its client hears nothing of the expiry's own events: its
// connection is gone first. Called with s.mu held.
func (s *Server) expireLocked(sessionID int64) (connected *Conn) {
	c := s.conns[sessionID]
	if c != nil && c.link == linkUp {
		c.dropLink()
		connected = c
	}
	s.endSession(sessionID, "expireSession")
	return connected
}

// Close stops the server: every Conn is cut off as if its process had
// crashed (blocked calls return ErrConnectionClosed, event channels close,
// persistent watch channels close at once, their undelivered events
// dropped) and every timer is stopped.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	// Crash in session order, so that the events they send do not depend
	// on map order.
	clients := make([]*Conn, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	slices.SortFunc(clients, func(a, b *Conn) int { return cmp.Compare(a.session, b.session) })
	for _, c := range clients {
		c.crash()
	}
	close(s.halt)
	for id, t := range s.expiry {
		t.Stop()
		delete(s.expiry, id)
	}
	if s.reaper != nil {
		s.reaper.Stop()
	}
}

// armReaper schedules the next container and TTL check if there is
// something it could reap. Called with s.mu held.
func (s *Server) armReaper() {
	if s.reaper != nil || s.closed {
		return
	}
	s.reaper = s.clock.AfterFunc(s.cfg.checkInterval, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reaper = nil
		if s.reap() {
			s.armReaper()
		}
	})
}

// reap deletes the empty containers that have had children and the TTL nodes
// with no children whose TTL has passed since their last change, each in a
// transaction of its own, as ZooKeeper's ContainerManager does. It reports
// whether any container or TTL node is left to watch.
func (s *Server) reap() bool {
	now := s.now()
	var doomed []string
	for path, n := range s.st.tree.nodes {
		switch n.kind {
		case kindContainer:
			// A container that has had children: its counter moved from
			// where every new node's starts (WithSequenceStart).
			if n.creates != s.st.sequenceStart && len(n.children) == 0 {
				doomed = append(doomed, path)
			}
		case kindTTL:
			if len(n.children) == 0 && now-n.mtime > n.ttl {
				doomed = append(doomed, path)
			}
		}
	}
	sort.Strings(doomed)
	for _, path := range doomed {
		ctx := s.st.begin(0, now)
		s.st.removeNode(ctx, path)
		ns := s.st.commit()
		s.log.add(Record{Kind: RecordOp, Zxid: ctx.zxid, Op: "reap", Path: path})
		s.deliver(ns, ctx.zxid)
		s.replicate()
	}
	return s.st.tree.reapable > 0
}

// armReaperIfNeeded starts the reaper after a write if the tree holds a
// container or TTL node. Called with s.mu held.
func (s *Server) armReaperIfNeeded() {
	if s.st.tree.reapable > 0 {
		s.armReaper()
	}
}
