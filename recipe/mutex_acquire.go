package recipe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Acquisition, as the ZooKeeper lock recipe has it, plus the recovery the
// recipe leaves out:
//
//  1. create "_c_<guid>-<name>" ephemeral and sequential, making parents on
//     ErrNoNode and finding the node by GUID when the reply is lost;
//  2. GetW on the own node: proves the node's ephemeralOwner is the
//     current session, reads the czxid for the fencing token, and arms the
//     watch that reports the hold's loss later;
//  3. list the directory; first in sequence order holds the lock;
//  4. otherwise GetW the predecessor (GetW leaves no watch behind when the
//     node is already gone) and wait; on its event go back to 3.
//
// Uncontended that is 3 requests, plus the Delete of Unlock; a waiter adds a
// GetW and a listing per wakeup, however long the queue.

// acquire queues a node and, if wait, waits until it is first. It returns the
// new hold, or nil and no error when !wait and someone is ahead.
func (m *Mutex) acquire(ctx context.Context, wait bool) (*hold, error) {
	if m.dir == "" {
		return nil, zk.ErrInvalidPath
	}
	for {
		c, err := m.create(ctx)
		if err != nil {
			return nil, err
		}
		h, again, err := m.queue(ctx, c, wait)
		if c.lossy && h == nil {
			// A create of this GUID whose reply was lost may still show up
			// (see settleOrphan): sweep for it in the background.
			m.adopt(orphan{guid: c.guid})
		}
		if !again {
			return h, err
		}
		// The node went (session expired, or deleted by someone) before the
		// lock was ours: join the queue again with a new node.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// created is the outcome of a protected create.
type created struct {
	guid  string
	node  string // full path
	lossy bool   // a create's reply was lost: a stray twin may appear later
}

// create makes the handle's node. When a reply is lost it looks for a node
// carrying its GUID; queue then checks that node's owner.
func (m *Mutex) create(ctx context.Context) (c created, err error) {
	prefix, guid := m.nodePrefix()
	lossy := false
	defer func() {
		if err != nil && lossy {
			// A create whose reply was lost may have applied, and the
			// node could not be found before giving up.
			m.adopt(orphan{guid: guid})
		}
	}()
	parentTries := 0
	var troubleSince time.Time
	backoff := firstBackoff
	var evidence closeEvidence
	for {
		if m.closed.Load() {
			return created{}, errConnClosed
		}
		node, err := m.conn.Create(prefix, m.cfg.data, zk.FlagEphemeral|zk.FlagSequence, m.cfg.acl)
		if evidence.failed(err, &m.closed); m.closed.Load() {
			// Closing the session deletes the node, if it was made.
			return created{}, errConnClosed
		}
		switch {
		case err == nil:
			return created{guid: guid, node: node, lossy: lossy}, nil
		case errors.Is(err, zk.ErrNoNode) && parentTries < 3:
			// Someone may delete the directory again between our creates;
			// a few rounds tell a race from a directory that cannot stay.
			parentTries++
			if err := m.makeParents(ctx); err != nil {
				return created{}, err
			}
			continue
		case IsConnectionLoss(err):
			lossy = true
			node, ferr := m.findByGUID(ctx, guid)
			if ferr != nil {
				return created{}, ferr
			}
			if node != "" {
				return created{guid: guid, node: node, lossy: true}, nil
			}
		case errors.Is(err, zk.ErrSessionExpired):
			// The node, if made, went with the session; go-zookeeper is
			// opening a new one, in which the create is simply repeated.
		default:
			return created{}, err
		}
		now := time.Now()
		if troubleSince.IsZero() {
			troubleSince = now
		}
		if now.Sub(troubleSince) >= m.cfg.retryTimeout {
			return created{}, err
		}
		if ctxErr := pause(ctx, backoff); ctxErr != nil {
			return created{}, fmt.Errorf("%w (while creating the lock node: %w)", ctxErr, err)
		}
		evidence.paused(m.conn, &m.closed)
		backoff = min(2*backoff, maxBackoff)
	}
}

// findByGUID returns the first node in queue order whose name carries
// guid, or "" if there is none. It does not check the node's owner: queue
// does, before it counts the node as ours.
func (m *Mutex) findByGUID(ctx context.Context, guid string) (string, error) {
	var children []string
	err := m.retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
		children, _, err = m.conn.Children(m.dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	mark := protectedPrefix + guid + "-"
	var first contender
	for _, child := range children {
		seq, ok := sequenceIn(child, m.cfg.nodeName)
		c := contender{name: child, seq: seq}
		if ok && strings.HasPrefix(child, mark) && (first.name == "" || c.before(first)) {
			first = c
		}
	}
	if first.name == "" {
		return "", nil
	}
	return joinPath(m.dir, first.name), nil
}

// queue waits until c.node is first (or, if !wait, looks once). again means
// the node is gone before it got the lock and the caller should start over.
func (m *Mutex) queue(ctx context.Context, c created, wait bool) (h *hold, again bool, err error) {
	name := baseName(c.node)
	// Our GUID's mark begins name (it was made with it, or found by it):
	// take it from there rather than make a string of it.
	var mark string
	if n := len(protectedPrefix) + len(c.guid) + 1; len(name) >= n && name[:len(protectedPrefix)] == protectedPrefix &&
		name[len(protectedPrefix):n-1] == c.guid && name[n-1] == '-' {
		mark = name[:n]
	} else {
		mark = protectedPrefix + c.guid + "-"
	}

	exists, stat, self, err := m.watchOwn(ctx, c.node)
	if err != nil {
		return m.abandon(c.node, err)
	}
	if !exists {
		return nil, true, nil
	}
	if stat.EphemeralOwner != m.conn.SessionID() {
		// The node carries our GUID but belongs to a session that has
		// expired: it is about to vanish, and holding it would let the
		// next contender in while we think we hold (CURATOR-498, -604).
		return m.startOver(c.node)
	}
	session, token := stat.EphemeralOwner, stat.Czxid

	for {
		var children []string
		err := m.retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
			children, _, err = m.conn.Children(m.dir)
			return err
		})
		if err != nil {
			return m.abandon(c.node, err)
		}
		pred, present, strays := predecessor(children, name, mark, m.cfg.nodeName, m.cfg.blockedBy)
		if len(strays) > 0 {
			// Our own twins from a create whose lost reply was applied after
			// all: remove them, or one would hold the lock for nobody.
			for _, s := range strays {
				if err := m.cleanup(joinPath(m.dir, s)); err != nil {
					return m.abandon(c.node, err)
				}
			}
			continue
		}
		if !present {
			return nil, true, nil
		}
		if pred == "" {
			// First — if the listing was made in the session that owns the
			// node and the node's watch has not fired meanwhile: a client
			// that has just moved to a new session may still list its old
			// session's node (CURATOR-604).
			if m.conn.SessionID() != session {
				return m.startOver(c.node)
			}
			select {
			case ev := <-self:
				if done, again, err := m.ownEvent(ctx, c.node, session, ev, &self); done {
					return nil, again, err
				}
				continue
			default:
			}
			return &hold{
				node:    c.node,
				guid:    c.guid,
				sweep:   c.lossy,
				token:   token,
				session: session,
				self:    self,
				count:   1,
				state:   MutexHeld,
			}, false, nil
		}
		if !wait {
			if err := m.cleanup(c.node); err != nil {
				return nil, false, err
			}
			return nil, false, nil
		}

		var predWatch <-chan zk.Event
		err = m.retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
			_, _, predWatch, err = m.conn.GetW(joinPath(m.dir, pred))
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone already: look again
		}
		if err != nil {
			return m.abandon(c.node, err)
		}

		for {
			var pred, own *zk.Event
			select {
			case ev := <-predWatch:
				pred = &ev
			case ev := <-self:
				own = &ev
			case <-ctx.Done():
			}
			// Several of these may be ready at once, and select picks one
			// at random: the cancellation wins whichever it picked. Events
			// of the own node and of the predecessor delivered together
			// (a deletion of both, say) may arrive in either order, so
			// either deletion leads the same way: a new listing, which
			// tells whether the own node is still there.
			if ctx.Err() != nil {
				if err := m.cleanup(c.node); err != nil {
					return nil, false, errors.Join(ctx.Err(), err)
				}
				return nil, false, ctx.Err()
			}
			if own != nil && own.Type == zk.EventNodeDeleted {
				break
			}
			if own != nil {
				if done, again, err := m.ownEvent(ctx, c.node, session, *own, &self); done {
					return nil, again, err
				}
			}
			if pred == nil {
				continue
			}
			if m.cfg.wakeHook != nil {
				m.cfg.wakeHook(*pred)
			}
			if pred.Type == zk.EventNotWatching {
				return m.abandon(c.node, pred.Err)
			}
			// Deleted (or changed): the predecessor may have been a
			// waiter that crashed, not the holder, so look again.
			break
		}
	}
}

