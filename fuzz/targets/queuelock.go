package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// One file for the queue lock, though it is longer than most: each
// variant's mistake is a branch beside the sound code it breaks, and
// reads best there.

// QueueLock is the ZooKeeper lock recipe as a careful person writes it
// in an afternoon: a protected ephemeral sequential node, a listing
// ordered by sequence number, a data watch on the node just ahead, a new
// listing when it goes. Lost replies are settled by finding the node by
// its GUID and checking its owner; a GUID whose create's reply was lost is
// remembered, and its nodes deleted, until a listing made after a sync
// shows none. An Unlock whose reply was lost does not take the node's
// absence for a lost hold; an Unlock that cannot confirm its Delete ends
// the hold all the same (the critical section is over) and leaves the
// release pending, for the next Unlock or Lock to finish. It is not
// reentrant. Its variants each break one thing: the lock mutants, and the
// election's and read/write lock's built on it.
//
// NewQueueLock gives one without a mistake, which the package's tests
// hold to the same campaign as recipe.Mutex: what a campaign finds in a
// mutant is its one mistake. Tests of detectors wrap it to plant a bug of
// their own.
type QueueLock struct {
	conn    zktest.Conn
	dir     string
	v       variant
	read    bool   // the shared side of a read/write lock (rwmutex.go)
	node    string // the own node's path while queued, holding or releasing
	holding bool
	pending bool        // an Unlock could not confirm its Delete: node may still be there
	doubt   deleteDoubt // what the pending release's Deletes may have done
	token   int64
	session int64 // the session that owns the node, while holding
	guids   uint64
	lost    []string // GUIDs of creates whose reply was lost, until swept
}

// NewQueueLock is a NewLocker: the queue lock, without a mistake, for the
// lock whose nodes live under path.
func NewQueueLock(conn zktest.Conn, path string) fuzz.Locker {
	return &QueueLock{conn: conn, dir: path}
}

// Node returns the path of the lock's own node while it is queued,
// holds, or is releasing, and "" otherwise.
func (l *QueueLock) Node() string { return l.node }

// Forget drops the lock's hold without releasing it: its node stays, and
// the next Lock queues afresh, behind it. Tests of the harness use it to
// plant a lock that loses track of its hold, whose node a detector must
// then find left behind.
func (l *QueueLock) Forget() { l.holding, l.token = false, 0 }

// Held reports whether the lock holds in the session it was taken in, and
// is connected: the queue lock follows no hold, but it can tell that.
func (l *QueueLock) Held() bool {
	return l.holding && l.conn.SessionID() == l.session && l.conn.State() == zk.StateHasSession
}

// Token returns the fencing token of the hold, the czxid of the lock's
// node, and 0 without a hold.
func (l *QueueLock) Token() int64 {
	if !l.holding {
		return 0
	}
	return l.token
}

// Lock queues and waits until the lock is the caller's, or ctx ends.
func (l *QueueLock) Lock(ctx context.Context) error {
	if l.holding {
		return nil
	}
	if l.pending {
		if err := l.release(ctx); err != nil && !errors.Is(err, errLost) {
			return err
		}
	}
	for {
		if err := l.enqueue(ctx); err != nil {
			l.sweep(context.Background())
			return err
		}
		got, err := l.await(ctx)
		if err != nil {
			l.abandon()
			return err
		}
		if got {
			l.holding = true
			return nil
		}
		// The node went with an expired session: queue again.
	}
}

