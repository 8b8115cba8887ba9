package zkfake

import (
	"strings"

	"github.com/go-zookeeper/zk"
)

// Partition cuts the client off from the server, both ways. Nothing is
// visible at first — requests sent now wait for their replies — until the
// client's read deadline passes (two thirds of the session timeout, as in
// go-zookeeper): then it reports StateDisconnected, the waiting requests fail
// with zk.ErrConnectionClosed, and it tries to reconnect every second,
// failing the requests queued meanwhile with zk.ErrNoServer. The server
// hears nothing from the session either and expires it once the session
// timeout has passed since the partition began.
func (c *Conn) Partition() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.partitioned || c.paused || (c.link != linkUp && c.link != linkDown) {
		return
	}
	c.partitioned = true
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "partition"})
	if c.link != linkUp {
		return
	}
	c.link = linkCut
	if s.conns[c.session] == c {
		s.armExpiry(c.session, c.timeout)
	}
	c.notice = s.clock.AfterFunc(c.timeout*2/3, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.notice = nil
		if c.link == linkCut {
			c.bounce()
		}
	})
}

// Heal ends a partition. If the client had not noticed it yet, the
// connection simply carries on and the requests it held get their replies.
// Otherwise the client gets through at its next reconnect attempt (within a
// second): its session resumes if the server has not expired it meanwhile,
// and if it has, the client sees StateExpired and starts a new session.
func (c *Conn) Heal() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.partitioned {
		return
	}
	c.partitioned = false
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "heal"})
	if c.link != linkCut {
		return
	}
	if c.notice != nil {
		c.notice.Stop()
		c.notice = nil
	}
	c.restoreLink()
}

// restoreLink brings a cut link back before the client noticed the cut:
// the connection carries on, with the events sent meanwhile, unless the
// server expired the session in between, which the client learns at once,
// or its member stopped meanwhile, or the ensemble lost its quorum: that
// connection is gone, and the client dials again. Called with srv.mu held.
func (c *Conn) restoreLink() {
	s := c.srv
	if s.conns[c.session] != c || !s.quorum() || s.members[c.member].down {
		c.bounce()
		return
	}
	s.disarmExpiry(c.session)
	c.link = linkUp
	c.release()
	c.wake()
}

// Crash makes the client stop as a crashed process does: it never talks to
// the server again, and the server expires its session once the timeout
// has passed. So that the crashed client's goroutines can end, its blocked
// and future calls return zk.ErrConnectionClosed, its watch channels get
// EventNotWatching, and its event channel is closed.
func (c *Conn) Crash() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "crash"})
	c.crash()
}

// AbandonSession makes the client give up its session on its own, as
// Curator does once its connection has been down for longer than the
// session timeout by its own clock (ConnectionState's reset, and
// ConnectionStateManager's injected session expiration): it closes its
// ZooKeeper handle, whose close cannot reach the server, and opens a new
// one. The client reports StateExpired, ends its watches with
// zk.ErrSessionExpired and opens a new session as soon as it reaches a
// member, while the server, told nothing, keeps the old session, its
// ephemeral nodes and their owner, until it expires it: for a full timeout
// after the client was last heard, or after a lost quorum came back. That
// window is where another session of the same process sees the old
// session's nodes, which are about to go. It reports whether the Conn had
// a session to give up (not a paused, crashed or closed one).
func (c *Conn) AbandonSession() bool {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.session == 0 || c.paused || c.link == linkCrashed || c.link == linkClosed {
		return false
	}
	if c.link == linkUp || c.link == linkCut {
		// The handle's connection goes with it (a cut the client had not
		// noticed yet, too).
		c.stopTimers()
		c.dropLink()
	}
	old := c.session
	if s.conns[old] == c {
		// The server keeps the session, with no connection to tell.
		s.armExpiry(old, c.timeout)
		delete(s.conns, old)
	}
	s.log.add(Record{Kind: RecordSession, Session: old, Zxid: s.st.zxid, Op: "abandonSession"})
	c.session = 0
	c.sessionID.Store(0)
	c.sendEvent(sessionEvent(zk.StateExpired, s.cfg.addr))
	c.invalidateWatches(zk.ErrSessionExpired)
	if !c.noRenew {
		c.reconnect()
	}
	c.wake()
	return true
}