// ownEvent handles an event of the own node's watch while the node is
// queued. done means the queueing is over: start again, or fail with err.
// Otherwise someone changed the node's data, and the watch has been armed
// again in *self.
func (m *Mutex) ownEvent(ctx context.Context, node string, session int64, ev zk.Event, self *<-chan zk.Event) (done, again bool, err error) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		return true, true, nil
	case zk.EventNotWatching:
		_, again, err := m.abandon(node, ev.Err)
		return true, again, err
	}
	exists, stat, watch, err := m.watchOwn(ctx, node)
	switch {
	case err != nil:
		_, again, err := m.abandon(node, err)
		return true, again, err
	case !exists:
		return true, true, nil
	case stat.EphemeralOwner != session:
		_, again, err := m.startOver(node)
		return true, again, err
	}
	*self = watch
	return false, false, nil
}

// predecessor finds, in a listing of the lock directory, the contender just
// ahead of name ("" if name is first), whether name is there at all, and any
// other children carrying our GUID mark (strays, in queue order). If name is
// not there, the last contender is its predecessor. One pass, no sort: every
// waiter a release wakes reads the whole queue, and a queue of a thousand
// took longer to sort than to fetch.
//
// blockedBy, unless nil, narrows "ahead" to the contenders it reports true
// for: an RWMutex's reader waits only for those that are not readers, and
// so watches the nearest of them, and is first once none is ahead.
func predecessor(children []string, name, mark, nodeName string, blockedBy func(string) bool) (pred string, present bool, strays []string) {
	names := newNameReader(nodeName)
	ownSeq, _ := names.read(name)
	marked := newPrefixTest(mark)
	var ahead contender // the nearest contender ahead of own
	var haveAhead bool
	// A contender's distance from own on the 32-bit counter is negative
	// when it is ahead (see contender.before), and the nearest ahead has
	// the largest negative distance. nearest is ahead's, math.MinInt64
	// while there is none; 0 when ahead has own's number and a smaller
	// name.
	nearest := int64(math.MinInt64)
	var strayQueue []contender
	for _, child := range children {
		// names.read, with its first call made here: a call per name was
		// a tenth of the loop.
		seq, ok := names.readOwn(child)
		if !ok {
			if seq, ok = sequenceIn(child, nodeName); !ok {
				continue
			}
		}
		c := contender{name: child, seq: seq}
		d := int64(int32(uint32(seq) - uint32(ownSeq)))
		if d == 0 {
			// Own, or a hand-made name with own's number: the names
			// order them.
			if child == name {
				present = true
				continue
			}
			if marked.of(child) {
				strayQueue = append(strayQueue, c)
				continue
			}
			if child < name && (!haveAhead || ahead.before(c)) && (blockedBy == nil || blockedBy(child)) {
				ahead, haveAhead, nearest = c, true, 0
			}
			continue
		}
		if marked.of(child) {
			strayQueue = append(strayQueue, c)
			continue
		}
		// Whether a contender is ahead of own is a coin toss, name by
		// name, and a branch on it, mispredicted for every other name,
		// cost more than the rest of the loop: behind own is the
		// smallest key instead, which never beats nearest. The branch
		// below is taken only by a new nearest, a few times in a queue.
		behind := ^(d >> 63) // all ones when d > 0
		key := d&^behind | math.MinInt64&behind
		if key > nearest || key == nearest && haveAhead && ahead.name < child {
			if blockedBy == nil || blockedBy(child) {
				ahead, haveAhead, nearest = c, true, key
			}
		}
	}
	switch {
	case present && haveAhead:
		pred = ahead.name
	case !present:
		pred = lastContender(children, names, marked)
	}
	slices.SortFunc(strayQueue, compareContenders)
	for _, c := range strayQueue {
		strays = append(strays, c.name)
	}
	return pred, present, strays
}

