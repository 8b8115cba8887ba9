package fuzz

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
	"pgregory.net/rapid"
)

// actionKind is what one step of a schedule does. The order matters to
// shrinking: rapid shrinks drawn numbers toward zero, so a shrunk schedule
// keeps the faults it needs and turns the rest into plain moves.
type actionKind uint8

const (
	actMove        actionKind = iota // a client makes its next move
	actAdvance                       // time passes
	actLoseRequest                   // a client's next request is lost before the server applies it
	actLoseReply                     // a client's next request is applied, and its reply lost
	actPartition                     // a client is cut off from the server
	actHeal                          // a partition ends
	actPause                         // a client's process freezes (a long GC pause)
	actResume                        // the frozen process thaws
	actExpire                        // the server expires a client's session
	actCrash                         // a client's process crashes and a new one takes its place
	actLag                           // a follower starts lagging: its sessions read stale data
	actCatchUp                       // a lagging follower catches up
	actClose                         // a client's process closes its Conn, calls Unlock and Lock once more, and ends
	actCancel                        // a client's waiting Lock is cancelled
	actDeleteNode                    // someone else deletes a client's node in the lock's directory, or writes to it
	actQuorumLoss                    // a majority of the ensemble's members stop
	actQuorumBack                    // they start again: at once, once the sessions' timeouts have passed, or minutes later
	actLateEvent                     // a client's next watch event reaches its recipe late
	numActionKinds
)

// actionWeights is how often each kind is drawn, out of their sum.
var actionWeights = [numActionKinds]int{
	actMove:        55,
	actAdvance:     15,
	actLoseRequest: 4,
	actLoseReply:   5,
	actPartition:   4,
	actHeal:        6,
	actPause:       3,
	actResume:      3,
	actExpire:      4,
	actCrash:       3,
	actLag:         2,
	actCatchUp:     2,
	actClose:       2,
	actCancel:      3,
	actDeleteNode:  2,
	actQuorumLoss:  2,
	actQuorumBack:  2,
	actLateEvent:   4,
}

// noticeStep is the step in which time passes while a heal or a thaw
// waits for the client to notice its partition or for its session to
// expire.
const noticeStep = 50 * time.Millisecond

// noticeStep is the step for s's session: at most 80 of them in a session
// timeout, so that a session of minutes takes no more steps than one of
// seconds.
func (s *slot) noticeStep() time.Duration { return max(noticeStep, s.timeout/80) }

// advances are the spans of time an actAdvance lets pass: a backoff, a
// reconnect round, less and more than a session timeout, and more than
// recipe.Mutex's retry budget.
var advances = []time.Duration{
	time.Millisecond,
	20 * time.Millisecond,
	150 * time.Millisecond,
	700 * time.Millisecond,
	1500 * time.Millisecond,
	3 * time.Second,
	6 * time.Second,
	20 * time.Second,
}

// When a partition heals, or a frozen process thaws, relative to what the
// client and the server do about it. Partitions heal at once (before or
// after the client noticed, whatever the steps since the cut allowed), once
// the client has noticed (its session then resumes at the next reconnect
// if it is long enough, see longTimeout), or once the server has expired
// the session; a frozen process thaws at once or once its session expired.
// Zero, where shrinking goes, is the plainest: at once.
const (
	healNow = iota
	healNoticed
	healExpired
	// healLate heals just before the session would run out (at nine
	// tenths of its timeout since the cut): over a minute after the cut
	// for a session of minutes, which outlives it.
	healLate
)

// healWhen maps the draw of a heal's when to it. Healing once the client
// noticed is drawn half the time: it is the one way to a session resumed
// after its client dropped the connection (given a long session), where a
// heal at once usually comes before the client notices, and the many
// partitions that outlast their session expire without help.
var healWhen = [...]int{healNow, healNoticed, healNoticed, healExpired, healLate}

// When a lost quorum comes back. Zero, where shrinking goes, is at once.
// quorumBackPastSessions is an election that lasts a step longer than the
// longest session timeout, counted from the loss: a client that has been
// disconnected that long and gives its session up on its own (Curator's
// injected expiration) opens a new one once the quorum is back, while the
// servers, which expire no session without a quorum, keep the old one and
// its ephemeral nodes for a fresh timeout. quorumBackMinutes is an outage
// of five minutes, longer than any session and any recipe's retries.
const (
	quorumBackNow = iota
	quorumBackPastSessions
	quorumBackMinutes
	quorumBackWhens
)

