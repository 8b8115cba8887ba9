package zkfake

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A Conn is written in four files, one idea each. This one is the
// connection: the link to the server as a state machine (up, cut by a
// partition, down and redialling in rounds, crashed, closed), the session
// events it reports, the requests that wait for it, and the watch channels
// the client hands out. client.go is what go-zookeeper does on its own side
// of the wire, which the server never sees; api.go is the method set of
// *zk.Conn, built from the two over the pure core (state.go); extras.go is
// ZooKeeper 3.8's requests go-zookeeper cannot send, built the same way,
// with the persistent watches' channels. What the
// connection decides without a lock, a timer or a channel is a plain
// function, tested on plain data: requestFate here, kindsFiredBy and
// view.setWatches in watch.go.

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
	answered  func() // WithAnswerCallback
	noRenew   bool   // WithoutRenewal

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
	// spareWatchers are emptied lists of watchers, kept for reuse.
	spareWatchers [][]chan zk.Event
	persistent    map[watchKey][]*eventQueue // AddWatch's channels (extras.go)
	changed       chan struct{}              // closed and replaced whenever link changes, or a waiting request's turn comes
	tickets       int                        // tickets given to requests that had to wait for the link (see awaitLink)
	turn          int                        // the ticket whose request goes next
	round         chan struct{}              // closed and replaced at each failed reconnect round
	notice        timer                      // when a partitioned client notices
	dial          timer                      // the next reconnect attempt
	creds         []credential
	held          []heldEvent // watch events sent while the link was cut
	connGen       int         // counts dropped connections
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

// WithAnswerCallback calls f each time the server answers one of the
// session's requests: once the request has taken effect, and before any
// watch event a later change raises for the session. (Close and
// AddSASLIdentity, which answer nothing the session waits on, do not.) f
// runs while the server is locked: it must not call the Conn or the
// Server. It is for a server that relays the session to a client of its
// own (package wire): ZooKeeper sends a session's reply ahead of the
// events of every change made after the request, so that a client never
// hears of a watch's event before the reply that set it, and the relay
// queues those events until the reply is on its way.
func WithAnswerCallback(f func()) ConnOption { return func(c *Conn) { c.answered = f } }

// WithoutRenewal makes a Conn that, once it learns that its session has
// expired, does not start a new one as go-zookeeper does: it stays
// without a session until it is closed. It is for a server that serves
// the session to a client of its own (package wire), whose client starts
// its new session itself, so that the server's log holds no session that
// nobody uses.
func WithoutRenewal() ConnOption { return func(c *Conn) { c.noRenew = true } }

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
// then to every watch channel on its path of a kind it fires
// (kindsFiredBy). Called with srv.mu held.
func (c *Conn) receive(ev zk.Event) {
	c.sendEvent(ev)
	kinds := kindsFiredBy(ev.Type)
	for _, k := range kinds {
		c.fireWatchers(watchKey{ev.Path, k}, ev)
	}
	if kinds != nil {
		c.receivePersistent(ev)
	}
}

// addWatcher hands out a new one-shot watch channel. Called with srv.mu held.
func (c *Conn) addWatcher(path string, kind watchType) <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	key := watchKey{path, kind}
	list, ok := c.watchers[key]
	if !ok && len(c.spareWatchers) > 0 {
		// A path watched once is usually watched again, and a lock's
		// contenders watch a new node every time: reusing the list of
		// one that fired spares an allocation per watch.
		last := len(c.spareWatchers) - 1
		list, c.spareWatchers = c.spareWatchers[last], c.spareWatchers[:last]
	}
	c.watchers[key] = append(list, ch)
	return ch
}

// maxSpareWatchers bounds how many emptied watch lists a Conn keeps for
// reuse.
const maxSpareWatchers = 16

// fireWatchers sends ev to every one-shot watch channel of key, closes
// them, and forgets them, keeping their list for addWatcher to reuse.
// Called with srv.mu held.
func (c *Conn) fireWatchers(key watchKey, ev zk.Event) {
	list, ok := c.watchers[key]
	if !ok {
		return
	}
	for _, ch := range list {
		ch <- ev
		close(ch)
	}
	delete(c.watchers, key)
	if len(c.spareWatchers) < maxSpareWatchers {
		clear(list)
		c.spareWatchers = append(c.spareWatchers, list[:0])
	}
}

// invalidateWatches ends every watch with EventNotWatching and err, as
// go-zookeeper does on expiry and on close; persistent watches (AddWatch)
// end the same way, after the one-shot ones on their path. Called with
// srv.mu held.
func (c *Conn) invalidateWatches(err error) {
	keys := make([]watchKey, 0, len(c.watchers)+len(c.persistent))
	for k := range c.watchers {
		keys = append(keys, k)
	}
	for k := range c.persistent {
		keys = append(keys, k)
	}
	sortWatchKeys(keys)
	for _, k := range keys {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.path, Err: err}
		c.sendEvent(ev)
		for _, ch := range c.watchers[k] {
			ch <- ev
			close(ch)
		}
		for _, q := range c.persistent[k] {
			q.end(ev)
		}
	}
	c.watchers = map[watchKey][]chan zk.Event{}
	c.persistent = map[watchKey][]*eventQueue{}
}

// sortWatchKeys orders watch keys by path (blind to GUIDs, see order.go),
// then kind, so that what is done to each comes in an order that does not
// vary from run to run.
func sortWatchKeys(keys []watchKey) {
	sort.Slice(keys, func(i, j int) bool {
		if c := byPathBlindToGUIDs(keys[i].path, keys[j].path); c != 0 {
			return c < 0
		}
		return keys[i].kind < keys[j].kind
	})
}

