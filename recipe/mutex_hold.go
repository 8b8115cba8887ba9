package recipe

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// watchHold runs for the length of a hold. It learns of the hold's loss from
// the own node's watch — NodeDeleted, or EventNotWatching, which
// go-zookeeper sends on every watch when the session expires or the Conn is
// closed — and polls the Conn's State and SessionID for what no watch
// reports: a dropped connection (the watch stays armed through it) and a
// session replaced without an event reaching us.
//
// It also ends when the Conn is closed: go-zookeeper ends every watch with
// zk.ErrClosing then, and a Conn that has been in StateDisconnected for the
// whole retry timeout (a live one shows StateConnecting while it tries to
// reconnect) is taken for closed even when no watch was armed to say so.
func (m *Mutex) watchHold(h *hold) {
	defer h.watching.Done()
	ticker := m.pollTicker()
	defer ticker.Stop()
	watch := h.self
	rearm := false
	// rearming carries the answer of the watch's re-arming while it is
	// under way: it runs beside the polls, as a call made while the
	// connection drops waits for the next reconnect round, and the
	// hold must go to suspended meanwhile.
	var rearming chan rearmed
	var disconnectedSince time.Time
	for {
		select {
		case <-m.stopWatching:
			return
		case r := <-rearming:
			rearming = nil
			if stopped(h) {
				return // as below: Unlock is done with the hold
			}
			switch {
			case r.err == nil && r.exists && r.stat.EphemeralOwner == h.session:
				watch, rearm = r.watch, false
			case r.err == nil:
				if m.nodeGone(h) {
					return
				}
				rearm = false
			case IsConnectionLoss(r.err):
				// Try again at the next tick.
			default:
				m.lose(h)
				return
			}
		case ev := <-watch:
			if stopped(h) {
				// Unlock is done with the hold: whatever the event says
				// is its business now (select picks at random among
				// ready cases; the outcome must not depend on it).
				return
			}
			watch = nil
			switch ev.Type {
			case zk.EventNodeDeleted:
				if m.nodeGone(h) {
					return
				}
				// Our own Delete took it: keep following the connection
				// until Unlock finishes.
				continue
			case zk.EventNotWatching:
				if errors.Is(ev.Err, zk.ErrClosing) {
					m.closed.Store(true) // proof that the Conn was closed (see closeEvidence)
				}
				m.lose(h)
				return
			}
			// The node's data changed: the watch is spent.
			rearm = true
		case <-ticker.C:
			if stopped(h) {
				return // as above: Unlock is done with the hold
			}
			if m.settleSeen(h) {
				return
			}
		}

		if m.conn.SessionID() != h.session {
			m.lose(h)
			return
		}
		state := m.conn.State()
		switch {
		case state != zk.StateDisconnected:
			disconnectedSince = time.Time{}
		case disconnectedSince.IsZero():
			disconnectedSince = time.Now()
		case time.Since(disconnectedSince) >= m.cfg.retryTimeout:
			m.closed.Store(true)
			m.lose(h)
			return
		}
		connected := state == zk.StateHasSession
		m.setConnected(h, connected)
		if !rearm || !connected || rearming != nil {
			continue
		}
		rearming = make(chan rearmed, 1)
		go rearmWatch(m.conn, h.node, rearming)
	}
}

// rearmed is the answer of watchNode, for watchHold.
type rearmed struct {
	exists bool
	stat   *zk.Stat
	watch  <-chan zk.Event
	err    error
}

// rearmWatch sets the watch on node again, and sends the answer.
func rearmWatch(conn Conn, node string, answer chan<- rearmed) {
	var r rearmed
	r.exists, r.stat, r.watch, r.err = watchNode(conn, node)
	answer <- r
}

// pollTicker returns the handle's ticker for watchHold's polls, started
// afresh. One ticker serves all of the handle's holds, one after another
// (a hold begins once the last one's watching has ended): a ticker of
// their own was three allocations per hold, and most holds are over well
// before their first tick. Only the watching goroutine uses it.
func (m *Mutex) pollTicker() *time.Ticker {
	if m.poll == nil {
		m.poll = time.NewTicker(m.cfg.pollInterval)
	} else {
		// No tick of an earlier hold is received after Reset.
		m.poll.Reset(m.cfg.pollInterval)
	}
	return m.poll
}