// newGUID makes the GUID of the next protected name. It is drawn from the
// session id so that a case replays exactly; it still looks random, which
// is all the whole-name-order mutant needs. A Conn without a session yet
// (it connected while the ensemble had no quorum) has no id to draw from,
// and two such would draw the same GUIDs: it waits for its session, unless
// the Conn is closed (its create then fails).
func (l *QueueLock) newGUID(ctx context.Context) (string, error) {
	for l.conn.SessionID() == 0 && l.conn.State() != zk.StateDisconnected {
		if err := pause(ctx, mutantBackoff); err != nil {
			return "", err
		}
	}
	l.guids++
	a := splitmix(uint64(l.conn.SessionID()) ^ l.guids*0x9e3779b97f4a7c15)
	return fmt.Sprintf("%016x%016x", a, splitmix(a)), nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// nodeName is the name of the lock's nodes after the GUID: a reader's
// "rlock-", whose last "lock-" the sequence number follows too.
func (l *QueueLock) nodeName() string {
	if l.read {
		return "rlock-"
	}
	return "lock-"
}

// blockers returns the nodes of ahead (the queue ahead of the own node)
// that the lock waits for: all of them, or, for a reader, the writers —
// but for the read/write mutants' mistakes.
func (l *QueueLock) blockers(ahead []string) []string {
	switch {
	case l.read && l.v != readerWaitsAll, !l.read && l.v == writerIgnoresReaders:
		return slices.DeleteFunc(slices.Clone(ahead), queueReads)
	}
	return ahead
}

// queueReads reports whether a queue lock's node is a reader's.
func queueReads(node string) bool { return strings.Contains(node, "-rlock-") }

// plainNames reports whether the variant names its nodes "lock-<seq>",
// without a GUID.
func (l *QueueLock) plainNames() bool { return l.v == plainRetry || l.v == listingOrder }

// enqueue creates the own node.
func (l *QueueLock) enqueue(ctx context.Context) error {
	guid, err := l.newGUID(ctx)
	if err != nil {
		return err
	}
	prefix := l.dir + "/_c_" + guid + "-" + l.nodeName()
	if l.plainNames() {
		prefix = l.dir + "/lock-"
	}
	for tries := 0; ; tries++ {
		node, err := l.conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
		if l.v != retryClosed && closedConn(l.conn, err) {
			return zk.ErrClosing
		}
		switch {
		case err == nil:
			l.node = node
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := makeDir(ctx, l.conn, l.dir); err != nil {
				return err
			}
			continue
		case recipe.IsConnectionLoss(err) && l.v == listingOrder:
			// Plain names carry no mark: any node of the current
			// session is the one, as the lock has one at a time.
			node, ferr := l.findOwn(ctx, "")
			if ferr != nil {
				return ferr
			}
			if node != "" {
				l.node = node
				return nil
			}
		case recipe.IsConnectionLoss(err) && l.v != plainRetry:
			mark := "_c_" + guid + "-"
			if l.v != forgetGUID && !slices.Contains(l.lost, mark) {
				// The create may have applied: its node is looked for,
				// and swept should it show up later.
				l.lost = append(l.lost, mark)
			}
			node, ferr := l.findOwn(ctx, mark)
			if ferr != nil {
				return ferr
			}
			if node != "" {
				l.node = node
				return nil
			}
			if l.v == forgetGUID {
				// Not there, so never made: a new name for the next try.
				if guid, err = l.newGUID(ctx); err != nil {
					return err
				}
				prefix = l.dir + "/_c_" + guid + "-" + l.nodeName()
			}
		case recipe.IsConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
		default:
			return err
		}
		if tries >= mutantRetryLimit {
			return err
		}
		if err := pause(ctx, mutantBackoff); err != nil {
			return err
		}
	}
}

// findOwn looks for a node whose name starts with mark and that belongs to
// the current session.
func (l *QueueLock) findOwn(ctx context.Context, mark string) (string, error) {
	children, err := l.children(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if !strings.HasPrefix(c, mark) {
			continue
		}
		if ok, err := l.ownedHere(ctx, l.dir+"/"+c); err != nil || ok {
			return l.dir + "/" + c, err
		}
	}
	return "", nil
}

// ownedHere reports whether path exists and belongs to the current
// session.
func (l *QueueLock) ownedHere(ctx context.Context, path string) (bool, error) {
	var st *zk.Stat
	var ok bool
	if err := l.retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(path); return err }); err != nil {
		return false, err
	}
	return ok && st.EphemeralOwner == l.conn.SessionID(), nil
}

func (l *QueueLock) children(ctx context.Context) ([]string, error) {
	var children []string
	err := l.retry(ctx, func() (err error) { children, _, err = l.conn.Children(l.dir); return err })
	return children, err
}

// retry runs op through connection loss, for as many tries as the variant
// allows.
func (l *QueueLock) retry(ctx context.Context, op func() error) error {
	if l.v == retryClosed {
		return retryFor(ctx, closedRetryTime, op)
	}
	return retryOpen(ctx, l.conn, op)
}

// retryOpen runs op through connection loss, but not on a closed Conn,
// where it fails with zk.ErrClosing.
func retryOpen(ctx context.Context, conn zktest.Conn, op func() error) error {
	return retry(ctx, func() error {
		if err := op(); !closedConn(conn, err) {
			return err
		}
		return zk.ErrClosing
	})
}

// closedConn tells a Conn its process closed from a lost connection:
// requests on a closed go-zookeeper Conn fail at once, with ErrClosing if
// they were in flight and ErrConnectionClosed after, while it shows
// StateDisconnected for good; one that lost its connection fails those in
// flight with ErrConnectionClosed too, in StateDisconnected, but shows
// StateConnecting a moment later, while it dials again. So the state is
// read a moment after the failure, always (whether the caller pauses must
// not hang on a read that raced go-zookeeper's own goroutine).
func closedConn(conn zktest.Conn, err error) bool {
	switch {
	case errors.Is(err, zk.ErrClosing):
		return true
	case errors.Is(err, zk.ErrConnectionClosed):
		time.Sleep(closedReadDelay)
		return conn.State() == zk.StateDisconnected
	}
	return false
}