// wake tells blocked calls that the link changed. Called with srv.mu held.
func (c *Conn) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// requestFate is the rule for a request waiting on the link, applied each
// time it looks: link and connGen are the link's state and connection now,
// wire the connection the request went out on, or -1 while it has gone out
// on none. A request made while the link is cut is on the wire: it gets
// through if the partition heals before the client gives up on the
// connection, and if that connection is dropped meanwhile it goes with it,
// even if a new connection is up by the time it looks. A request made while
// the client reconnects is queued for the next connection. requestFate
// returns the request's wire and, once the request is lost — that way, or
// because the client closed or crashed — zk.ErrConnectionClosed.
func requestFate(link linkState, wire, connGen int) (int, error) {
	switch link {
	case linkCrashed, linkClosed:
		return wire, zk.ErrConnectionClosed
	case linkCut:
		if wire < 0 {
			return connGen, nil
		}
		if connGen != wire {
			return wire, zk.ErrConnectionClosed
		}
	case linkDown:
		if wire >= 0 {
			return wire, zk.ErrConnectionClosed
		}
	case linkUp:
		if wire >= 0 && connGen != wire {
			return wire, zk.ErrConnectionClosed
		}
	}
	return wire, nil
}

// awaitLink returns once the link is up, or with the error the request
// fails with, releasing srv.mu while it waits. Whether a request on the
// wire or in the queue is lost is requestFate's to say; a queued request
// also fails, with zk.ErrNoServer, when a round of dials fails. Requests
// that waited go on in the order they were made — as go-zookeeper's send
// queue and the connection keep them — each with its ticket, not in the
// order the Go scheduler wakes their goroutines; a request made while some
// still wait takes a ticket too. Called with srv.mu held.
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
			wire, fail = requestFate(c.link, wire, c.connGen)
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
			c.answer()
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
	loss, rule := s.losses.match(s, c, op, path)
	if loss == lossBeforeApply {
		s.log.add(Record{Kind: RecordFault, Session: c.session, Op: op, Path: path, Result: "request lost"})
		c.lose(rule)
		return zk.ErrConnectionClosed
	}
	err := apply(s.st)
	if loss == lossAfterApply {
		// go-zookeeper learns zxids only from the replies it reads, so a
		// lost reply leaves its last-seen zxid where it was: on reconnect
		// a member that has not applied this write yet may take it.
		s.log.add(Record{Kind: RecordFault, Session: c.session, Op: op, Path: path, Result: "reply lost"})
		c.lose(rule)
		return zk.ErrConnectionClosed
	}
	// The reply carries the zxid of the member that answered.
	c.lastZxid.Store(s.memberOf(c).applied)
	c.answer()
	return err
}

// answer tells WithAnswerCallback's f that the server answers a request.
// Called with srv.mu held, for reading at least.
func (c *Conn) answer() {
	if c.answered != nil {
		c.answered()
	}
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
	if c.session == 0 {
		// A Conn that never had a session (Connect found no member to
		// serve it) opens its first.
		s.openSession(c)
		return
	}
	s.log.add(Record{Kind: RecordSession, Session: c.session, Zxid: s.st.zxid, Op: "expired"})
	c.sessionID.Store(0)
	c.sendEvent(sessionEvent(zk.StateExpired, s.cfg.addr))
	c.invalidateWatches(zk.ErrSessionExpired)
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.sendEvent(sessionEvent(zk.StateConnecting, s.cfg.addr))
	c.sendEvent(sessionEvent(zk.StateConnected, s.cfg.addr))
	if c.noRenew {
		return
	}
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
	c.dial = c.srv.clock.AfterFunc(c.roundTime(), func() {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		c.dial = nil
		c.reconnect()
	})
}

// roundTime is how long the Conn waits between rounds of dialling:
// go-zookeeper's second, and as many microseconds as Conns were made before
// it. Clients cut off together (a member stopped, a quorum lost) would
// otherwise dial again at the same instants, and send what they queued
// meanwhile in whatever order the Go scheduler runs them: over a real
// network something always tells them apart, and here the Conn's ordinal
// does, so that a run repeats. And a nanosecond: code that sleeps whole
// seconds from the end of a round (Curator's retry, after a call failed
// there) would often wake at the very instant another Conn's round dials,
// and which of the two ran first would be the Go scheduler's choice. The
// nanosecond puts the rounds between the instants such sleeps end on,
// unless two Conns' rounds have drifted onto the same one.
func (c *Conn) roundTime() time.Duration {
	return reconnectRound + time.Duration(c.readKey)*time.Microsecond + time.Nanosecond
}

// setWatches re-arms the client's watches on the server after a reconnect,
// firing at once those whose node changed since the last zxid the client
// saw, as the server's answer to its SetWatches request decides
// (view.setWatches). Called with srv.mu held.
func (c *Conn) setWatches() {
	s := c.srv
	keys := make([]watchKey, 0, len(c.watchers)+len(c.persistent))
	for k := range c.watchers {
		keys = append(keys, k)
	}
	for k := range c.persistent {
		keys = append(keys, k)
	}
	s.deliver(s.viewOf(c).setWatches(c.session, c.lastZxid.Load(), keys), s.st.zxid)
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
	delete(s.clients, c)
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
