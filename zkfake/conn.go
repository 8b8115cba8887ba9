package zkfake

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is a client session on a fake Server. It has exactly the method set
// of *zk.Conn from github.com/go-zookeeper/zk v1.0.4, with the same
// signatures, return conventions, types and error values, so code written
// against *zk.Conn (or an interface of its methods, like recipe.Conn) runs
// against it unchanged.
//
// Like the real client it survives connection loss: calls made while it is
// disconnected wait for the reconnect (failing with zk.ErrNoServer each
// second that no server answers), its watches are re-armed on reconnect and
// fire for what it missed, and after its session expires it carries on with
// a new session id.
type Conn struct {
	srv       *Server
	requested time.Duration
	readKey   int64 // picks the server lock's shard for plain reads
	callback  func(zk.Event)

	// Read without the server lock by SessionID and State, as go-zookeeper
	// reads them atomically.
	sessionID atomic.Int64
	state     atomic.Int32

	// The rest is guarded by srv.mu.
	session     int64
	timeout     time.Duration
	lastZxid    atomic.Int64 // the zxid of the last reply read, for setWatches and reconnects
	link        linkState
	partitioned bool
	paused      bool
	member      int  // the ensemble member the session is connected to
	memberSet   bool // pinned to member by WithMember
	startSet    bool // started on member, free to move
	next        int  // the member the next reconnect goes to, if nextSet
	nextSet     bool // ReconnectTo was called
	movedFrom   int  // the member the client left for next, if moving
	moving      bool // a reconnect to next has begun and not yet got through
	events      chan zk.Event
	eventsShut  bool
	watchers    map[watchKey][]chan zk.Event
	changed     chan struct{} // closed and replaced whenever link changes, or a waiting request's turn comes
	tickets     int           // tickets given to requests that had to wait for the link (see awaitLink)
	turn        int           // the ticket whose request goes next
	round       chan struct{} // closed and replaced at each failed reconnect round
	notice      timer         // when a partitioned client notices
	dial        timer         // the next reconnect attempt
	creds       []credential
	held        []heldEvent // watch events sent while the link was cut
	connGen     int         // counts dropped connections
}

// eventChanSize is the capacity of a Conn's event channel. go-zookeeper's
// holds 6 events and drops what does not fit; its reader, though, drains it
// while the client works through a reconnect in real time, so it sees every
// event. The fake emits the events of a reconnect or an expiry all at once,
// so it holds more before it drops, as the real one does, what a reader
// leaves unread.
const eventChanSize = 64

// reconnectRound is how long go-zookeeper waits between rounds of dialling
// when no server answers; each round fails the requests queued meanwhile
// with zk.ErrNoServer.
const reconnectRound = time.Second

// linkState is the state of a Conn's connection to the server.
type linkState uint8

const (
	linkUp      linkState = iota
	linkCut               // partitioned; the client has not noticed yet
	linkDown              // the client noticed and is reconnecting
	linkCrashed           // Crash was called: the client talks no more
	linkClosed            // Close was called
)

// watchType is go-zookeeper's client-side kind of watch: the same server
// watch fans out to different channels by the call that set it.
type watchType uint8

const (
	watchData  watchType = iota // GetW, or ExistsW on an existing node
	watchExist                  // ExistsW on a missing node
	watchChild                  // ChildrenW
)

type watchKey struct {
	path string
	kind watchType
}

// heldEvent is a watch event in a cut connection, delivered if it heals.
type heldEvent struct {
	event zk.Event
	zxid  int64
}

// release delivers the events held while the link was cut, now that it is
// up again. Called with srv.mu held.
func (c *Conn) release() {
	held := c.held
	c.held = nil
	for _, h := range held {
		c.srv.handOver(c, h.event, h.zxid)
	}
}

type credential struct {
	scheme string
	auth   []byte
}

// ConnOption configures a Conn.
type ConnOption func(*Conn)

// WithEventCallback calls f with every event the session sees, before it is
// put on the event channel, as zk.WithEventCallback does. f runs while the
// server is locked: it must not call the Conn or the Server.
func WithEventCallback(f func(zk.Event)) ConnOption { return func(c *Conn) { c.callback = f } }

func sessionEvent(state zk.State, server string) zk.Event {
	return zk.Event{Type: zk.EventSession, State: state, Server: server}
}

