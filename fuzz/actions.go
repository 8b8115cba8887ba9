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
	numActionKinds
)

// actionWeights is how often each kind is drawn, out of their sum.
var actionWeights = [numActionKinds]int{
	actMove:        55,
	actAdvance:     15,
	actLoseRequest: 4,
	actLoseReply:   5,
	actPartition:   4,
	actHeal:        4,
	actPause:       3,
	actResume:      3,
	actExpire:      4,
	actCrash:       3,
	actLag:         2,
	actCatchUp:     2,
}

// noticeStep is the step in which time passes while a heal or a thaw
// waits for the client to notice its partition or for its session to
// expire.
const noticeStep = 50 * time.Millisecond

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

// action is one step of a drawn schedule. What it does depends on the state
// it meets: a client that cannot move lets the next one move, a heal with
// nothing to heal moves a client instead, and so on, so that any schedule
// (and any schedule rapid shrinks it to) is meaningful.
type action struct {
	kind   actionKind
	client int
	span   int // index in advances
}

// GoString renders the action in rapid's account of what it drew.
func (a action) GoString() string {
	c := fmt.Sprintf("client %d", a.client+1)
	switch a.kind {
	case actMove:
		return c + " moves"
	case actAdvance:
		return "time passes " + advances[a.span].String()
	case actLoseRequest:
		return c + " moves; its request is lost"
	case actLoseReply:
		return c + " moves; its reply is lost"
	case actPartition:
		return c + " is partitioned"
	case actHeal:
		return c + "'s partition heals"
	case actPause:
		return c + " pauses"
	case actResume:
		return c + " resumes"
	case actExpire:
		return c + "'s session expires"
	case actCrash:
		return c + " crashes"
	case actLag:
		return fmt.Sprintf("follower %d lags", 1+a.client%2)
	case actCatchUp:
		return fmt.Sprintf("follower %d catches up", 1+a.client%2)
	}
	return fmt.Sprintf("action(%d)", a.kind)
}

// actionGen draws actions for a case of n clients.
func actionGen(n int) *rapid.Generator[action] {
	total := 0
	for _, w := range actionWeights {
		total += w
	}
	return rapid.Custom(func(t *rapid.T) action {
		roll := rapid.IntRange(0, total-1).Draw(t, "kind")
		kind := actMove
		for k, w := range actionWeights {
			if roll < w {
				kind = actionKind(k)
				break
			}
			roll -= w
		}
		a := action{kind: kind, client: rapid.IntRange(0, n-1).Draw(t, "client")}
		if kind == actAdvance {
			a.span = rapid.IntRange(0, len(advances)-1).Draw(t, "span")
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
		h.move(s, nil)
	case actAdvance:
		h.begin(fmt.Sprintf("time passes %v", advances[a.span]))
		h.advance(advances[a.span])
	case actLoseRequest:
		h.move(s, &zkfake.ReplyLoss{Applied: false})
	case actLoseReply:
		h.move(s, &zkfake.ReplyLoss{Applied: true})
	case actPartition:
		if inc.partitioned || inc.paused {
			h.move(s, nil)
			return
		}
		h.begin(fmt.Sprintf("%s is cut off from the server", s.name()))
		inc.conn.Partition()
		inc.partitioned = true
		inc.partitionFault = h.fault(inc, linearizability.FaultPartition, "partitioned")
		h.settle()
	case actHeal:
		if t := h.find(s, func(i *incarnation) bool { return i.partitioned }); t != nil {
			h.heal(t)
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
		inc.partitionFault = h.fault(inc, "pause", "process frozen")
		h.settle()
	case actResume:
		if t := h.find(s, func(i *incarnation) bool { return i.paused }); t != nil {
			h.resume(t)
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
		h.srv.Expire(id)
		h.settle()
	case actCrash:
		h.begin(fmt.Sprintf("%s's process crashes; a new process takes its place with a session of its own", s.name()))
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
	for i := range h.slots {
		o := h.slots[(s.id+i)%len(h.slots)]
		if o.inc.paused {
			continue
		}
		if r := o.inc.nextRequest(); r != nil {
			return o, r
		}
	}
	return nil, nil
}

// move lets a client make its next move: s if it can, else the next one
// that can; if none can, time passes instead. With loss set, the move's
// request (if it is a call to the server) is lost before or after it
// applies.
func (h *harness) move(s *slot, loss *zkfake.ReplyLoss) {
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
	h.fault(o.inc, linearizability.FaultLostReply, where)
	h.grant(o, r)
	remove()
}

// advance lets time pass; timers fire and the clients they wake run, but no
// client passes the gate.
func (h *harness) advance(d time.Duration) {
	h.cur.span += d
	time.Sleep(d)
	h.settle()
}

func (h *harness) heal(s *slot) {
	inc := s.inc
	h.begin(fmt.Sprintf("%s's partition heals", s.name()))
	// The fake server drops for good the watch events it fires while a
	// client is cut off, and a partition that heals before the client
	// notices it does not replay them (a real connection would deliver
	// them late). Until it does, a partition lasts until the client
	// notices it; on reconnecting, the client re-arms its watches and
	// hears what it missed.
	for waited := time.Duration(0); inc.conn.State() == zk.StateHasSession && waited < s.timeout; waited += noticeStep {
		h.advance(noticeStep)
	}
	inc.conn.Heal()
	inc.partitioned = false
	h.endFault(inc)
	h.settle()
}

func (h *harness) resume(s *slot) {
	inc := s.inc
	h.begin(fmt.Sprintf("%s's process thaws, its session timeout past", s.name()))
	// A pause lasts past the session timeout: the fake server drops the
	// watch events it fires while a client is frozen, and a client thawed
	// with its session alive would never hear them (a real connection
	// would deliver them late). Once the session has expired, the thawed
	// client learns it and starts afresh, as it would for real.
	id := inc.conn.SessionID()
	for waited := time.Duration(0); h.liveSessions()[id] && waited < 2*s.timeout; waited += noticeStep {
		h.advance(noticeStep)
	}
	inc.conn.Resume()
	inc.paused = false
	h.endFault(inc)
	h.settle()
}

// crash kills s's process and starts a new one in its place. What the dead
// process was doing has an unknown outcome.
func (h *harness) crash(s *slot) {
	inc := s.inc
	session := inc.conn.SessionID()
	// The connection goes first: once the incarnation is dead its calls
	// pass the gate, and none of them may reach the server.
	inc.conn.Crash()
	inc.kill()
	inc.cancel()
	h.endFault(inc)
	h.fault(inc, linearizability.FaultCrash, "process crashed")
	switch s.phase {
	case phaseLocking:
		h.record(inc, s.acquireCall, 0, linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: session}, nil)
	case phaseUnlocking:
		h.record(inc, s.releaseCall, 0, linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: s.holdSession}, nil)
	}
	h.spawn(s)
}

// fault records the start of a fault for porcupine's report and returns its
// index.
func (h *harness) fault(inc *incarnation, kind linearizability.FaultKind, detail string) int {
	at := h.stamp()
	h.faults = append(h.faults, linearizability.Fault{Kind: kind, ClientID: inc.porcID, Detail: detail, Start: at, End: at})
	return len(h.faults) - 1
}

// endFault ends inc's open partition or pause.
func (h *harness) endFault(inc *incarnation) {
	if inc.partitionFault >= 0 {
		h.faults[inc.partitionFault].End = h.stamp()
		inc.partitionFault = -1
	}
}
