package recipe

import (
	"context"
	"slices"
	"strings"
	"time"
)

// An orphan is a node of the handle's that may exist but is no longer
// wanted: one whose Delete failed, or — when a create's reply was lost and
// the node could not be looked for before Lock gave up — one known only by
// its GUID. Left alone, an orphan sits in the lock's queue for as long as
// its session lives, and every later contender waits behind it forever.
// So, as Curator does with protected nodes, the handle deletes orphans in
// the background until the server settles them or the Conn is closed:
// however long the server stays out of reach. No time bound would do: the
// session outlives any outage in which the ensemble has no quorum
// (ZooKeeper expires no session then), and any partition shorter than a
// negotiated timeout that may be minutes long; when the link comes back,
// the session resumes with its orphan still at the head of the queue. Only
// a connection loss keeps an orphan: any other answer settles it, as no
// retry could change it.
//
// An orphan is settled by what the server shows, never by comparing
// session ids: go-zookeeper sends a request queued while it was
// disconnected on the session it has when it reconnects, so a create begun
// under one session can make a node owned by the next.
type orphan struct {
	node string // full path, if known
	guid string // the GUID the node's name carries, if the path is not known
}

// adopt records an orphan, once, and makes sure the background reaper
// runs. A release that fails again while the connection is down adopts its
// node again.
func (m *Mutex) adopt(o orphan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.orphans, o) {
		m.orphans = append(m.orphans, o)
	}
	m.reapIfNeeded()
}

// reapIfNeeded starts the background reaper if orphans are left and none
// runs; m.mu must be held. Every caller of retryOrphans ends with it: a
// Lock's own round may hold the orphans while the reaper's round finds
// none and stops, and the orphans it puts back must not be left without a
// reaper.
func (m *Mutex) reapIfNeeded() {
	if len(m.orphans) > 0 && !m.reaping {
		m.reaping = true
		m.reapAfter(firstBackoff)
	}
}

// reapAfter retries the orphans after a pause, and again with a longer
// pause, up to maxBackoff, while some are left. Each round runs from a
// timer rather than a goroutine that sleeps between rounds, so that
// nothing of the Mutex is left blocked between them.
func (m *Mutex) reapAfter(pause time.Duration) {
	time.AfterFunc(pause, func() {
		m.retryOrphans()
		m.mu.Lock()
		defer m.mu.Unlock()
		// Whether to go on is decided on what is recorded now, under the
		// lock, not on what this round saw: another round may be holding
		// orphans it will put back.
		if len(m.orphans) == 0 {
			m.reaping = false
			return
		}
		m.reapAfter(min(2*pause, maxBackoff))
	})
}

// retryOrphans tries once to settle every orphan, and makes sure the
// reaper goes on with those left.
func (m *Mutex) retryOrphans() {
	m.mu.Lock()
	// What earlier rounds' failures suggested is weighed now, if a
	// backoff has passed since (see closeEvidence): a round on the
	// reaper's timer comes after one, a round a Lock runs may not.
	m.reapEvidence.paused(m.conn, &m.closed)
	orphans := m.orphans
	m.orphans = nil
	m.mu.Unlock()
	var keep []orphan
	for _, o := range orphans {
		if !m.settleOrphan(o) {
			keep = append(keep, o)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.orphans = append(m.orphans, keep...)
	m.reapIfNeeded()
}

// settleOrphan deletes an orphan, or finds it needs no deleting, and
// reports whether it is settled: anything but a connection loss settles
// it. A Conn known to be closed settles every orphan: closing the session
// deletes its ephemeral nodes. The rounds of the reaper count as the
// retries closeEvidence needs to tell a closed Conn.
func (m *Mutex) settleOrphan(o orphan) bool {
	if m.closed.Load() {
		return true
	}
	if o.node != "" {
		answer := m.openDelete(o.node)
		err := m.conn.Delete(o.node, -1)
		if answer != nil {
			answer <- err
		}
		return m.reaperSettles(err)
	}
	// A node known only by its GUID is settled once a listing shows none,
	// or every one found is deleted. The listing must follow a sync: the
	// create's reply was lost, so the client never saw its zxid and may
	// have reconnected to a follower that has not applied it yet; the
	// node would appear there later, owned by a live session, and block
	// the queue for good.
	_, err := m.conn.Sync(m.dir)
	if settled := m.reaperSettles(err); err != nil {
		return settled
	}
	children, _, err := m.conn.Children(m.dir)
	if settled := m.reaperSettles(err); err != nil {
		return settled
	}
	mark := protectedPrefix + o.guid + "-"
	settled := true
	for _, name := range children {
		if !strings.HasPrefix(name, mark) {
			continue
		}
		if !m.reaperSettles(m.conn.Delete(joinPath(m.dir, name), -1)) {
			settled = false
		}
	}
	return settled
}

// openDelete returns where the answer of the Delete the reaper is about to
// send goes, if node is that of a pending release, so that the Unlock
// finishing the release learns whether the reaper deleted the node (see
// ownDeletion); nil otherwise.
func (m *Mutex) openDelete(node string) chan<- error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hold
	if h == nil || h.node != node {
		return nil
	}
	answer := make(chan error, 1)
	h.open = append(h.open, answer)
	return answer
}

// reaperSettles counts an answer to one of the reaper's requests as
// evidence about the Conn (see closeEvidence) and reports whether the
// answer settles what the request was for: anything but a connection loss
// does, and so does a Conn now known to be closed.
func (m *Mutex) reaperSettles(err error) bool {
	m.mu.Lock()
	m.reapEvidence.failed(err, &m.closed)
	m.mu.Unlock()
	return !IsConnectionLoss(err) || m.closed.Load()
}

// syncedChildren lists the lock's directory after a sync, so that the
// listing shows every write the leader had committed when the sync reached
// it, whichever member the client reads from.
func (m *Mutex) syncedChildren(ctx context.Context) ([]string, error) {
	var children []string
	err := m.retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
		if _, err = m.conn.Sync(m.dir); err != nil {
			return err
		}
		children, _, err = m.conn.Children(m.dir)
		return err
	})
	return children, err
}