// heldSession returns the session in which the handle holds its lock, or
// 0 if it holds it no more: the hold was lost (its node deleted, its
// session ended) or is being released, or the Conn has a session other
// than the hold's. go-zookeeper moves to a new session only once the old
// one expired, taking the hold's node with it, and tells the hold's watch
// of that in its own time; a request sent meanwhile goes out on the new
// session, under no hold at all. No request is sent.
func (m *Mutex) heldSession() int64 {
	m.mu.Lock()
	var session int64
	if h := m.hold; h != nil && (h.state == MutexHeld || h.state == MutexSuspended) {
		session = h.session
	}
	m.mu.Unlock()
	if session == 0 || session != m.conn.SessionID() {
		return 0
	}
	return session
}

// stopped reports whether Unlock has told the watching to stop.
func stopped(h *hold) bool { return h.stopped.Load() }

// watch starts the watching goroutine of a new hold. The hold before it,
// if any, has been waited for (h.watching), so the handle's stopWatching
// and poll are free.
func (m *Mutex) watch(h *hold) {
	if m.stopWatching == nil {
		m.stopWatching = make(chan struct{}, 1)
	}
	h.watching.Add(1)
	go m.watchHold(h)
}

// stopWatch ends the watching of a hold Unlock is done with, and waits for
// it. The watching may have ended already, without taking the word: it is
// taken back, so that the next hold's watching does not find it.
func (m *Mutex) stopWatch(h *hold) {
	h.stopped.Store(true)
	m.stopWatching <- struct{}{} // the buffer is free: one word per hold
	h.watching.Wait()
	select {
	case <-m.stopWatching:
	default:
	}
}

// nodeGone handles the deletion of the hold's node and reports whether the
// hold is over, so that the watching can end. While Unlock deletes the node
// the deletion is expected, and that Unlock finishes the release. While a
// release is pending (an Unlock failed) the deletion ends it: released, if
// a Delete of the handle's own deleted the node or may have; lost, if every
// one of them found it gone, as someone else deleted it then, maybe before
// the Unlock began (the event reaches the recipe when its goroutine reads
// it). Otherwise the hold is lost.
func (m *Mutex) nodeGone(h *hold) (over bool) {
	var err error
	if m.conn.SessionID() != h.session {
		err = ErrLockLost
	}
	m.mu.Lock()
	switch {
	case h.releasing:
		h.goneEarly = true
		m.mu.Unlock()
		return false
	case h.pending && !m.ownDeletionKnown(h):
		// A Delete of the handle's is still out, and none has deleted
		// the node or may have: whether that one or someone else deleted
		// it is for its answer to say. The watching goes on until it
		// comes (settleSeen), unless an Unlock or Lock finishing the
		// release reads it first.
		h.seenGone = true
		m.mu.Unlock()
		return false
	case h.pending:
		if !m.ownDeletion(h) {
			// Every Delete of the failed Unlock found the node gone:
			// someone else deleted it, maybe before that Unlock began.
			err = ErrLockLost
		}
		// Checked and settled under one hold of the lock: a Lock or
		// Unlock that starts finishing the release meanwhile would
		// otherwise find the deletion neither settled nor noted.
		m.settleLocked(h, err)
		m.mu.Unlock()
		m.tell()
		return true
	}
	m.mu.Unlock()
	m.lose(h)
	return true
}

// lose records that the hold is lost and tells the listener. A pending
// release that loses its session is over: see settle.
func (m *Mutex) lose(h *hold) {
	m.mu.Lock()
	if h.state == MutexLost || h.settled {
		m.mu.Unlock()
		return
	}
	switch {
	case h.pending && !h.releasing:
		m.settleLocked(h, ErrLockLost)
		m.mu.Unlock()
		m.tell()
		return
	case h.pending:
		// The Unlock or Lock finishing the release learns of it and
		// reports it; a pending release is no hold, and its loss no
		// news to the listener, nor a change of its state.
		h.ended = true
		m.mu.Unlock()
		return
	}
	h.markLost()
	m.sayOf(h, MutexLost)
	m.mu.Unlock()
	m.tell()
}

// settleLocked ends a pending release without an Unlock: the handle is
// unlocked, Lost closes, and the next Unlock returns err (the next Lock
// starts afresh). The caller tells the listener once m.mu is released.
// Called from the watching goroutine, which then ends, with m.mu held.
func (m *Mutex) settleLocked(h *hold, err error) {
	if h.settled || h.releasing {
		return
	}
	h.settled, h.settledErr = true, err
	h.state = MutexUnlocked
	h.closeLost()
	m.sayOf(h, MutexUnlocked)
}

