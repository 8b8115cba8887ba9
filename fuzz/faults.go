package fuzz

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
)

// This file carries out the faults a schedule draws: partitions and their
// healing, expiries, crashes, pauses, and a new session on a lagging
// follower.

// sendToLaggingFollower makes s's next reconnect, or next session, go to
// follower m, or the other one if m is the client's own, made to lag if it
// does not.
func (h *harness) sendToLaggingFollower(s *slot, m int) {
	if m == s.inc.conn.Member() {
		m = 3 - m
	}
	if !h.lagging[m] {
		h.srv.SetLagging(m, true)
		h.lagging[m] = true
		h.note("follower %d starts lagging", m)
	}
	s.inc.conn.ReconnectTo(m)
	h.note("%s's next reconnect goes to follower %d, which lags", s.name(), m)
}

// heal ends s's partition, when says when. The fake holds the watch
// events it sends into a cut connection and delivers them if the link
// heals before the client notices the cut; once the client has noticed, it
// drops the connection, and its next reconnect re-arms its watches and
// fires those whose node changed since the last zxid it saw (ZooKeeper's
// setWatches). Either way the client hears what it missed, as it would
// from a real ensemble, so a partition may heal at any moment.
func (h *harness) heal(s *slot, when int) {
	inc := s.inc
	c := h.openCut(inc)
	switch when {
	case healNoticed:
		h.begin(fmt.Sprintf("%s's partition heals once the client notices it", s.name()))
		for waited := time.Duration(0); inc.conn.State() == zk.StateHasSession && waited < s.timeout; waited += s.noticeStep() {
			h.advance(s.noticeStep())
		}
	case healExpired:
		h.begin(fmt.Sprintf("%s's partition heals once the server has expired its session", s.name()))
		h.awaitExpiry(s, c)
	case healLate:
		h.begin(fmt.Sprintf("%s's partition heals just before its session would expire", s.name()))
		if wait := inc.cutAt.Add(s.timeout*9/10).Sub(time.Now()) - stepTime; wait > 0 {
			h.advance(wait)
		}
	default:
		h.begin(fmt.Sprintf("%s's partition heals", s.name()))
	}
	long := time.Since(inc.cutAt) > time.Minute
	if long {
		h.tally.LongPartitions++
	}
	if c != nil {
		c.healed, c.noticed, c.long = true, inc.conn.State() != zk.StateHasSession, long
	}
	inc.conn.Heal()
	inc.partitioned = false
	h.endFault(inc)
	h.settle()
}

// awaitExpiry lets time pass until the session c cut off has expired.
func (h *harness) awaitExpiry(s *slot, c *cut) {
	if c == nil {
		return
	}
	for waited := time.Duration(0); h.liveSessions()[c.session] && waited < 2*s.timeout; waited += s.noticeStep() {
		h.advance(s.noticeStep())
	}
}

// resume thaws s's frozen process, when says when. A process thawed with
// its session alive carries on, and hears the watch events the fake held
// for it meanwhile; one thawed after its session expired learns of the
// expiry and starts afresh.
func (h *harness) resume(s *slot, when int) {
	inc := s.inc
	c := h.openCut(inc)
	if when == resumeExpired {
		h.begin(fmt.Sprintf("%s's process thaws, its session timeout past", s.name()))
		h.awaitExpiry(s, c)
	} else {
		h.begin(fmt.Sprintf("%s's process thaws", s.name()))
	}
	if c != nil {
		c.healed = true
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
	if !h.sub.isLock() {
		// A Recipe's call in progress never returns: what it recorded,
		// and asked to record for each session, has an open outcome. It
		// is read while the client is still quiet: once killed, its
		// goroutine runs on.
		if call := inc.callInProgress(); call != nil {
			s.noteCallSession(session)
			h.addRecords(s, call, 0, linearizability.Instant{})
		}
	}
	// The connection goes first: once the incarnation is dead its calls
	// pass the gate, and none of them may reach the server.
	inc.conn.Crash()
	inc.gated.leash.ended(s.inCall())
	inc.kill()
	inc.cancel()
	h.endFault(inc)
	h.rec.Fault(inc.row, linearizability.FaultCrash, "process crashed")
	switch {
	case !h.sub.isLock():
	case s.phase == phaseLocking:
		h.addUnknown(inc.row, linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: session}, s.acquireCall)
	case s.phase == phaseUnlocking:
		h.addUnknown(inc.row, linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: s.holdSession}, s.releaseCall)
	}
	h.spawn(s)
}

// endFault
// endFault ends inc's open partition or pause in porcupine's report.
func (h *harness) endFault(inc *incarnation) {
	if inc.endCut != nil {
		inc.endCut()
		inc.endCut = nil
	}
}

// touchNode deletes s's nodes in the lock's directory, or with write sets
// their data, through a session of the harness's own, as an operator or a
// buggy program would. A write changes nothing of the lock (but fires the
// watches on the nodes). A deletion ends the hold of s, if it was holding
// or about to (a Revoke in the history): it may go on in its critical
// section unaware, and another client may take the lock meanwhile, which
// is no violation. A client with no node lets the next client move
// instead.
func (h *harness) touchNode(s *slot, write bool) {
	inc := s.inc
	// A Recipe's model knows nothing of nodes deleted behind a client's
	// back (a lock's has Revoke): its nodes are written to instead.
	write = write || !h.sub.isLock()
	session := inc.conn.SessionID()
	nodes := h.nodesOf(session)
	// Without a quorum nobody deletes or writes anything.
	if len(nodes) == 0 || inc.partitioned || inc.paused || len(h.stopped) > 0 {
		h.move(s, nil)
		return
	}
	verb := "deletes"
	if write {
		verb = "writes to"
	}
	h.begin(fmt.Sprintf("someone else %s %s's node%s in %s", verb, s.name(), map[bool]string{true: "s", false: ""}[len(nodes) > 1], h.dir))
	if h.admin == nil {
		h.admin = h.ownSession()
	}
	deleted := false
	for _, p := range nodes {
		var err error
		if write {
			_, err = h.admin.Set(p, []byte("touched"), -1)
		} else {
			err = h.admin.Delete(p, -1)
		}
		if err != nil {
			h.note("the harness's %s %s fails: %v", verb, StableName(p), err)
			continue
		}
		h.writes++ // a change on the server, for the poll detector
		deleted = deleted || !write
	}
	if deleted && (s.phase == phaseHolding || s.phase == phaseLocking) {
		s.revoked = true
		at := h.rec.Now()
		h.add(operatorRow, linearizability.MutexInput{Op: linearizability.Revoke, Lock: lockPath, Session: session}, linearizability.MutexOutput{OK: true}, at, at)
	}
	h.settle()
}

// closeClient tells inc's handle, if it has a close of its own, that its
// process closes its client.
func (inc *incarnation) closeClient() {
	var handle any = inc.locker
	if inc.handle != nil {
		handle = inc.handle
	}
	if c, ok := handle.(ClientCloser); ok {
		c.CloseClient()
	}
}