// sendEvent puts an event on the session's channel, dropping it if the
// channel is full, as go-zookeeper does. Called with srv.mu held.
func (c *Conn) sendEvent(ev zk.Event) {
	if ev.Type == zk.EventSession {
		c.state.Store(int32(ev.State))
		c.srv.log.add(Record{Kind: RecordSession, Session: c.session, Zxid: c.lastZxid.Load(), Op: ev.State.String()})
	}
	if c.callback != nil {
		c.callback(ev)
	}
	if !c.eventsShut {
		select {
		case c.events <- ev:
		default:
		}
	}
}

// receive handles a watch event from the server: onto the event channel,
// then to every watch channel the event concerns. Called with srv.mu held.
func (c *Conn) receive(ev zk.Event) {
	c.sendEvent(ev)
	var kinds []watchType
	switch ev.Type {
	case zk.EventNodeCreated:
		kinds = []watchType{watchExist}
	case zk.EventNodeDataChanged:
		kinds = []watchType{watchExist, watchData}
	case zk.EventNodeChildrenChanged:
		kinds = []watchType{watchChild}
	case zk.EventNodeDeleted:
		kinds = []watchType{watchExist, watchData, watchChild}
	}
	for _, k := range kinds {
		key := watchKey{ev.Path, k}
		for _, ch := range c.watchers[key] {
			ch <- ev
			close(ch)
		}
		delete(c.watchers, key)
	}
}

// addWatcher hands out a new one-shot watch channel. Called with srv.mu held.
func (c *Conn) addWatcher(path string, kind watchType) <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	key := watchKey{path, kind}
	c.watchers[key] = append(c.watchers[key], ch)
	return ch
}

// invalidateWatches ends every watch with EventNotWatching and err, as
// go-zookeeper does on expiry and on close. Called with srv.mu held.
func (c *Conn) invalidateWatches(err error) {
	keys := make([]watchKey, 0, len(c.watchers))
	for k := range c.watchers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].path != keys[j].path {
			return keys[i].path < keys[j].path
		}
		return keys[i].kind < keys[j].kind
	})
	for _, k := range keys {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.path, Err: err}
		c.sendEvent(ev)
		for _, ch := range c.watchers[k] {
			ch <- ev
			close(ch)
		}
	}
	c.watchers = map[watchKey][]chan zk.Event{}
}

// wake tells blocked calls that the link changed. Called with srv.mu held.
func (c *Conn) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// awaitLink returns once the link is up, or with the error the request
// fails with, releasing srv.mu while it waits. A request made while the link
// is cut is on the wire: it gets through if the partition heals before the
// client gives up on the connection, and if that connection is dropped
// meanwhile it goes with it, even if a new connection is up by the time it
// looks. A request made while the client reconnects is queued: it goes out
// on the next connection, or fails with zk.ErrNoServer when a round of dials
// fails. Requests that waited go on in the order they were made — as
// go-zookeeper's send queue and the connection keep them — each with its
// ticket, not in the order the Go scheduler wakes their goroutines; a
// request made while some still wait takes a ticket too. Called with
// srv.mu held.
func (c *Conn) awaitLink() error {
	if c.link == linkUp && c.turn == c.tickets {
		return nil
	}
	s := c.srv
	ticket := c.tickets
	c.tickets++
	defer func() {
		c.turn++
		c.wake() // the next ticket's turn
	}()
	wire := -1     // the connection the request went out on into a cut link
	var fail error // how the request failed, once it has
	for {
		if fail == nil {
			switch c.link {
			case linkCrashed, linkClosed:
				fail = zk.ErrConnectionClosed
			case linkCut:
				if wire < 0 {
					wire = c.connGen
				} else if c.connGen != wire {
					fail = zk.ErrConnectionClosed
				}
			case linkDown:
				if wire >= 0 {
					fail = zk.ErrConnectionClosed
				}
			case linkUp:
				if wire >= 0 && c.connGen != wire {
					fail = zk.ErrConnectionClosed
				}
			}
		}
		if c.turn == ticket && (fail != nil || c.link == linkUp) {
			return fail
		}
		changed, round := c.changed, c.round
		queued := fail == nil && c.link == linkDown
		s.mu.Unlock()
		if queued {
			select {
			case <-changed:
				s.mu.Lock()
			case <-round:
				s.mu.Lock()
				if c.link != linkUp {
					fail = zk.ErrNoServer
				}
			}
		} else {
			<-changed
			s.mu.Lock()
		}
	}
}