// quorumMinutesOutage is how long a quorumBackMinutes outage lasts.
const quorumMinutesOutage = 5 * time.Minute

// quorumOutage is how long the outage lasts from now, given when it ends.
func (h *harness) quorumOutage(when int) time.Duration {
	switch when {
	case quorumBackPastSessions:
		return max(0, time.Until(h.quorumLost.Add(h.maxTimeout+stepTime)))
	case quorumBackMinutes:
		return quorumMinutesOutage
	}
	return 0
}

const (
	resumeNow = iota
	resumeExpired
	resumeWhens
)

// action is one step of a drawn schedule. What it does depends on the state
// it meets: a client that cannot move lets the next one move, a heal with
// nothing to heal moves a client instead, and so on, so that any schedule
// (and any schedule rapid shrinks it to) is meaningful.
type action struct {
	kind   actionKind
	client int
	span   int // index in advances; for a heal, in healWhen; for a resume, when
	// stopPair, for a lost reply, is which pair of members stops as the
	// reply leaves: 1 + its index in quorumPairs, or none (0 or less).
	stopPair int
}

// GoString renders the action in rapid's account of what it drew.
func (a action) GoString() string {
	c := fmt.Sprintf("client %d", a.client)
	switch a.kind {
	case actMove:
		if w := how(a.span); w != howPlain && w < numHows {
			return c + " moves, " + w.String()
		}
		return c + " moves"
	case actClose:
		return c + " closes its Conn"
	case actCancel:
		return c + " cancels its Lock"
	case actDeleteNode:
		if a.span > 0 {
			return c + "'s node is written to by someone else"
		}
		return c + "'s node is deleted by someone else"
	case actAdvance:
		return "time passes " + advances[a.span].String()
	case actLoseRequest:
		return c + " moves; its request is lost"
	case actLoseReply:
		lost := c + " moves; its reply is lost"
		if a.stopPair > 0 {
			lost += ", and a majority of the ensemble stops with it if it can"
		}
		if a.span > 0 {
			return lost + ", and it reconnects to a lagging follower"
		}
		return lost
	case actPartition:
		return c + " is partitioned"
	case actHeal:
		return c + "'s partition heals" + [...]string{"", " once the client notices", " once its session expires", " just before its session would expire"}[healWhen[a.span%len(healWhen)]]
	case actPause:
		return c + " pauses"
	case actResume:
		return c + " resumes" + [resumeWhens]string{"", " once its session expires"}[a.span%resumeWhens]
	case actExpire:
		if a.span > 0 {
			return c + "'s session expires, and its next session opens on a lagging follower"
		}
		return c + "'s session expires"
	case actQuorumLoss:
		return "a majority of the ensemble stops"
	case actQuorumBack:
		switch a.span % quorumBackWhens {
		case quorumBackPastSessions:
			return "the stopped members start again once every client's session timeout has passed"
		case quorumBackMinutes:
			return "the stopped members start again after " + quorumMinutesOutage.String()
		}
		return "the stopped members start again"
	case actLateEvent:
		return c + "'s next watch event reaches it late"
	case actCrash:
		return c + "'s process crashes and restarts"
	case actLag:
		return fmt.Sprintf("follower %d lags", 1+a.client%2)
	case actCatchUp:
		return fmt.Sprintf("follower %d catches up", 1+a.client%2)
	}
	return fmt.Sprintf("action(%d)", a.kind)
}

// faultOf is the Fault (WithoutFaults) each kind of action draws or ends;
// 0 for the moves and waits every case draws.
var faultOf = [numActionKinds]Fault{
	actLoseRequest: LostRequest,
	actLoseReply:   LostReply,
	actPartition:   Partition,
	actHeal:        Partition,
	actPause:       Pause,
	actResume:      Pause,
	actExpire:      Expiry,
	actCrash:       Crash,
	actLag:         LaggingFollower,
	actCatchUp:     LaggingFollower,
	actClose:       Close,
	actCancel:      Cancel,
	actDeleteNode:  OutsideWrite,
	actQuorumLoss:  QuorumLoss,
	actQuorumBack:  QuorumLoss,
	actLateEvent:   LateEvent,
}

