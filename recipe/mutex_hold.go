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
func (m *Mutex) watchHold(h *hold) {
	defer close(h.done)
	ticker := time.NewTicker(m.cfg.pollInterval)
	defer ticker.Stop()
	watch := h.self
	rearm := false
	for {
		select {
		case <-h.stop:
			return
		case ev := <-watch:
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
				m.lose(h)
				return
			}
			// The node's data changed: the watch is spent.
			rearm = true
		case <-ticker.C:
		}

		if m.conn.SessionID() != h.session {
			m.lose(h)
			return
		}
		connected := m.conn.State() == zk.StateHasSession
		m.setConnected(h, connected)
		if !rearm || !connected {
			continue
		}
		exists, stat, w, err := watchNode(m.conn, h.node)
		switch {
		case err == nil && exists && stat.EphemeralOwner == h.session:
			watch, rearm = w, false
		case err == nil:
			if m.nodeGone(h) {
				return
			}
			rearm = false
		case isConnectionLoss(err):
			// Try again at the next tick.
		default:
			m.lose(h)
			return
		}
	}
}

// nodeGone handles the deletion of the hold's node and reports whether it
// is a loss. It is not while Unlock deletes the node, nor after an Unlock
// that failed with its Delete possibly applied or still queued in the
// client: that Delete is the likely cause, and the next Unlock completes
// the release.
func (m *Mutex) nodeGone(h *hold) (lost bool) {
	m.mu.Lock()
	if h.releasing || h.unsure {
		h.goneEarly = true
		m.mu.Unlock()
		return false
	}
	m.mu.Unlock()
	m.lose(h)
	return true
}

// lose records that the hold is lost and tells the listener.
func (m *Mutex) lose(h *hold) {
	m.mu.Lock()
	if h.state == MutexLost {
		m.mu.Unlock()
		return
	}
	h.markLost()
	m.mu.Unlock()
	m.notify(MutexLost)
}

// setConnected moves a hold between Held and Suspended.
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
	m.mu.Unlock()
	m.notify(next)
}

// release deletes the hold's node. lost reports that the node was gone
// before the release could take effect. An error means the outcome is not
// known (the connection stayed lost, or ctx ended first): the hold is kept.
func (m *Mutex) release(ctx context.Context, h *hold) (lost bool, err error) {
	m.mu.Lock()
	unsure := h.unsure
	m.mu.Unlock()
	err = retryLoss(ctx, 0, func() error {
		m.mu.Lock()
		gone := h.state == MutexLost
		m.mu.Unlock()
		if gone {
			// The session expired or the Conn was closed meanwhile: the node
			// went with it, and retrying could only wait for the bound.
			return zk.ErrSessionExpired
		}
		err, abandoned := callBounded(ctx, func() error { return m.conn.Delete(h.node, -1) })
		if abandoned || isConnectionLoss(err) {
			unsure = true // the Delete may have been, or may yet be, applied
		}
		return err
	})
	m.mu.Lock()
	h.unsure = unsure
	goneEarly := h.goneEarly
	m.mu.Unlock()

	switch {
	case err == nil:
	case errors.Is(err, zk.ErrNoNode):
		// Gone. If a Delete of ours may have been applied without its reply
		// reaching us, or the node vanished only once Unlock had begun, the
		// critical section ended before anyone else could enter: released.
		// Otherwise the node was gone before Unlock: lost.
		if !(unsure || goneEarly) || m.conn.SessionID() != h.session {
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

// sweepStrays deletes nodes bearing the hold's GUID other than its own: a
// create whose lost reply was applied later than the retry that found the
// node would otherwise wait in the queue, and one day hold the lock, for
// nobody.
func (m *Mutex) sweepStrays(ctx context.Context, h *hold) {
	var children []string
	err := retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
		children, _, err = m.conn.Children(m.dir)
		return err
	})
	if err != nil {
		return
	}
	mark := protectedPrefix + h.guid + "-"
	for _, name := range children {
		if strings.HasPrefix(name, mark) {
			if p := joinPath(m.dir, name); p != h.node {
				_ = m.cleanup(p) // failures are deleted in the background
			}
		}
	}
}