// read runs a request that changes nothing on the server — no watch, no
// sync — under the server's read lock, so that reads from many goroutines
// run in parallel. It falls back to exchange when anything about the
// request needs the write lock: the event log is on, a lost-reply rule is
// set, or the link is not up.
func (c *Conn) read(op, path string, apply func(st *state) error) error {
	s := c.srv
	if !s.log.enabled && !s.lossy.Load() {
		shard := s.mu.RLock(c.readKey)
		if c.link == linkUp && c.turn == c.tickets {
			err := apply(s.st)
			c.lastZxid.Store(s.memberOf(c).applied)
			shard.RUnlock()
			return err
		}
		shard.RUnlock()
	}
	return c.exchange(op, path, headerSize+stringSize(path)+1, apply)
}

// exchange sends one request as go-zookeeper would and runs apply on the
// server when it arrives. It waits out a broken link the way the real client
// does (awaitLink), applies the lost-reply rules, and refuses a request over
// the server's packet limit by dropping the connection, as the server does.
func (c *Conn) exchange(op, path string, size int, apply func(st *state) error) error {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.awaitLink(); err != nil {
		return err
	}
	if size+4 > clientBuffer {
		// go-zookeeper cannot even encode it; nothing is sent.
		return zk.ErrShortBuffer
	}
	if size > maxPacket {
		s.log.add(Record{Kind: RecordFault, Session: c.session, Op: op, Path: path, Result: fmt.Sprintf("packet of %d bytes refused", size)})
		c.bounce()
		return zk.ErrConnectionClosed
	}
	loss := s.losses.match(s, c, op, path)
	if loss == lossBeforeApply {
		s.log.add(Record{Kind: RecordFault, Session: c.session, Op: op, Path: path, Result: "request lost"})
		c.bounce()
		return zk.ErrConnectionClosed
	}
	err := apply(s.st)
	if loss == lossAfterApply {
		// go-zookeeper learns zxids only from the replies it reads, so a
		// lost reply leaves its last-seen zxid where it was: on reconnect
		// a member that has not applied this write yet may take it.
		s.log.add(Record{Kind: RecordFault, Session: c.session, Op: op, Path: path, Result: "reply lost"})
		c.bounce()
		return zk.ErrConnectionClosed
	}
	// The reply carries the zxid of the member that answered.
	c.lastZxid.Store(s.memberOf(c).applied)
	return err
}

// write runs a write transaction for this session: it takes a zxid, runs
// body, logs it and delivers the watches it fired. input renders the
// request for the log, and is called only when the log is on. Called inside
// exchange.
func (c *Conn) write(st *state, op, path string, input func() string, body func(ctx writeCtx) (string, zk.Stat, error)) error {
	ctx := st.begin(c.session, c.srv.now())
	result, stat, err := body(ctx)
	var ns []notification
	if err != nil {
		st.rollback()
	} else {
		ns = st.commit()
	}
	if c.srv.log.enabled {
		c.srv.log.add(Record{Kind: RecordOp, Session: c.session, Zxid: ctx.zxid, Op: op, Path: path, Input: input(), Result: result, Stat: stat, Err: err})
	}
	c.srv.deliver(ns, ctx.zxid)
	c.srv.replicate()
	if m := c.srv.memberOf(c); m.applied < ctx.zxid {
		// A session never reads older than its own last write: its member
		// applies the write before it replies.
		c.srv.catchUp(m, ctx.zxid)
	}
	if err == nil {
		c.srv.armReaperIfNeeded()
	}
	return err
}

// readOp logs a read. Called inside exchange.
func (c *Conn) readOp(op, path string, stat zk.Stat, err error) {
	if c.srv.log.enabled {
		c.srv.log.add(Record{Kind: RecordOp, Session: c.session, Zxid: c.srv.memberOf(c).applied, Op: op, Path: path, Stat: stat, Err: err})
	}
}

// bounce drops the connection and has the client dial again at once, as
// it does whenever it finds its connection gone: a lost reply, a partition
// noticed, a member stopped. If the server cannot be reached, the attempt
// fails and rounds of retries follow. Called with srv.mu held.
func (c *Conn) bounce() {
	c.dropLink()
	c.reconnect()
}

// dropLink takes the connection down as the client sees it: the server
// forgets the session's watches (the client re-arms them) and starts the
// session's expiry countdown; the client reports StateDisconnected. Called
// with srv.mu held.
func (c *Conn) dropLink() {
	s := c.srv
	c.unheard()
	c.link = linkDown
	c.connGen++
	c.held = nil // lost with the connection; setWatches makes up for them
	c.round = make(chan struct{})
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.wake()
}