// actionGen draws actions for a case of n clients, of the kinds cfg
// draws.
func actionGen(n int, cfg config) *rapid.Generator[action] {
	weights := actionWeights
	for k, f := range faultOf {
		if f != 0 && !cfg.drawn(f) {
			weights[k] = 0
		}
	}
	total := 0
	for _, w := range weights {
		total += w
	}
	return rapid.Custom(func(t *rapid.T) action {
		roll := rapid.IntRange(0, total-1).Draw(t, "kind")
		kind := actMove
		for k, w := range weights {
			if roll < w {
				kind = actionKind(k)
				break
			}
			roll -= w
		}
		a := action{kind: kind, client: rapid.IntRange(0, n-1).Draw(t, "client")}
		switch kind {
		case actMove:
			a.span = rapid.IntRange(0, int(howDraws)-1).Draw(t, "how")
		case actDeleteNode:
			a.span = rapid.IntRange(0, 1).Draw(t, "write instead")
		case actLoseReply:
			// Whether the client reconnects to a lagging follower of an
			// ensemble (1 or 2; 0 is its own member). go-zookeeper learns
			// zxids only from the replies it reads, so after a lost reply
			// it may land on a follower that has not applied the write
			// yet, and see the write only later.
			if cfg.drawn(LaggingFollower) {
				a.span = rapid.IntRange(0, 2).Draw(t, "reconnect to")
			}
			// Whether a majority of the ensemble stops with the reply,
			// about a third of the time (rapid draws the negative half
			// of the range as often as the rest): the leader commits
			// the write and goes down with its quorum before the reply
			// leaves, and the client learns nothing until the members
			// are back (CURATOR-498's schedule). A lost reply and a
			// quorum lost a step later are not the same: the client
			// reconnects in between, and may learn of its write.
			if cfg.drawn(QuorumLoss) {
				a.stopPair = rapid.IntRange(-len(quorumPairs)+1, len(quorumPairs)).Draw(t, "quorum stops with it")
			}
		case actAdvance:
			a.span = rapid.IntRange(0, len(advances)-1).Draw(t, "span")
		case actHeal:
			a.span = rapid.IntRange(0, len(healWhen)-1).Draw(t, "when")
		case actResume:
			a.span = rapid.IntRange(0, resumeWhens-1).Draw(t, "when")
		case actExpire:
			// Whether the client's next session opens on a lagging
			// follower (1 or 2) or where the client goes anyway (0).
			if cfg.drawn(LaggingFollower) {
				a.span = rapid.IntRange(0, 2).Draw(t, "next session on")
			}
		case actQuorumBack:
			a.span = rapid.IntRange(0, quorumBackWhens-1).Draw(t, "after")
		case actQuorumLoss:
			// Which two members stop: the followers (0), or the leader
			// and follower 1 or 2.
			a.span = rapid.IntRange(0, 2).Draw(t, "members")
		}
		return a
	})
}