// lastContender returns the last contender of a listing in queue order,
// leaving out names that carry the mark: the predecessor of a node that is
// not in the listing. A second pass, taken only then, so that the first
// need not follow the last contender for the common case.
func lastContender(children []string, names nameReader, marked prefixTest) string {
	var last contender
	haveLast := false
	for _, child := range children {
		seq, ok := names.read(child)
		if !ok || marked.of(child) {
			continue
		}
		if c := (contender{name: child, seq: seq}); !haveLast || last.before(c) {
			last, haveLast = c, true
		}
	}
	return last.name
}

// watchOwn reads the own node's stat and sets the watch that reports its
// deletion (and, in go-zookeeper, the session's expiry or closing).
func (m *Mutex) watchOwn(ctx context.Context, node string) (exists bool, stat *zk.Stat, watch <-chan zk.Event, err error) {
	err = m.retryLoss(ctx, m.cfg.retryTimeout, func() (err error) {
		exists, stat, watch, err = watchNode(m.conn, node)
		return err
	})
	return exists, stat, watch, err
}

// watchNode reads node's stat and, only if the node exists, sets a watch
// on it. ExistsW would also arm a watch on a missing node, and a missing
// own node is never created again (its name carries a GUID and a sequence
// number): that watch would stay on the server for the rest of the
// session. It happens for real: a request queued while the client was
// disconnected is sent on the new session after an expiry, when the node
// is already gone. GetW on a missing node sets no watch.
func watchNode(conn Conn, node string) (exists bool, stat *zk.Stat, watch <-chan zk.Event, err error) {
	_, stat, watch, err = conn.GetW(node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, &zk.Stat{}, nil, nil
	case err != nil:
		return false, nil, nil, err
	}
	return true, stat, watch, nil
}