// unheard is the server's side of losing the client's connection: it
// forgets the session's watches (a returning client re-arms them) and
// starts the session's expiry countdown. Called with srv.mu held.
func (c *Conn) unheard() {
	s := c.srv
	if s.conns[c.session] == c {
		s.dropWatches(c.session)
		s.armExpiry(c.session, c.timeout)
	}
}

// reconnect dials the server again. If the client is still partitioned, the
// attempt fails and another round follows a second later. Otherwise the
// session resumes — watches re-armed, missed events fired — or, if it expired
// meanwhile, the client reports StateExpired, ends every watch with
// ErrSessionExpired and starts a new session. Called with srv.mu held.
func (c *Conn) reconnect() {
	s := c.srv
	if c.link != linkDown || s.closed {
		return
	}
	if c.nextSet {
		if !c.moving {
			c.movedFrom, c.moving = c.member, true
		}
		c.member, c.nextSet = c.next, false
	}
	c.sendEvent(sessionEvent(zk.StateConnecting, s.cfg.addr))
	if c.partitioned || !s.reachable(c) {
		c.scheduleDial()
		return
	}
	// The dial gets through: a move begun by an earlier, failed dial
	// ends here.
	var moved string
	if c.moving && c.member != c.movedFrom {
		moved = memberName(c.member)
	}
	c.moving = false
	c.sendEvent(sessionEvent(zk.StateConnected, s.cfg.addr))
	if m := s.memberOf(c); m.applied < c.lastZxid.Load() {
		// A server refuses a client whose last-seen zxid is past its own
		// (ZooKeeperServer.processConnectRequest); the client tries
		// another. Either way it ends up with a member that has caught up
		// with what it saw — and only with that: a write whose reply it
		// lost may still be missing there.
		s.catchUp(m, c.lastZxid.Load())
	}
	if _, alive := s.st.sessions[c.session]; alive && s.conns[c.session] == c {
		s.disarmExpiry(c.session)
		c.link = linkUp
		c.sendEvent(sessionEvent(zk.StateHasSession, s.cfg.addr))
		s.log.add(Record{Kind: RecordSession, Session: c.session, Zxid: s.st.zxid, Op: "reconnect", Input: moved})
		c.setWatches()
		c.wake()
		return
	}
	s.log.add(Record{Kind: RecordSession, Session: c.session, Zxid: s.st.zxid, Op: "expired"})
	c.sessionID.Store(0)
	c.sendEvent(sessionEvent(zk.StateExpired, s.cfg.addr))
	c.invalidateWatches(zk.ErrSessionExpired)
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.sendEvent(sessionEvent(zk.StateConnecting, s.cfg.addr))
	c.sendEvent(sessionEvent(zk.StateConnected, s.cfg.addr))
	s.openSession(c)
}

// scheduleDial fails the requests queued during this round with
// zk.ErrNoServer and tries again a round later. Called with srv.mu held.
func (c *Conn) scheduleDial() {
	close(c.round)
	c.round = make(chan struct{})
	if c.dial != nil {
		c.dial.Stop()
	}
	c.dial = c.srv.clock.AfterFunc(reconnectRound, func() {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		c.dial = nil
		c.reconnect()
	})
}

// setWatches re-arms the client's watches on the server after a reconnect,
// firing at once those whose node changed since the last zxid the client
// saw, exactly as ZooKeeper's DataTree.setWatches decides. Called with
// srv.mu held.
func (c *Conn) setWatches() {
	s := c.srv
	keys := make([]watchKey, 0, len(c.watchers))
	for k := range c.watchers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kind != keys[j].kind {
			return keys[i].kind < keys[j].kind
		}
		return keys[i].path < keys[j].path
	})
	var fired []notification
	v := s.viewOf(c)
	for _, k := range keys {
		n := v.tree.get(k.path)
		switch k.kind {
		case watchData:
			switch {
			case n == nil:
				fired = append(fired, notification{c.session, watchEvent(zk.EventNodeDeleted, k.path), nil})
			case n.mzxid > c.lastZxid.Load():
				fired = append(fired, notification{c.session, watchEvent(zk.EventNodeDataChanged, k.path), nil})
			default:
				addWatch(v.watches.data, k.path, c.session)
			}
		case watchExist:
			if n != nil {
				fired = append(fired, notification{c.session, watchEvent(zk.EventNodeCreated, k.path), nil})
			} else {
				addWatch(v.watches.data, k.path, c.session)
			}
		case watchChild:
			switch {
			case n == nil:
				fired = append(fired, notification{c.session, watchEvent(zk.EventNodeDeleted, k.path), nil})
			case n.pzxid > c.lastZxid.Load():
				fired = append(fired, notification{c.session, watchEvent(zk.EventNodeChildrenChanged, k.path), nil})
			default:
				addWatch(v.watches.child, k.path, c.session)
			}
		}
	}
	s.deliver(fired, s.st.zxid)
}