// apply runs one action as one step.
func (h *harness) apply(a action) {
	h.tick()
	if h.finding != nil {
		return
	}
	s := h.slots[a.client%len(h.slots)]
	inc := s.inc
	switch a.kind {
	case actMove:
		// One draw says both how a client takes a step at a point and
		// which of its waiting calls to the server goes first: a move is
		// one or the other.
		h.how, h.which = how(a.span), a.span
		h.move(s, nil)
		h.how, h.which = howPlain, 0
	case actClose:
		// A real client closes only while connected: between
		// connections, go-zookeeper's Close races its reconnect loop
		// in selects among ready channels, and which of the process's
		// calls fail how would be the Go scheduler's choice.
		between := h.pipe != nil && inc.conn.State() != zk.StateHasSession
		if inc.partitioned || inc.paused || inc.closed || between {
			h.move(s, nil)
			return
		}
		next := "it goes on to Unlock if it holds, and to one more Lock"
		if !h.sub.isLock() {
			next = "it finishes its call, makes one more, and ends"
		}
		h.begin(fmt.Sprintf("%s's process closes its Conn (session %#x); %s", s.name(), inc.conn.SessionID(), next))
		inc.closeClient()
		inc.closedConn.Store(true)
		inc.conn.Close()
		inc.closed, inc.closedStep = true, h.cur.index
		h.rec.Fault(inc.row, "close", "Conn closed")
		h.settle()
	case actDeleteNode:
		h.touchNode(s, a.span > 0)
	case actCancel:
		// Not the one Lock of a process whose Conn is closed: it must
		// fail by itself.
		o := h.find(s, func(i *incarnation) bool { return i.slot.phase == phaseLocking && !i.closed })
		if o == nil {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("%s cancels its %s", o.name(), o.inCall()))
		o.inc.cancelWaitingLock()
		h.settle()
	case actAdvance:
		h.begin(fmt.Sprintf("time passes %v", advances[a.span]))
		h.advance(advances[a.span])
	case actLoseRequest:
		h.move(s, &zkfake.ReplyLoss{Applied: false})
	case actLoseReply:
		loss := &zkfake.ReplyLoss{Applied: true}
		if a.stopPair > 0 && h.canStopQuorum() {
			pair := quorumPairs[a.stopPair-1]
			loss.StopMembers = pair[:]
		}
		h.reconnectTo = a.span
		h.move(s, loss)
		h.reconnectTo = 0
	case actPartition:
		if inc.partitioned || inc.paused {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("%s is cut off from the server", s.name()))
		inc.conn.Partition()
		inc.partitioned, inc.cutAt = true, time.Now()
		inc.endCut = h.rec.Fault(inc.row, linearizability.FaultPartition, "partitioned")
		h.tally.Partitions++
		h.cuts = append(h.cuts, &cut{inc: inc, session: inc.conn.SessionID()})
		h.settle()
	case actHeal:
		if t := h.find(s, func(i *incarnation) bool { return i.partitioned }); t != nil {
			h.heal(t, healWhen[a.span%len(healWhen)])
			return
		}
		h.move(s, nil)
	case actPause:
		if inc.partitioned || inc.paused {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("%s's process freezes (a long GC pause): it sends nothing, not even pings", s.name()))
		inc.conn.Pause()
		inc.paused = true
		inc.endCut = h.rec.Fault(inc.row, "pause", "process frozen")
		h.tally.Pauses++
		h.cuts = append(h.cuts, &cut{inc: inc, session: inc.conn.SessionID(), pause: true})
		h.settle()
	case actResume:
		if t := h.find(s, func(i *incarnation) bool { return i.paused }); t != nil {
			h.resume(t, a.span%resumeWhens)
			return
		}
		h.move(s, nil)
	case actExpire:
		id := inc.conn.SessionID()
		if id == 0 {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("the server expires %s's session %#x", s.name(), id))
		if a.span > 0 && h.members > 2 {
			h.sendToLaggingFollower(s, a.span)
			h.tally.LaggingNewSessions++
		}
		if h.srv.Expire(id) {
			h.tally.Expiries++
		}
		h.settle()
	case actQuorumLoss:
		if !h.canStopQuorum() {
			h.move(s, nil)
			return
		}
		h.stopMajority(a.span)
	case actQuorumBack:
		if len(h.stopped) == 0 {
			h.move(s, nil)
			return
		}
		h.restartMembers(h.quorumOutage(a.span % quorumBackWhens))
	case actLateEvent:
		// Code on a raw *zk.Conn reads its events from go-zookeeper's own
		// channels, as go-zookeeper hands them over: when it reads them
		// is not the harness's to hold (see "Real clients" in the
		// package doc). Any other code's events pass the gate's hand-over,
		// over real clients too.
		holdable := h.pipe == nil || !h.sub.realOnly
		inc.mu.Lock()
		armed := inc.lateNext
		inc.lateNext = holdable
		inc.mu.Unlock()
		if armed || !holdable {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("%s's next watch event will reach its recipe late: after the reply to the request it makes next, as go-zookeeper's event channels allow", s.name()))
		h.settle()
	case actCrash:
		h.begin(fmt.Sprintf("%s's process crashes and restarts as %s, with a session of its own", s.name(), restartName(s)))
		h.tally.Crashes++
		h.crash(s)
		h.settle()
	case actLag, actCatchUp:
		// Followers are members 1 and 2 of a three-member ensemble; the
		// leader never lags.
		member := 1 + a.client%2
		lag := a.kind == actLag
		if h.members < 3 || h.lagging[member] == lag {
			h.move(s, nil)
			return
		}
		if lag {
			h.begin(fmt.Sprintf("follower %d starts lagging: its sessions read stale data and hear their watches late, until they write or sync", member))
			h.tally.Lags++
		} else {
			h.begin(fmt.Sprintf("follower %d catches up", member))
		}
		h.srv.SetLagging(member, lag)
		h.lagging[member] = lag
		h.settle()
	}
}

