package fuzz

import (
	"fmt"
	"strings"
	"time"
)

// This file winds a case down and runs the liveness detector on the way:
// with every fault healed, every client must finish its round and stop.

// windDown heals every fault, lets the sessions no client holds expire
// (outlastOrphans), tells the clients to stop after their current round,
// and lets them finish, round robin. If nothing moves for
// its stallLimit — no Lock or Unlock returns — the case is stuck: liveness.
func (h *harness) windDown() {
	h.closeAdmin()
	for _, s := range h.slots {
		h.tick()
		switch {
		case s.inc.partitioned:
			h.heal(s, healNow)
		case s.inc.paused:
			h.resume(s, resumeNow)
		}
	}
	if len(h.stopped) > 0 {
		h.tick()
		h.restartMembers(0)
	}
	for _, s := range h.slots {
		s.inc.mu.Lock()
		s.inc.lateNext = false
		s.inc.mu.Unlock()
	}
	for member := 1; member < h.members; member++ {
		if h.lagging[member] {
			h.tick()
			h.begin(fmt.Sprintf("follower %d catches up", member))
			h.srv.SetLagging(member, false)
			h.lagging[member] = false
			h.settle()
		}
	}
	h.outlastOrphans()
	h.tick()
	round := "finishes its round, unlocks and stops"
	if !h.sub.isLock() {
		round = "finishes its call, calls Stop if the recipe has one, and stops"
	}
	h.begin("wind-down: every fault is healed; each client " + round)
	h.stopping = true
	lastProgress, moves := h.now(), 0
	wait := 100 * time.Millisecond
	next := 0
	// failedUnlocks counts each client's Unlock calls that failed in a
	// row; they are not progress, but neither do they let time pass, and
	// the client loop gives up on them only after unlockAttempts.
	failedUnlocks := map[*slot]int{}
	for h.finding == nil {
		h.tick()
		if h.allExited() {
			return
		}
		if stalled := h.now() - lastProgress; stalled >= h.stallLimit() || moves >= stallMoves {
			what := "took or released the lock"
			if !h.sub.isLock() {
				what = "finished a call"
			}
			h.begin(fmt.Sprintf("the clients have made %d moves in %v and none of them %s", moves, stalled.Round(time.Millisecond), what))
			h.stuck(stalled, moves)
			return
		}
		s, r := h.runnable(h.slots[next%len(h.slots)])
		if s != nil && r.point == pointUnlocked {
			if r.err == nil || releaseSettled(r.err) {
				delete(failedUnlocks, s)
			} else if failedUnlocks[s]++; failedUnlocks[s] >= windDownUnlockFailures {
				h.begin(fmt.Sprintf("%s's Unlock has failed %d times in a row", s.name(), failedUnlocks[s]))
				h.found(Liveness, "%s's Unlock did not release: with every fault healed it failed %d times in a row, the last with: %v",
					s.name(), failedUnlocks[s], r.err)
				return
			}
		}
		if s != nil {
			next = s.id + 1
			wait = 100 * time.Millisecond
			h.begin(fmt.Sprintf("%s moves", s.name()))
			moves++
			// Progress is a Lock or an Unlock that returned for good, or a
			// client that stops; an Unlock that fails and is retried is
			// not.
			if r.point == pointLock || r.point == pointOp || r.point == pointOpReturned ||
				(r.point == pointLocked || r.point == pointUnlocked) && (r.err == nil || releaseSettled(r.err)) {
				lastProgress, moves = h.now(), 0
			}
			h.grant(s, r)
			h.checkRecipe()
			continue
		}
		if h.releaseIdleLate() {
			continue
		}
		if h.now()-lastProgress >= jointWait && h.cancelJoint() {
			lastProgress, moves = h.now(), 0
			continue
		}
		h.begin(fmt.Sprintf("no client can move; time passes %v", wait))
		h.cur.quiet = true
		h.advance(wait)
		wait = min(2*wait, 5*time.Second)
	}
}

// cancelJoint cancels the joint calls (Op.Joint) of the wind-down when
// every client still in a call is in one: the clients they wait for have
// stopped. It cancels each call once, and reports whether it cancelled
// any: a call that does not return once cancelled is stuck, and the stall
// limit finds it.
func (h *harness) cancelJoint() bool {
	var joint []*slot
	for _, s := range h.slots {
		if s.inc.exited || s.call == "" {
			continue
		}
		if !s.joint {
			return false
		}
		joint = append(joint, s)
	}
	cancelled := false
	for _, s := range joint {
		if s.jointCancelled {
			continue // cancelled once already: it must return by itself
		}
		s.jointCancelled = true
		if s.inc.cancelWaitingLock() {
			if !cancelled {
				h.tick()
				h.begin("every client still in a call waits for the others, which have stopped: the harness cancels those calls")
			}
			cancelled = true
			h.note("%s's %s is cancelled", s.name(), s.call)
		}
	}
	if cancelled {
		h.settle()
	}
	return cancelled
}