// crash cuts the client off for good. Called with srv.mu held.
func (c *Conn) crash() {
	s := c.srv
	if c.link == linkCrashed || c.link == linkClosed {
		return
	}
	c.unheard()
	c.stopTimers()
	c.link = linkCrashed
	c.held = nil
	// A crashed process's client reports no session to whatever of it
	// still looks, so that its goroutines stop.
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.invalidateWatches(zk.ErrConnectionClosed)
	c.closeEvents()
	c.wake()
}

func (c *Conn) stopTimers() {
	if c.notice != nil {
		c.notice.Stop()
		c.notice = nil
	}
	if c.dial != nil {
		c.dial.Stop()
		c.dial = nil
	}
}

func (c *Conn) closeEvents() {
	if c.eventsShut {
		return
	}
	c.eventsShut = true
	close(c.events)
}

// Close closes the session, as (*zk.Conn).Close does: the server deletes
// its ephemeral nodes and fires the watches that triggers; the client
// reports StateDisconnected, ends its own watches with EventNotWatching and
// zk.ErrClosing, and closes its event channel. Calls after Close return
// zk.ErrConnectionClosed. If the client is cut off, the server does not hear
// the close and the session expires after its timeout.
func (c *Conn) Close() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.link == linkClosed || c.link == linkCrashed {
		return
	}
	if c.link == linkUp {
		s.endSession(c.session, "closeSession")
	} else if s.conns[c.session] == c {
		s.armExpiry(c.session, c.timeout)
	}
	c.stopTimers()
	c.link = linkClosed
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.invalidateWatches(zk.ErrClosing)
	c.closeEvents()
	c.wake()
}

// State returns the current state of the connection.
func (c *Conn) State() zk.State { return zk.State(c.state.Load()) }

// SessionID returns the current session id; 0 between an expiry and the
// next session.
func (c *Conn) SessionID() int64 { return c.sessionID.Load() }

// Server returns the address of the server the client is connected to.
func (c *Conn) Server() string { return c.srv.cfg.addr }

// SetLogger is accepted for compatibility with *zk.Conn; the fake logs
// nothing.
func (c *Conn) SetLogger(zk.Logger) {}

// maxPacket is the largest request the server reads (jute.maxbuffer, 1 MiB
// less one byte); a larger one makes it close the connection.
const maxPacket = 0xfffff

// clientBuffer is go-zookeeper's send buffer: a request that does not fit
// fails in the client with zk.ErrShortBuffer.
const clientBuffer = 1536 * 1024

// Sizes of go-zookeeper's request encodings, for the packet limit.
func stringSize(s string) int { return 4 + len(s) }
func bytesSize(b []byte) int  { return 4 + len(b) }
func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + stringSize(a.Scheme) + stringSize(a.ID)
	}
	return n
}

const headerSize = 8 // xid and op code

func createSize(path string, data []byte, acl []zk.ACL) int {
	return headerSize + stringSize(path) + bytesSize(data) + aclSize(acl) + 4
}

// Create creates a znode and returns its path, which for a sequential node
// carries the server's 10-digit sequence number.
func (c *Conn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	kind, sequential, ok := decodeFlags(flags)
	if !ok {
		return "", fmt.Errorf("invalid flag value: [%v]", flags)
	}
	if err := checkClientPath(path, sequential); err != nil {
		return "", err
	}
	if kind == kindTTL {
		return "", fmt.Errorf("Create with TTL flag disallowed: %w", zk.ErrInvalidFlags)
	}
	return c.create("create", createOp{path: path, data: data, acl: acl, flags: flags, ttl: -1}, createSize(path, data, acl))
}

func (c *Conn) create(op string, req createOp, size int) (string, error) {
	var created string
	err := c.exchange(op, req.path, size, func(st *state) error {
		input := func() string { return fmt.Sprintf("flags=%d data=%q", req.flags, req.data) }
		return c.write(st, op, req.path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			ctx.clientChecked = true
			p, stat, err := st.create(ctx, req)
			created = p
			return p, stat, err
		})
	})
	if err != nil {
		return "", err
	}
	return created, nil
}