// closedReadDelay is how long after a failure closedConn reads the state.
const closedReadDelay = time.Millisecond

// order sorts the contenders — the children named as the lock names its
// nodes, "lock-<seq>" at the end — by sequence number; the variants sort
// by the whole name, by the last ten characters, or not at all.
func (l *QueueLock) order(children []string) []string {
	queue := slices.DeleteFunc(slices.Clone(children), func(c string) bool {
		i := strings.LastIndex(c, "lock-")
		if i < 0 {
			return true
		}
		_, err := strconv.ParseInt(c[i+len("lock-"):], 10, 32)
		return err != nil
	})
	switch l.v {
	case wholeNameOrder:
		slices.Sort(queue)
	case lastTenDigits:
		slices.SortFunc(queue, func(a, b string) int { return strings.Compare(lastTen(a), lastTen(b)) })
	case listingOrder:
	default:
		slices.SortFunc(queue, compareSeq)
	}
	return queue
}

// seqAfterLock reads the sequence number after the last "lock-" of a
// queue lock's node name: "%010d" of ZooKeeper's signed 32-bit counter,
// which reads "-2147483648" once the counter wraps.
func seqAfterLock(name string) int32 {
	n, _ := strconv.ParseInt(name[strings.LastIndex(name, "lock-")+len("lock-"):], 10, 32)
	return int32(n)
}