// abandon gives up on node after err. An expired session took the node with
// it and go-zookeeper carries on with a new session, so the caller starts
// over; after any other error the node is deleted and err returned.
func (m *Mutex) abandon(node string, err error) (*hold, bool, error) {
	switch {
	case errors.Is(err, zk.ErrSessionExpired):
		return nil, true, nil
	case errors.Is(err, zk.ErrClosing):
		// The Conn was closed: closing the session deletes the node.
		m.closed.Store(true)
		return nil, false, err
	}
	if cerr := m.cleanup(node); cerr != nil {
		return nil, false, errors.Join(err, cerr)
	}
	return nil, false, err
}

// startOver deletes a node that is not (or no longer) ours to use and asks
// the caller to queue afresh.
func (m *Mutex) startOver(node string) (*hold, bool, error) {
	if err := m.cleanup(node); err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// cleanup deletes one of the handle's nodes, retrying through connection
// loss for the retry timeout (the caller's ctx may be the reason for the
// cleanup, so it is not used). A node it cannot delete is remembered and
// tried again by the next Lock or TryLock; the error says so.
func (m *Mutex) cleanup(node string) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.retryTimeout)
	defer cancel()
	err := m.retryLoss(ctx, m.cfg.retryTimeout, func() error {
		err, _ := deleteBounded(ctx, m.conn, node, nil)
		return err
	})
	if err == nil || goneWithSession(err) {
		return nil
	}
	m.adopt(orphan{node: node})
	return fmt.Errorf("recipe: could not delete lock node %s (retried in the background): %w", node, err)
}

// goneWithSession reports whether a Delete's error means the node is gone
// or going without our help.
func goneWithSession(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

// makeParents creates the lock directory and its missing ancestors as
// persistent nodes. A parent made meanwhile by someone else is fine.
func (m *Mutex) makeParents(ctx context.Context) error {
	for _, p := range ancestors(m.dir) {
		err := m.retryLoss(ctx, m.cfg.retryTimeout, func() error {
			_, err := m.conn.Create(p, nil, 0, m.cfg.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// nodePrefix returns the path the handle's next node is created at (the
// server appends the sequence number), with a new GUID in it, and that
// GUID: a substring of the path, which is made in one allocation.
func (m *Mutex) nodePrefix() (prefix, guid string) {
	var b strings.Builder
	b.Grow(len(m.dir) + 1 + len(protectedPrefix) + guidLen + 1 + len(m.cfg.nodeName))
	b.WriteString(m.dir)
	if m.dir != "/" { // as joinPath
		b.WriteByte('/')
	}
	b.WriteString(protectedPrefix)
	start := b.Len()
	writeGUID(&b)
	end := b.Len()
	b.WriteByte('-')
	b.WriteString(m.cfg.nodeName)
	prefix = b.String()
	return prefix, prefix[start:end]
}

// newGUID returns 32 random hex digits, the GUID format of go-zookeeper's
// protected nodes.
func newGUID() string {
	var b strings.Builder
	b.Grow(guidLen)
	writeGUID(&b)
	return b.String()
}

// writeGUID writes a new GUID: 16 bytes from crypto/rand, in hex.
// crypto/rand.Read never fails (it crashes the program instead, should the
// system's source ever fail). It is cheap enough to read for every node:
// on Linux 6.11 and later Go serves it in user space (vDSO getrandom), and
// 16 bytes cost about 40 ns, so a faster generator of our own, keyed once,
// would save little and have to argue its unpredictability.
func writeGUID(b *strings.Builder) {
	const digits = "0123456789abcdef"
	var raw [guidLen / 2]byte
	rand.Read(raw[:])
	for _, c := range raw {
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&0xf])
	}
}