// CreateContainer creates a container znode, which the server deletes once
// its last child is gone.
func (c *Conn) CreateContainer(path string, data []byte, flag int32, acl []zk.ACL) (string, error) {
	kind, sequential, ok := decodeFlags(flag)
	if !ok {
		return "", fmt.Errorf("invalid flag value: [%v]", flag)
	}
	if err := checkClientPath(path, sequential); err != nil {
		return "", err
	}
	if kind != kindContainer {
		return "", fmt.Errorf("CreateContainer requires container flag: %w", zk.ErrInvalidFlags)
	}
	return c.create("createContainer", createOp{path: path, data: data, acl: acl, flags: flag, ttl: -1}, createSize(path, data, acl))
}

// CreateTTL creates a TTL znode, which the server deletes once it has had no
// children and no change for ttl.
func (c *Conn) CreateTTL(path string, data []byte, flag int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	kind, sequential, ok := decodeFlags(flag)
	if !ok {
		return "", fmt.Errorf("invalid flag value: [%v]", flag)
	}
	if err := checkClientPath(path, sequential); err != nil {
		return "", err
	}
	if kind != kindTTL {
		return "", fmt.Errorf("CreateTTL requires TTL flag: %w", zk.ErrInvalidFlags)
	}
	return c.create("createTTL", createOp{path: path, data: data, acl: acl, flags: flag, ttl: ttl.Milliseconds()}, createSize(path, data, acl)+8)
}

// protectedPrefix is go-zookeeper's marker for protected node names.
const protectedPrefix = "_c_"

// CreateProtectedEphemeralSequential creates an ephemeral sequential node
// whose name starts with a GUID, and on a lost reply looks for it by that
// GUID, exactly as go-zookeeper does (including its weakness: it does not
// check that the node found belongs to the current session). The GUID comes
// from the server's seeded generator.
func (c *Conn) CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error) {
	if err := checkClientPath(path, true); err != nil {
		return "", err
	}
	c.srv.mu.Lock()
	guid := fmt.Sprintf("%016x%016x", c.srv.rng.Uint64(), c.srv.rng.Uint64())
	c.srv.mu.Unlock()
	parts := strings.Split(path, "/")
	parts[len(parts)-1] = protectedPrefix + guid + "-" + parts[len(parts)-1]
	rootPath := strings.Join(parts[:len(parts)-1], "/")
	protectedPath := strings.Join(parts, "/")

	var newPath string
	var err error
	for i := 0; i < 3; i++ {
		newPath, err = c.Create(protectedPath, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		switch err {
		case zk.ErrSessionExpired:
		case zk.ErrConnectionClosed:
			children, _, err := c.Children(rootPath)
			if err != nil {
				return "", err
			}
			for _, p := range children {
				if strings.HasPrefix(p, protectedPrefix) && len(p) >= len(protectedPrefix)+32 && p[len(protectedPrefix):len(protectedPrefix)+32] == guid {
					return rootPath + "/" + p, nil
				}
			}
		case nil:
			return newPath, nil
		default:
			return "", err
		}
	}
	return "", err
}

// Delete deletes a znode if its version matches (-1 matches any).
func (c *Conn) Delete(path string, version int32) error {
	if err := checkClientPath(path, false); err != nil {
		return err
	}
	return c.exchange("delete", path, headerSize+stringSize(path)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d", version) }
		return c.write(st, "delete", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			return "", zk.Stat{}, st.delete(ctx, path, version)
		})
	})
}

// Exists tells whether a znode exists. A missing node gives false, a zero
// *zk.Stat and no error.
func (c *Conn) Exists(path string) (bool, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return false, nil, err
	}
	var r read
	err := c.read("exists", path, func(st *state) error {
		var err error
		r, err = st.exists(c.srv.viewOf(c), c.session, path, false)
		c.readOp("exists", path, r.stat, err)
		return err
	})
	if err == zk.ErrConnectionClosed {
		return false, nil, err
	}
	if err == zk.ErrNoNode {
		return false, r.statPtr(), nil
	}
	return true, r.statPtr(), err
}

// ExistsW is Exists that also sets a watch: NodeCreated on a missing node,
// NodeDataChanged or NodeDeleted on an existing one.
func (c *Conn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return false, nil, nil, err
	}
	var r read
	var ech <-chan zk.Event
	err := c.exchange("exists", path, headerSize+stringSize(path)+1, func(st *state) error {
		var err error
		r, err = st.exists(c.srv.viewOf(c), c.session, path, true)
		c.readOp("existsW", path, r.stat, err)
		switch err {
		case nil:
			ech = c.addWatcher(path, watchData)
		case zk.ErrNoNode:
			ech = c.addWatcher(path, watchExist)
		}
		return err
	})
	exists := true
	if err == zk.ErrNoNode {
		exists, err = false, nil
	}
	if err != nil {
		return false, nil, nil, err
	}
	return exists, r.statPtr(), ech, nil
}