// setConnected moves a hold between Held and Suspended. A pending release
// stays MutexReleasing whatever the connection does.
func (m *Mutex) setConnected(h *hold, connected bool) {
	m.mu.Lock()
	var next MutexState
	switch {
	case !connected && h.state == MutexHeld:
		next = MutexSuspended
	case connected && h.state == MutexSuspended:
		next = MutexHeld
	default:
		m.mu.Unlock()
		return
	}
	h.state = next
	m.sayOf(h, next)
	m.mu.Unlock()
	m.tell()
}

// release deletes the hold's node. lost reports that the node was gone
// before the release could take effect. An error means the outcome is not
// known (the connection stayed lost, or ctx ended first): finishRelease
// then leaves the release pending.
func (m *Mutex) release(ctx context.Context, h *hold) (lost bool, err error) {
	m.mu.Lock()
	seenGone := h.seenGone
	m.mu.Unlock()
	if seenGone {
		ours, err := m.awaitOwnDeletes(ctx, h)
		if err == nil && ours {
			ours, err = m.lostDeletesCount(ctx, h)
		}
		return !ours || m.conn.SessionID() != h.session, err
	}
	err = m.retryLoss(ctx, 0, func() error {
		m.mu.Lock()
		gone := h.state == MutexLost || h.ended
		m.mu.Unlock()
		if gone {
			// The session expired or the Conn was closed meanwhile: the node
			// went with it, and retrying could only wait for the bound.
			return zk.ErrSessionExpired
		}
		err, abandoned := deleteBounded(ctx, m.conn, h.node, &m.released)
		m.noteDelete(h, err, abandoned)
		return err
	})
	m.mu.Lock()
	goneEarly := h.goneEarly
	m.mu.Unlock()
	if err != nil && goneEarly && !errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, zk.ErrClosing) {
		// The node's deletion was seen while this release ran: whatever
		// kept the Delete from being confirmed, the node is gone (whether
		// by that Delete is for unsure to say).
		err = zk.ErrNoNode
	}

	switch {
	case err == nil:
	case errors.Is(err, zk.ErrNoNode):
		// A Delete of the handle's still out (the background deletion's)
		// may be the one that deleted it: its answer says.
		ours, werr := m.awaitOwnDeletes(ctx, h)
		if werr == nil && ours {
			ours, werr = m.lostDeletesCount(ctx, h)
		}
		if werr != nil {
			return false, werr
		}
		// Gone. If a Delete of ours deleted it, or may have, the critical
		// section ended before anyone else could enter: released.
		// Otherwise someone else deleted the node, and when is not known:
		// that its deletion was seen only once Unlock had begun says
		// nothing of when it happened, as go-zookeeper hands a watch event
		// to the recipe when the recipe's goroutine reads it, maybe after
		// the reply to a later request. Another contender may have held
		// the lock inside the critical section: lost.
		if !ours || m.conn.SessionID() != h.session {
			return true, nil
		}
	case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing):
		return true, nil
	default:
		return false, err
	}
	if h.sweep {
		m.sweepStrays(ctx, h)
	}
	return false, nil
}

// lostDeletesCount reports, of a release that a Delete of the handle's
// deleted h's node or may have (ownDeletion), whether that holds: it does
// if one answered that it did. Otherwise only lost answers say so, and
// go-zookeeper fails every request made after Close at once with
// zk.ErrConnectionClosed, as it fails one in flight when a connection
// drops: on a closed Conn such an answer says the Delete never left, and
// the node went with the session that Close ended. So unless the Conn has
// a session now, it is asked (a read, retried through connection loss as
// every request is): an answer says it is not closed, and the lost Deletes
// may have deleted the node; a closed Conn shows itself as closeEvidence
// reads it, and they did not. The error is ctx's, if it ends first: the release
// is then not confirmed.
func (m *Mutex) lostDeletesCount(ctx context.Context, h *hold) (bool, error) {
	m.mu.Lock()
	confirmed := h.deleted
	m.mu.Unlock()
	if confirmed || m.conn.State() == zk.StateHasSession {
		return true, nil
	}
	err := m.retryLoss(ctx, 0, func() error {
		err, _ := callBounded(ctx, func() error {
			_, _, err := m.conn.Exists(h.node)
			return err
		})
		return err
	})
	switch {
	case errors.Is(err, zk.ErrClosing):
		return false, nil
	case err == nil, errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return true, nil
	}
	return false, err
}