func (h *harness) allExited() bool {
	for _, s := range h.slots {
		if !s.inc.exited {
			return false
		}
	}
	return true
}

// stuck reports the liveness finding: who waits, and what the server holds
// that could (or could not) wake them.
func (h *harness) stuck(stalled time.Duration, moves int) {
	if !h.sub.isLock() {
		h.stuckOps(stalled, moves)
		return
	}
	var waiting []string
	for _, s := range h.slots {
		switch s.phase {
		case phaseLocking:
			waiting = append(waiting, fmt.Sprintf("%s's Lock has not returned since step %d", s.name(), h.instantStep(s.acquireCall)))
		case phaseUnlocking:
			waiting = append(waiting, fmt.Sprintf("%s's Unlock has not returned since step %d", s.name(), h.instantStep(s.releaseCall)))
		}
	}
	who := "no client is in Lock or Unlock"
	if len(waiting) > 0 {
		who = strings.Join(waiting, ", ")
	}
	children := h.children()
	lock := "the lock is free: " + lockPath + " has no contender"
	if len(children) > 0 {
		lock = lockPath + " holds " + describeNodes(children)
	}
	h.found(Liveness, "%s: with every fault healed, no Lock or Unlock returned in %v and %d moves; %s; watches on the server: %s",
		who, stalled.Round(time.Millisecond), moves, lock, h.watchedPaths())
}

// stuckOps is stuck for a Recipe.
func (h *harness) stuckOps(stalled time.Duration, moves int) {
	var waiting []string
	for _, s := range h.slots {
		if s.call != "" {
			waiting = append(waiting, fmt.Sprintf("%s's %s has not returned since step %d", s.name(), s.call, h.instantStep(s.acquireCall)))
		}
	}
	who := "no client is in a call"
	if len(waiting) > 0 {
		who = strings.Join(waiting, ", ")
	}
	nodes := h.dir + " holds nothing"
	if children := h.children(); len(children) > 0 {
		nodes = h.dir + " holds " + describeNodes(children)
	}
	h.found(Liveness, "%s: with every fault healed, no call returned in %v and %d moves; %s; watches on the server: %s",
		who, stalled.Round(time.Millisecond), moves, nodes, h.watchedPaths())
}

// background lets d of time pass once every client has stopped, granting
// the requests a locker's own goroutines still make meanwhile — a
// background deletion of a node it could not delete before, say — as they
// would go out unhindered in a real process. A locker that keeps calling
// for ever is the leash's business (see leash).
func (h *harness) background(d time.Duration) {
	// In steps of 50ms, or of a 160th of d for the minutes a case of long
	// sessions waits: a request made meanwhile waits a step at most.
	h.passTime(d, max(50*time.Millisecond, d/160), false, nil)
}

// passTime lets d pass in steps of pause, the clients' calls to the server
// answered as they come and the held watch events of idle clients handed
// over, until stop (if set), asked before each move and each step, says
// to stop. No client starts a new call or round. It gives up after
// stallMoves calls, for a client that calls again and again without
// letting time pass. With tell, each move and each step of time is a step
// of the story of its own, as the detectors need while clients still wait
// in calls: the herd rule tells a waiter that went back to waiting after
// it was woken from one that waited before by their steps.
func (h *harness) passTime(d, pause time.Duration, tell bool, stop func() bool) {
	for waited, moves := time.Duration(0), 0; waited < d && moves < stallMoves; {
		if stop != nil && stop() {
			return
		}
		if s, r := h.runnableWith(h.slots[0], isCall); s != nil {
			if tell {
				h.tick()
				h.begin(fmt.Sprintf("%s moves", s.name()))
			}
			moves++
			h.grant(s, r)
			continue
		}
		if h.releaseIdleLate() {
			continue
		}
		step := min(pause, d-waited)
		if tell {
			h.tick()
			h.begin(fmt.Sprintf("time passes %v", step))
		}
		h.advance(step)
		waited += step
	}
	if stop != nil {
		stop() // after the last step too
	}
}

// isCall reports whether r is a call to the server, not a point of the
// client's own loop (a new round, a new call), which passTime leaves
// waiting.
func isCall(r *request) bool { return r.point == noPoint }

// checkClosedConn counts a request a process makes on a Conn it closed:
// a few are fine (it takes a failed request or two to learn that the Conn
// is closed), a retry loop is not.
func (h *harness) checkClosedConn(s *slot) {
	inc := s.inc
	if !inc.closed {
		return
	}
	if inc.callsAfterClose++; inc.callsAfterClose > closedCallLimit {
		in := "a goroutine of its " + h.sub.handleName()
		if call := s.inCall(); call != "" {
			in = "its " + call
		}
		h.found(Liveness, "%s made %d requests on its Conn after closing it at step %d, in %s: calls on a closed Conn must fail at once, not retry",
			s.name(), inc.callsAfterClose, inc.closedStep, in)
	}
}