// Get returns a znode's data and stat.
func (c *Conn) Get(path string) ([]byte, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	r, err := c.getData(path, false, nil)
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.data, r.statPtr(), err
}

// GetW is Get that also sets a watch for NodeDataChanged or NodeDeleted.
func (c *Conn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, nil, err
	}
	var ech <-chan zk.Event
	r, err := c.getData(path, true, &ech)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.data, r.statPtr(), ech, nil
}

func (c *Conn) getData(path string, watch bool, ech *<-chan zk.Event) (read, error) {
	var r read
	apply := func(st *state) error {
		var err error
		r, err = st.getData(c.srv.viewOf(c), c.session, path, watch)
		c.readOp("getData", path, r.stat, err)
		if err == nil && watch {
			*ech = c.addWatcher(path, watchData)
		}
		return err
	}
	if !watch {
		return r, c.read("getData", path, apply)
	}
	return r, c.exchange("getData", path, headerSize+stringSize(path)+1, apply)
}

// Set writes a znode's data if its version matches (-1 matches any).
func (c *Conn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, err
	}
	var stat zk.Stat
	err := c.exchange("setData", path, headerSize+stringSize(path)+bytesSize(data)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d data=%q", version, data) }
		return c.write(st, "setData", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			ctx.clientChecked = true
			stat, err = st.setData(ctx, path, data, version)
			return "", stat, err
		})
	})
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	return &stat, err
}

// Children returns the names of a znode's children and its stat. The names
// come sorted, or, on a server made WithShuffledChildren, in an order drawn
// from its seed; ZooKeeper promises no order.
func (c *Conn) Children(path string) ([]string, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	r, err := c.getChildren(path, false, nil)
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.children, r.statPtr(), err
}

// ChildrenW is Children that also sets a watch for NodeChildrenChanged or
// NodeDeleted.
func (c *Conn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, nil, err
	}
	var ech <-chan zk.Event
	r, err := c.getChildren(path, true, &ech)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.children, r.statPtr(), ech, nil
}

func (c *Conn) getChildren(path string, watch bool, ech *<-chan zk.Event) (read, error) {
	var r read
	apply := func(st *state) error {
		var err error
		r, err = st.getChildren(c.srv.viewOf(c), c.session, path, watch)
		c.readOp("getChildren", path, r.stat, err)
		if err == nil && watch {
			*ech = c.addWatcher(path, watchChild)
		}
		return err
	}
	if !watch {
		return r, c.read("getChildren", path, apply)
	}
	return r, c.exchange("getChildren", path, headerSize+stringSize(path)+1, apply)
}

// GetACL returns a znode's ACL and stat.
func (c *Conn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	var r read
	err := c.read("getACL", path, func(st *state) error {
		var err error
		r, err = st.getACL(c.srv.viewOf(c), c.session, path)
		c.readOp("getACL", path, r.stat, err)
		return err
	})
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.acl, r.statPtr(), err
}

// SetACL replaces a znode's ACL if its ACL version matches (-1 matches any).
func (c *Conn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, err
	}
	var stat zk.Stat
	err := c.exchange("setACL", path, headerSize+stringSize(path)+aclSize(acl)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d acl=%v", version, acl) }
		return c.write(st, "setACL", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			ctx.clientChecked = true
			stat, err = st.setACL(ctx, path, acl, version)
			return "", stat, err
		})
	})
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	return &stat, err
}

// Sync waits until the server the client reads from has caught up with the
// leader, and returns path.
func (c *Conn) Sync(path string) (string, error) {
	if err := checkClientPath(path, false); err != nil {
		return "", err
	}
	err := c.exchange("sync", path, headerSize+stringSize(path), func(st *state) error {
		c.srv.catchUp(c.srv.memberOf(c), st.zxid)
		c.readOp("sync", path, zk.Stat{}, nil)
		return nil
	})
	if err != nil {
		return "", err
	}
	return path, nil
}