// compareSeq orders names by sequence number as serial numbers on the
// 32-bit counter, so that the order of creation holds across the wrap.
func compareSeq(a, b string) int {
	switch d := int32(uint32(seqAfterLock(a)) - uint32(seqAfterLock(b))); {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

func lastTen(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// await waits until the own node is first. It returns false when the own
// node is gone (its session expired) and the caller must queue again.
func (l *QueueLock) await(ctx context.Context) (bool, error) {
	own := l.node[strings.LastIndexByte(l.node, '/')+1:]
	for {
		children, err := l.children(ctx)
		if err != nil {
			return false, err
		}
		if strays := l.strays(children, own); len(strays) > 0 {
			// Nodes of creates whose reply was lost, applied after all.
			for _, s := range strays {
				if err := deleteNode(l.conn, l.dir+"/"+s, l.conn.SessionID()); err != nil && !errors.Is(err, errLost) {
					return false, err
				}
			}
			continue
		}
		if l.v == lastTenDigits {
			// The old reading: a name whose last ten characters are not
			// all digits is nobody's contender.
			children = slices.DeleteFunc(children, func(c string) bool {
				return strings.ContainsFunc(lastTen(c), func(r rune) bool { return r < '0' || r > '9' })
			})
		}
		queue := l.order(children)
		i := slices.Index(queue, own)
		if i < 0 {
			return false, nil
		}
		if i == 0 || l.v == existsLeads {
			return l.took(ctx)
		}
		blockers := l.blockers(queue[:i])
		if len(blockers) == 0 {
			return l.took(ctx)
		}
		pred := l.dir + "/" + blockers[len(blockers)-1]
		if l.read && l.v == readersWatchFirstWriter {
			pred = l.dir + "/" + blockers[0]
		}
		var watch <-chan zk.Event
		switch l.v {
		case watchChildren:
			var now []string
			now, _, watch, err = l.conn.ChildrenW(l.dir)
			if err == nil {
				if q := l.order(now); len(q) == 0 || q[0] == own || !slices.Contains(q, own) {
					continue // first by now, or gone: list again
				}
			}
		case watchDirectory:
			_, _, watch, err = l.conn.GetW(l.dir)
		default:
			_, _, watch, err = l.conn.GetW(pred)
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // gone already: list again
		case l.v != retryClosed && closedConn(l.conn, err):
			return false, zk.ErrClosing
		case recipe.IsConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
			if err := pause(ctx, mutantBackoff); err != nil {
				return false, err
			}
			continue
		case err != nil:
			return false, err
		}
		var timeout <-chan time.Time
		if l.v == timedWait {
			timeout = time.After(mutantTimedWait)
		}
		select {
		case ev := <-watch:
			if ev.Type == zk.EventNotWatching {
				if errors.Is(ev.Err, zk.ErrClosing) || errors.Is(ev.Err, zk.ErrConnectionClosed) {
					return false, ev.Err
				}
				continue // the session expired: the listing will tell
			}
			if l.v == noRelist && ev.Type == zk.EventNodeDeleted {
				return l.took(ctx)
			}
		case <-timeout:
			return l.took(ctx)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// strays returns the children, other than own, that carry the mark of a
// create of this lock whose reply was lost.
func (l *QueueLock) strays(children []string, own string) []string {
	var out []string
	for _, c := range children {
		if c == own {
			continue
		}
		for _, mark := range l.lost {
			if strings.HasPrefix(c, mark) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// sweep deletes the nodes of lost creates, after a sync so that the
// listing shows every create the leader applied, and forgets their GUIDs
// once none is left.
func (l *QueueLock) sweep(ctx context.Context) {
	if len(l.lost) == 0 {
		return
	}
	if err := l.retry(ctx, func() error { _, err := l.conn.Sync(l.dir); return err }); err != nil {
		return
	}
	children, err := l.children(ctx)
	if err != nil {
		return
	}
	for _, s := range l.strays(children, "") {
		if err := deleteNode(l.conn, l.dir+"/"+s, l.conn.SessionID()); err != nil && !errors.Is(err, errLost) {
			return
		}
	}
	l.lost = nil
}

// took reads the own node's czxid for the fencing token; false if the node
// is gone after all, or is not the current session's (a follower that lags
// can still show a node whose session has expired).
func (l *QueueLock) took(ctx context.Context) (bool, error) {
	var ok bool
	var st *zk.Stat
	if err := l.retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(l.node); return err }); err != nil {
		return false, err
	}
	if !ok || st.EphemeralOwner != l.conn.SessionID() {
		return false, nil
	}
	l.token, l.session = st.Czxid, st.EphemeralOwner
	return true, nil
}

// abandon deletes the own node after Lock gave up.
func (l *QueueLock) abandon() {
	if l.node != "" {
		// In the background, as a failed release's: the Lock returns now,
		// and the node must go however long the server stays away.
		go l.deleteInBackground(l.node)
		l.node = ""
	}
	l.sweep(context.Background())
}

// Unlock releases the lock: UnlockContext with no deadline.
func (l *QueueLock) Unlock() error {
	return l.UnlockContext(context.Background())
}

// UnlockContext is Unlock, giving up on confirming the Delete when ctx
// ends. The hold ends all the same, with the release pending; the
// reenter-failed-unlock variant keeps the hold instead.
func (l *QueueLock) UnlockContext(ctx context.Context) error {
	if !l.holding && !l.pending {
		return zk.ErrNotLocked
	}
	wasHolding, token := l.holding, l.token
	l.holding, l.token, l.pending = false, 0, true
	if l.v == deleteFirst && wasHolding {
		children, err := l.children(ctx)
		if err != nil {
			return err
		}
		if queue := l.order(children); len(queue) > 0 {
			l.node = l.dir + "/" + queue[0]
		}
	}
	err := l.release(ctx)
	switch {
	case err == nil || errors.Is(err, errLost):
	case l.v == reenterFailedUnlock && wasHolding:
		l.holding, l.token, l.pending = true, token, false
	case wasHolding:
		// A caller may never call again: keep deleting the node in the
		// background, as Curator's guaranteed delete does, or it would
		// block the queue for as long as the session lives.
		go l.deleteInBackground(l.node)
	}
	return err
}

// deleteInBackground deletes the node of a failed release until the server
// answers or the Conn is closed: a session outlives any outage of the
// ensemble's quorum, and a partition shorter than its timeout, and resumes
// with the node at the head of the queue. The reaper-gives-up variant stops
// after a minute.
func (l *QueueLock) deleteInBackground(node string) {
	deadline := time.Now().Add(time.Minute)
	for {
		err := l.conn.Delete(node, -1)
		if !recipe.IsConnectionLoss(err) || closedConn(l.conn, err) {
			return
		}
		if l.v == reaperGivesUp && time.Now().After(deadline) {
			return
		}
		time.Sleep(mutantBackoff + reaperSkew)
	}
}

// release deletes the node of a pending release, bounded by ctx.
func (l *QueueLock) release(ctx context.Context) error {
	var err error
	if l.v == noNodeReleased {
		// Whatever made the node go, it is taken for this Delete's work.
		l.doubt.lost = true
	}
	if l.v == retryClosed {
		err = retryFor(ctx, closedRetryTime, func() error { return l.conn.Delete(l.node, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			err = errLost
		}
	} else {
		err = deleteNodeBounded(ctx, l.conn, l.node, l.session, &l.doubt)
	}
	if err != nil && !errors.Is(err, errLost) {
		return err
	}
	l.pending, l.node, l.doubt = false, "", deleteDoubt{}
	l.sweep(ctx)
	return err
}