// ReplyLoss chooses requests to lose. A lost request or reply looks the
// same to the client: the call fails with zk.ErrConnectionClosed, and the
// connection drops and comes back at once with the session intact.
type ReplyLoss struct {
	// Op is the request kind: "create", "createContainer", "createTTL",
	// "delete", "setData", "setACL", "multi", "exists", "getData",
	// "getChildren", "getACL", "sync". Empty matches every kind.
	Op string
	// PathPrefix, if set, matches requests whose path starts with it.
	PathPrefix string
	// SessionID, if set, matches requests of that session only.
	SessionID int64
	// Nth, if set, loses only the nth matching request (counting from 1);
	// zero loses every matching request.
	Nth int
	// Applied chooses where the loss happens: true applies the request and
	// loses its reply (a create then leaves a "ghost" node the client does
	// not know it made); false loses the request before it reaches the
	// server.
	Applied bool
	// StopMembers stops these ensemble members (together, as
	// Server.StopMembers) with the loss: with Applied, once the request
	// is applied and before its reply leaves (the leader commits the
	// write and the members go down with the reply); without, before the
	// request reaches them. With a majority among them the ensemble
	// loses its quorum at that instant, and the client's connection stays
	// down until they start again; the client never learns whether its
	// write happened.
	StopMembers []int
}

type lossPoint uint8

const (
	lossNone lossPoint = iota
	lossBeforeApply
	lossAfterApply
)

type lossRule struct {
	ReplyLoss
	seen    int
	removed bool
}

type lossRules struct {
	rules []*lossRule
	rate  float64
}

// LoseReplies adds a rule that loses requests or replies. It returns a
// function that removes the rule.
func (s *Server) LoseReplies(rule ReplyLoss) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &lossRule{ReplyLoss: rule}
	s.lossy.Store(true)
	s.losses.rules = append(s.losses.rules, r)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		r.removed = true
	}
}

// lose takes the connection down with a lost request or reply, and the
// members rule names (ReplyLoss.StopMembers) with it. Called with srv.mu
// held.
func (c *Conn) lose(rule *lossRule) {
	if rule != nil {
		c.srv.stopMembers(rule.StopMembers)
	}
	if c.link == linkUp {
		c.bounce()
	}
}

// LoseRandomReplies loses each request with probability rate (0 turns it
// off), half of them before and half after they apply, drawing from the
// server's seeded generator so a run replays exactly.
func (s *Server) LoseRandomReplies(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.losses.rate = rate
	if rate > 0 {
		s.lossy.Store(true)
	}
}

// match decides the fate of one request, and returns the rule that
// decided it, if one did. Called with s.mu held.
func (l *lossRules) match(s *Server, c *Conn, op, path string) (lossPoint, *lossRule) {
	if len(l.rules) == 0 && l.rate == 0 {
		return lossNone, nil
	}
	for _, r := range l.rules {
		if r.removed || (r.Op != "" && r.Op != op) || !strings.HasPrefix(path, r.PathPrefix) ||
			(r.SessionID != 0 && r.SessionID != c.session) {
			continue
		}
		r.seen++
		if r.Nth == 0 || r.seen == r.Nth {
			if r.Applied {
				return lossAfterApply, r
			}
			return lossBeforeApply, r
		}
	}
	if l.rate > 0 && s.rng.Float64() < l.rate {
		if s.rng.IntN(2) == 0 {
			return lossBeforeApply, nil
		}
		return lossAfterApply, nil
	}
	return lossNone, nil
}

// Pause freezes the client as a stopped process (a long garbage-collection
// pause, SIGSTOP) is frozen: it sends nothing, not even pings, and its own
// timers do not run, so unlike a partition it never notices anything while
// paused. The server expires the session once the timeout passes. Calls
// made while paused wait for Resume.
func (c *Conn) Pause() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.link != linkUp {
		return
	}
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "pause"})
	c.paused = true
	c.link = linkCut
	if s.conns[c.session] == c {
		s.armExpiry(c.session, c.timeout)
	}
}

// Resume thaws a paused client. If the server expired its session
// meanwhile, the client finds out at once — StateDisconnected, StateExpired,
// its watches ended with zk.ErrSessionExpired — and carries on with a new
// session; otherwise it carries on as if nothing happened.
func (c *Conn) Resume() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.paused {
		return
	}
	c.paused = false
	s.log.add(Record{Kind: RecordFault, Session: c.session, Op: "resume"})
	if c.link != linkCut {
		return
	}
	c.restoreLink()
}