// Multi runs ops — *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest
// and *zk.CheckVersionRequest — all or nothing, as one transaction. Like
// go-zookeeper it checks no path itself: the server refuses a bad one with
// zk.ErrBadArguments.
func (c *Conn) Multi(ops ...interface{}) ([]zk.MultiResponse, error) {
	size := headerSize + 9
	for _, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			size += 9 + createSize(op.Path, op.Data, op.Acl) - headerSize
		case *zk.SetDataRequest:
			size += 9 + stringSize(op.Path) + bytesSize(op.Data) + 4
		case *zk.DeleteRequest, *zk.CheckVersionRequest:
			size += 9 + stringSize(multiPath(op)) + 4
		default:
			return nil, fmt.Errorf("unknown operation type %T", op)
		}
	}
	var mr []zk.MultiResponse
	err := c.exchange("multi", multiPath(firstOf(ops)), size, func(st *state) error {
		return c.write(st, "multi", "", func() string { return describeMulti(ops) }, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			mr, err = st.multi(ctx, ops)
			return "", zk.Stat{}, err
		})
	})
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	if mr == nil {
		// go-zookeeper answers a request that got no reply with an empty,
		// non-nil slice.
		mr = []zk.MultiResponse{}
	}
	if err == nil {
		// The server answers a container create in a multi with a result
		// type (create2) go-zookeeper v1.0.4 cannot decode: the multi is
		// applied, but the client gets zk.ErrAPIError and the results
		// before that op only.
		for i, op := range ops {
			if req, ok := op.(*zk.CreateRequest); ok && req.Flags == zk.FlagContainer {
				return mr[:i], zk.ErrAPIError
			}
		}
	}
	return mr, err
}

// AddAuth adds an identity to the session ("digest" with "user:password").
// Like go-zookeeper, the Conn remembers it and presents it again to every
// new session after an expiry.
func (c *Conn) AddAuth(scheme string, auth []byte) error {
	refused := false
	err := c.exchange("setAuth", "", headerSize+4+stringSize(scheme)+bytesSize(auth), func(st *state) error {
		err := st.addAuth(c.session, scheme, auth)
		c.readOp("setAuth", scheme, zk.Stat{}, err)
		refused = err == zk.ErrAuthFailed
		return err
	})
	if refused {
		// The server closes the connection after refusing an
		// authentication; the client reconnects with its session.
		c.srv.mu.Lock()
		if c.link == linkUp {
			c.bounce()
		}
		c.srv.mu.Unlock()
	}
	if err != nil {
		return err
	}
	c.srv.mu.Lock()
	c.creds = append(c.creds, credential{scheme, cloneBytes(auth)})
	c.srv.mu.Unlock()
	return nil
}

// IncrementalReconfig answers as a ZooKeeper 3.8 server with dynamic
// reconfiguration disabled (its default): zk.ErrReconfigDisabled.
func (c *Conn) IncrementalReconfig(joining, leaving []string, version int64) (*zk.Stat, error) {
	return c.reconfig()
}

// Reconfig answers as a ZooKeeper 3.8 server with dynamic reconfiguration
// disabled (its default): zk.ErrReconfigDisabled.
func (c *Conn) Reconfig(members []string, version int64) (*zk.Stat, error) {
	return c.reconfig()
}

func (c *Conn) reconfig() (*zk.Stat, error) {
	err := c.exchange("reconfig", "", headerSize, func(st *state) error {
		return c.write(st, "reconfig", "", func() string { return "" }, func(writeCtx) (string, zk.Stat, error) {
			return "", zk.Stat{}, zk.ErrReconfigDisabled
		})
	})
	return &zk.Stat{}, err
}

func firstOf(ops []any) any {
	if len(ops) == 0 {
		return nil
	}
	return ops[0]
}

// multiPath is the path an op of a multi names, for the lost-reply rules
// and the log.
func multiPath(op any) string {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return op.Path
	case *zk.SetDataRequest:
		return op.Path
	case *zk.DeleteRequest:
		return op.Path
	case *zk.CheckVersionRequest:
		return op.Path
	}
	return ""
}

// describeMulti renders a multi's ops for the log.
func describeMulti(ops []any) string {
	desc := make([]string, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			desc[i] = fmt.Sprintf("create %s flags=%d", op.Path, op.Flags)
		case *zk.SetDataRequest:
			desc[i] = fmt.Sprintf("setData %s version=%d", op.Path, op.Version)
		case *zk.DeleteRequest:
			desc[i] = fmt.Sprintf("delete %s version=%d", op.Path, op.Version)
		case *zk.CheckVersionRequest:
			desc[i] = fmt.Sprintf("check %s version=%d", op.Path, op.Version)
		}
	}
	return strings.Join(desc, "; ")
}

// statPtr returns a fresh copy of the read's stat for the caller, so that
// the read itself can stay on the stack.
func (r *read) statPtr() *zk.Stat {
	st := r.stat
	return &st
}