// find returns the first slot, starting at s, whose incarnation satisfies
// ok.
func (h *harness) find(s *slot, ok func(*incarnation) bool) *slot {
	for i := range h.slots {
		o := h.slots[(s.id+i)%len(h.slots)]
		if ok(o.inc) {
			return o
		}
	}
	return nil
}

// runnable returns the first slot, starting at s, whose client waits at the
// gate and is not frozen.
func (h *harness) runnable(s *slot) (*slot, *request) {
	return h.runnableWith(s, func(*request) bool { return true })
}

// runnableWith is runnable for the clients whose chosen request ok takes.
func (h *harness) runnableWith(s *slot, ok func(*request) bool) (*slot, *request) {
	for i := range h.slots {
		o := h.slots[(s.id+i)%len(h.slots)]
		if o.inc.paused {
			continue
		}
		if r := o.inc.chooseRequest(h.orderDrawn()); r != nil && ok(r) {
			return o, r
		}
	}
	return nil, nil
}

// orderDrawn is the draw that picks which of a client's waiting calls to
// the server goes first (chooseRequest). Over real clients it is 0, and
// chooseRequest takes the call the server read first whatever the draw:
// there the waiting requests are one session's, which ZooKeeper answers
// in the order they were sent.
func (h *harness) orderDrawn() int {
	if h.pipe != nil {
		return 0
	}
	return h.which
}

// move lets a client make its next move: s if it can, else the next one
// that can; if none can, time passes instead. With loss set, the move's
// request (if it is a call to the server) is lost before or after it
// applies.
func (h *harness) move(s *slot, loss *zkfake.ReplyLoss) {
	if h.releaseIdleLate() {
		return
	}
	o, r := h.runnable(s)
	if o == nil {
		h.begin("no client can move; time passes 100ms")
		h.advance(100 * time.Millisecond)
		return
	}
	if loss == nil || r.point != noPoint {
		h.begin(fmt.Sprintf("%s moves", o.name()))
		h.grant(o, r)
		return
	}
	where := "before the server applies it"
	if loss.Applied {
		where = "after the server applies it"
	}
	h.begin(fmt.Sprintf("%s moves, and the exchange is lost %s", o.name(), where))
	rule := *loss
	rule.SessionID, rule.Nth = o.inc.conn.SessionID(), 1
	remove := h.srv.LoseReplies(rule)
	h.rec.Fault(o.inc.row, linearizability.FaultLostReply, where)
	if m := h.reconnectTo; m > 0 && h.members > 2 && loss.Applied {
		// There the write the client never heard of shows up late.
		h.sendToLaggingFollower(o, m)
	}
	if loss.Applied {
		h.tally.LostReplies++
	} else {
		h.tally.LostRequests++
	}
	h.losing = true
	h.grant(o, r)
	h.losing = false
	remove()
	if stop := loss.StopMembers; len(stop) > 0 && !h.srv.MemberUp(stop[0]) {
		h.note("members %d and %d of the ensemble stop as the reply leaves: it has no quorum until they are back", stop[0], stop[1])
		h.quorumStopped(stop)
		h.tally.QuorumLossesWithReply++
	}
}

// advance lets time pass; timers fire and the clients they wake run, but no
// client passes the gate. Replies that come meanwhile reach their clients
// at the instant they come (see sleepHandingOver).
func (h *harness) advance(d time.Duration) {
	h.cur.span += d
	h.sleepHandingOver(d)
	h.settle()
}