// noteDelete records the answer to one of the handle's Deletes of h's
// node, or, if it was abandoned, where its answer will come.
func (m *Mutex) noteDelete(h *hold, err error, abandoned <-chan error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if abandoned != nil {
		h.open = append(h.open, abandoned)
		return
	}
	h.noteAnswer(err)
}

// noteAnswer records what one of the handle's Deletes of h's node answered:
// it deleted the node, or, lost on the way, may have (or may yet). "No
// node" and the rest say it did not. m.mu is held.
func (h *hold) noteAnswer(err error) {
	h.deleted = h.deleted || err == nil
	h.unsure = h.unsure || IsConnectionLoss(err)
}

// ownDeletion reports whether one of the handle's own Deletes deleted h's
// node, or may have: one answered that it did, or was lost on the way
// (the connection dropped before its answer), or has not answered yet. A
// Delete that answered "no node" found it gone already. It reads the
// answers of the abandoned Deletes that have come since. m.mu is held.
func (m *Mutex) ownDeletion(h *hold) bool {
	open := h.open[:0]
	for _, answer := range h.open {
		select {
		case err := <-answer:
			h.noteAnswer(err)
		default:
			open = append(open, answer)
		}
	}
	clear(h.open[len(open):])
	h.open = open
	return h.deleted || h.unsure || len(h.open) > 0
}

// ownDeletionKnown reports whether ownDeletion's answer is known: a Delete
// of the handle's deleted h's node or may have, or none is still out.
// m.mu is held.
func (m *Mutex) ownDeletionKnown(h *hold) bool {
	m.ownDeletion(h)
	return h.deleted || h.unsure || len(h.open) == 0
}

// awaitOwnDeletes waits, bounded by ctx, for the answers of the handle's
// open Deletes of h's node, and reports whether one of them deleted it or
// may have (see ownDeletion). It looks at every poll of the connection
// rather than receiving the answers itself: the watching reads them too
// (settleSeen), and an answer is read once.
func (m *Mutex) awaitOwnDeletes(ctx context.Context, h *hold) (bool, error) {
	for {
		m.mu.Lock()
		ours, known := m.ownDeletion(h), m.ownDeletionKnown(h)
		m.mu.Unlock()
		if known {
			return ours, nil
		}
		if err := pause(ctx, m.cfg.pollInterval); err != nil {
			return false, err
		}
	}
}

// settleSeen ends a pending release whose node's deletion was seen while a
// Delete of its own was out, once that Delete's answer has come: released
// if it, or another of the handle's, deleted the node or may have, lost
// otherwise. It reports whether it did, so that the watching can end.
func (m *Mutex) settleSeen(h *hold) bool {
	m.mu.Lock()
	if !h.pending || !h.seenGone || h.settled || !m.ownDeletionKnown(h) {
		m.mu.Unlock()
		return false
	}
	ours := m.ownDeletion(h)
	if ours && !h.deleted && m.conn.State() != zk.StateHasSession {
		// Only lost answers say a Delete of the handle's may have deleted
		// the node, and the Conn, without a session, may have been
		// closed, which would make them say nothing: the next Unlock
		// asks it (lostDeletesCount), or a later look here.
		m.mu.Unlock()
		return false
	}
	var err error
	if !ours || m.conn.SessionID() != h.session {
		err = ErrLockLost
	}
	m.settleLocked(h, err)
	m.mu.Unlock()
	m.tell()
	return true
}

// sweepStrays deletes the nodes left bearing the hold's GUID, once its own
// node is deleted: a create whose lost reply was applied later than the
// retry that found the node would otherwise wait in the queue, and one day
// hold the lock, for nobody.
//
// The listing follows a sync: a create whose reply was lost may have been
// applied on the leader and not yet on the follower this client reads from
// (the client never saw that write's zxid). A GUID whose strays could not
// be looked for is remembered as an orphan and swept in the background.
func (m *Mutex) sweepStrays(ctx context.Context, h *hold) {
	children, err := m.syncedChildren(ctx)
	if err != nil {
		if !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrClosing) {
			m.adopt(orphan{guid: h.guid})
		}
		return
	}
	mark := protectedPrefix + h.guid + "-"
	for _, name := range children {
		if strings.HasPrefix(name, mark) {
			_ = m.cleanup(joinPath(m.dir, name)) // failures are deleted in the background
		}
	}
}
