package fuzz

import (
	"fmt"
	"testing/synctest"
	"time"
)

// A call the harness granted usually returns within its own step: the
// harness waits until the client's goroutines are blocked again, and the
// call has its reply. One that waits (a request queued while the client is
// cut off, or while the ensemble has no quorum) returns in a later step,
// when the link comes back, and then seldom alone: every request that
// waited is answered at that instant. The fake answers them in the order
// they were made, but their goroutines would then run all at once, and
// what a recipe does when two of its goroutines meet (on its mutex, on a
// field one of them sets) would be up to the Go scheduler: one run of a
// seed would not replay another. So such a reply, once the call has it, is
// held until the harness hands it over, one at a time per client, in an
// order drawn from the case's seed, each let run until the client is
// blocked again (settle), as watch events fired together are (see
// handOver). Drawn, not the order the calls were made: in a real process
// the goroutines woken together run in any order, and a recipe may be
// wrong in only one of them. An advance wakes at the instant such a reply,
// or a watch event, comes (sleepHandingOver), so that neither is held to
// the end of the step. Over real clients the gate is the served fake's,
// which has sent the reply by the time it hears of it: there nothing is
// held.

// replyOrder is the place of the reply to the nth call the harness
// granted in a case of the given seed, among replies handed over
// together: splitmix64 of the two, so that it replays with the seed.
func replyOrder(seed uint64, n int) uint64 {
	x := seed + uint64(n)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// outstanding marks r, once its grant's step has settled, as a call that
// has not returned yet: its reply will be handed over.
func (inc *incarnation) outstanding(r *request) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if !r.returned {
		r.late = true
	}
}

// awaitReply holds a call's goroutine, its reply recorded, until the
// harness hands the reply over, if the call returned after its step; it
// returns at once for any other call, and when the incarnation dies.
func (inc *incarnation) awaitReply(r *request) {
	inc.mu.Lock()
	if !r.late || inc.dead {
		inc.mu.Unlock()
		return
	}
	w := handOverWait{key: fmt.Sprintf("%016x", r.order), ready: make(chan struct{})}
	inc.replies = append(inc.replies, w)
	inc.mu.Unlock()
	inc.tellHeld()
	select {
	case <-w.ready:
	case <-inc.killed:
	}
}

// tellHeld tells the harness that a reply or a watch event waits for it,
// so that an advance hands it over at its instant (sleepHandingOver).
func (inc *incarnation) tellHeld() {
	select {
	case inc.heldCame <- struct{}{}:
	default: // the harness is told already
	}
}

// handOverReply hands over the held reply that comes first in the drawn
// order, and reports whether there was one.
func (inc *incarnation) handOverReply() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if len(inc.replies) == 0 {
		return false
	}
	close(takeFirst(&inc.replies).ready)
	return true
}

// sleepHandingOver lets d pass, as time.Sleep does, but wakes at each
// instant a reply comes after its step, or a watch event comes: once
// everything due at that instant has happened, it hands them over, so
// that a reply comes when its link comes back, and an event when the
// server fires it (a session expired during an outage of minutes), not
// when the harness's step ends.
func (h *harness) sleepHandingOver(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return
		case <-h.heldCame:
			synctest.Wait()
			h.handOverHeld()
		}
	}
}
