package fuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Mutant is a deliberately broken lock or election: the campaign must
// find each one, with the detector named.
type Mutant struct {
	// Name selects the mutant in cmd/zkfuzz (-recipe=NAME).
	Name string
	// Bug says what is wrong with it.
	Bug string
	// Detector is what finds it.
	Detector Detector
	// Target is the broken recipe, to fuzz.
	Target Target
	// Options are what a campaign needs to see the bug rather than
	// another one the mutant also has.
	Options []Option
	// Also lists the detectors its mistake trips too, in some cases
	// before Detector does: a queue ordered wrongly deadlocks as often as
	// it lets two in.
	Also []Detector
	// Recipe names what it breaks: "mutex" or "election".
	Recipe string
}

// Mutants returns the built-in broken locks, then the broken elections.
// Each lock is a small lock written the way people write them, with one
// classic mistake; the queue lock they share is otherwise sound (a test
// holds it to the same campaign as recipe.Mutex). Each election breaks
// recipe.Election, or an election on the queue lock, in one way.
func Mutants() []Mutant {
	queue := func(v variant) Target {
		return Lock(func(conn zktest.Conn, path string) Locker { return &queueLock{conn: conn, dir: path, v: v} })
	}
	locks := []Mutant{
		{"herd", "waits on the whole children list (a child watch on the lock's directory), so every release wakes every waiter", Herd, queue(watchChildren), nil, nil, "mutex"},
		// A Lock given up leaves its watch on the directory, which
		// nothing ever fires: a leak.
		{"wrong-watch", "watches the lock directory's data instead of the node just ahead, and children coming and going never change it", Liveness, queue(watchDirectory), nil, []Detector{Leak}, "mutex"},
		{"no-relist", "takes the deletion of the node ahead as the lock without listing again, though that node may have been a waiter that left", MutualExclusion, queue(noRelist), nil, nil, "mutex"},
		// With more than one waiter, two of them can end up behind the
		// same node, as names sort by GUID: a herd, which two clients
		// avoid.
		{"whole-name-order", "orders the protected names by the whole name, whose random GUID comes first, instead of by the sequence number", MutualExclusion, queue(wholeNameOrder), []Option{WithClients(2)}, nil, "mutex"},
		// With more than one waiter, every waiter watches the one node and
		// a release wakes them all: a herd, which two clients avoid.
		{"check-then-create", "checks that a plain (persistent) node is missing, then creates it: a crashed holder's node stays for ever", Liveness, Lock(func(conn zktest.Conn, path string) Locker {
			return &nodeLock{conn: conn, dir: path, flags: 0, wait: true}
		}), []Option{WithClients(2)}, nil, "mutex"},
		{"timed-wait", "waits for the node ahead with a timeout, and reports the lock acquired when the wait times out", MutualExclusion, queue(timedWait), nil, nil, "mutex"},
		{"wrong-unlock", "Unlock deletes the first node in the queue, assuming it is its own, which after a session expiry is another client's", MutualExclusion, queue(deleteFirst), nil, nil, "mutex"},
		{"plain-retry", "creates a plain (unprotected) sequential node and retries the create after a lost reply, leaving the first node waiting for nobody", Liveness, queue(plainRetry), nil, nil, "mutex"},
		// The spin lock also deletes its node of a fixed name without a
		// version: an Unlock queued while its client is cut off goes out
		// on the session that replaced the expired one (go-zookeeper sends
		// what is queued once it has a session again) and deletes the
		// next holder's node.
		{"spin", "a polling spin lock: tries to create the lock node, and on failure sleeps and tries again", Herd, Lock(func(conn zktest.Conn, path string) Locker {
			return &nodeLock{conn: conn, dir: path, flags: zk.FlagEphemeral}
		}), nil, []Detector{MutualExclusion}, "mutex"},
		// The six that follow are recipe.Mutex's own old defects, each
		// put back into the queue lock.
		{"reenter-failed-unlock", "an Unlock that cannot confirm its Delete keeps the hold, and the next Lock re-enters it at once; the Delete still queued in the client applies later and the next waiter takes the lock too", MutualExclusion, queue(reenterFailedUnlock), nil, nil, "mutex"},
		{"sequence-wrap", "reads the last ten characters of a name as the sequence number, so past the counter's int32 wrap (\"-2147483647\") the newest contender sorts first", MutualExclusion, queue(lastTenDigits), nil, []Detector{Liveness, Leak}, "mutex"},
		{"closed-retry", "takes zk.ErrConnectionClosed from a closed Conn for a connection loss, and retries for 15s before it gives up", Liveness, queue(retryClosed), nil, nil, "mutex"},
		{"forget-guid", "after a create whose reply was lost, takes one listing without its GUID to mean the create never applied, and queues with a new GUID; the first node shows up later, owned by the live session, and blocks the queue", Liveness, queue(forgetGUID), nil, nil, "mutex"},
		// Long schedules: the outage must last over a minute, the
		// session survive it, and a release or a Lock fail meanwhile.
		{"reaper-gives-up", "the background deletion of a node whose Unlock or Lock failed stops after a minute, reasoning that the session has expired by then; it has not while the ensemble has no quorum, nor when the session timeout is longer, and the node blocks the queue once the session resumes", Liveness, queue(reaperGivesUp), []Option{WithSteps(200)}, nil, "mutex"},
		{"unlock-trusts-no-node", "an Unlock whose Delete finds no node calls it a clean release, though another session deleted the node, maybe before Unlock began (its watch event reaching the lock only later), and the next holder may have entered inside the critical section", MutualExclusion, queue(noNodeReleased), nil, nil, "mutex"},
		{"listing-order", "names nodes plainly (\"lock-<seq>\") and takes the order ZooKeeper lists them in for the queue's order; ZooKeeper lists children in no particular order", MutualExclusion, queue(listingOrder), nil, []Detector{Liveness, Leak, Herd}, "mutex"},
	}
	return slices.Concat(locks, electionMutants(), rwMutants(), semaphoreMutants())
}

// MutantByName returns the mutant called name.
func MutantByName(name string) (Mutant, bool) {
	for _, m := range Mutants() {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// variant is the one mistake a queueLock makes; zero is none.
type variant uint8

const (
	sound variant = iota
	watchChildren
	watchDirectory
	noRelist
	wholeNameOrder
	timedWait
	deleteFirst
	plainRetry
	reenterFailedUnlock
	lastTenDigits
	retryClosed
	forgetGUID
	listingOrder
	reaperGivesUp
	noNodeReleased
	existsLeads
	// The read/write lock's (see rwmutex.go).
	readerWaitsAll
	writerIgnoresReaders
	readersWatchFirstWriter
)

// errLost is what a mutant's Unlock returns when its node was already gone.
var errLost = recipe.ErrLockLost

const (
	mutantBackoff    = 10 * time.Millisecond
	mutantTimedWait  = time.Second
	mutantSpinPause  = 20 * time.Millisecond
	mutantRetryLimit = 200
	// closedRetryTime is how long the closed-retry mutant retries a closed
	// Conn: recipe.Mutex's retry timeout.
	closedRetryTime = 15 * time.Second
)

// queueLock is the ZooKeeper lock recipe as a careful person writes it
// in an afternoon: a protected ephemeral sequential node, a listing
// ordered by sequence number, a data watch on the node just ahead, a new
// listing when it goes. Lost replies are settled by finding the node by
// its GUID and checking its owner; a GUID whose create's reply was lost is
// remembered, and its nodes deleted, until a listing made after a sync
// shows none. An Unlock whose reply was lost does not take the node's
// absence for a lost hold; an Unlock that cannot confirm its Delete ends
// the hold all the same (the critical section is over) and leaves the
// release pending, for the next Unlock or Lock to finish. It is not
// reentrant. Its variants each break one thing.
type queueLock struct {
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

// Held reports whether the lock holds in the session it was taken in, and
// is connected: the queue lock follows no hold, but it can tell that.
func (l *queueLock) Held() bool {
	return l.holding && l.conn.SessionID() == l.session && l.conn.State() == zk.StateHasSession
}

func (l *queueLock) Token() int64 {
	if !l.holding {
		return 0
	}
	return l.token
}

func (l *queueLock) Lock(ctx context.Context) error {
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
func (l *queueLock) newGUID(ctx context.Context) (string, error) {
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
func (l *queueLock) nodeName() string {
	if l.read {
		return "rlock-"
	}
	return "lock-"
}

// blockers returns the nodes of ahead (the queue ahead of the own node)
// that the lock waits for: all of them, or, for a reader, the writers —
// but for the read/write mutants' mistakes.
func (l *queueLock) blockers(ahead []string) []string {
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
func (l *queueLock) plainNames() bool { return l.v == plainRetry || l.v == listingOrder }

// enqueue creates the own node.
func (l *queueLock) enqueue(ctx context.Context) error {
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
func (l *queueLock) findOwn(ctx context.Context, mark string) (string, error) {
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
func (l *queueLock) ownedHere(ctx context.Context, path string) (bool, error) {
	var st *zk.Stat
	var ok bool
	if err := l.retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(path); return err }); err != nil {
		return false, err
	}
	return ok && st.EphemeralOwner == l.conn.SessionID(), nil
}

func (l *queueLock) children(ctx context.Context) ([]string, error) {
	var children []string
	err := l.retry(ctx, func() (err error) { children, _, err = l.conn.Children(l.dir); return err })
	return children, err
}

// retry runs op through connection loss, for as many tries as the variant
// allows.
func (l *queueLock) retry(ctx context.Context, op func() error) error {
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
// StateDisconnected for good; one that lost its connection shows
// StateConnecting while it dials again.
func closedConn(conn zktest.Conn, err error) bool {
	return errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) && conn.State() == zk.StateDisconnected
}

// order sorts the contenders — the children named as the lock names its
// nodes, "lock-<seq>" at the end — by sequence number; the variants sort
// by the whole name, by the last ten characters, or not at all.
func (l *queueLock) order(children []string) []string {
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
func (l *queueLock) await(ctx context.Context) (bool, error) {
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
func (l *queueLock) strays(children []string, own string) []string {
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
func (l *queueLock) sweep(ctx context.Context) {
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
func (l *queueLock) took(ctx context.Context) (bool, error) {
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
func (l *queueLock) abandon() {
	if l.node != "" {
		// In the background, as a failed release's: the Lock returns now,
		// and the node must go however long the server stays away.
		go l.deleteInBackground(l.node)
		l.node = ""
	}
	l.sweep(context.Background())
}

func (l *queueLock) Unlock() error {
	return l.UnlockContext(context.Background())
}

// UnlockContext is Unlock, giving up on confirming the Delete when ctx
// ends. The hold ends all the same, with the release pending; the
// reenter-failed-unlock variant keeps the hold instead.
func (l *queueLock) UnlockContext(ctx context.Context) error {
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
func (l *queueLock) deleteInBackground(node string) {
	deadline := time.Now().Add(time.Minute)
	for {
		err := l.conn.Delete(node, -1)
		if !recipe.IsConnectionLoss(err) || closedConn(l.conn, err) {
			return
		}
		if l.v == reaperGivesUp && time.Now().After(deadline) {
			return
		}
		time.Sleep(mutantBackoff)
	}
}

// release deletes the node of a pending release, bounded by ctx.
func (l *queueLock) release(ctx context.Context) error {
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

// nodeLock is a lock on one node of a fixed name, "lock" in the lock's
// directory. With wait set it checks the node is missing (watching it if
// not) and then creates it; otherwise it tries to create it and, if it
// exists, sleeps and tries again.
type nodeLock struct {
	conn    zktest.Conn
	dir     string
	flags   int32
	wait    bool
	holding bool
	token   int64
	session int64
}

func (l *nodeLock) Token() int64 {
	if !l.holding {
		return 0
	}
	return l.token
}

func (l *nodeLock) Lock(ctx context.Context) error {
	if l.holding {
		return nil
	}
	node := l.dir + "/lock"
	for tries := 0; ; tries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.wait {
			ok, _, watch, err := l.conn.ExistsW(node)
			switch {
			case err == nil && ok:
				select {
				case <-watch:
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			case err != nil && (!recipe.IsConnectionLoss(err) || closedConn(l.conn, err)):
				return err
			case err != nil:
				if err := pause(ctx, mutantBackoff); err != nil {
					return err
				}
				continue
			}
		}
		_, err := l.conn.Create(node, nil, l.flags, zktest.OpenACL)
		switch {
		case closedConn(l.conn, err):
			return zk.ErrClosing
		case err == nil:
			var st *zk.Stat
			var ok bool
			if err := retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(node); return err }); err != nil {
				return err
			}
			if !ok {
				continue // gone with an expired session: try again
			}
			l.token, l.session = st.Czxid, st.EphemeralOwner
			if l.flags == 0 {
				l.session = l.conn.SessionID()
			}
			l.holding = true
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := makeDir(ctx, l.conn, l.dir); err != nil {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNodeExists):
			if !l.wait {
				if err := pause(ctx, mutantSpinPause); err != nil {
					return err
				}
			}
			continue
		case recipe.IsConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
			if tries >= mutantRetryLimit {
				return err
			}
			if err := pause(ctx, mutantBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func (l *nodeLock) Unlock() error {
	if !l.holding {
		return zk.ErrNotLocked
	}
	l.holding, l.token = false, 0
	return deleteNode(l.conn, l.dir+"/lock", l.session)
}

// deleteNode deletes a lock node of session through lost replies. A node
// that is gone after a Delete whose reply was lost was deleted by that
// Delete, unless the session changed meanwhile (it expired, and took the
// node with it); one that is gone at the first try was lost before.
func deleteNode(conn zktest.Conn, path string, session int64) error {
	var doubt deleteDoubt
	return deleteNodeBounded(context.Background(), conn, path, session, &doubt)
}

// deleteNodeBounded is deleteNode, giving up when ctx ends: a Delete held
// up by a partition is left to the client, which may still send it.
// *doubt keeps what the release's Deletes may have done, for the next call
// for the same release.
func deleteNodeBounded(ctx context.Context, conn zktest.Conn, path string, session int64, doubt *deleteDoubt) error {
	for tries := 0; ; tries++ {
		if err := ctx.Err(); err != nil {
			return err // no Delete sent: nothing to doubt
		}
		answer := make(chan error, 1)
		go func() { answer <- conn.Delete(path, -1) }()
		var err error
		select {
		case err = <-answer:
		case <-ctx.Done():
			doubt.open = append(doubt.open, answer)
			return ctx.Err()
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if doubt.mayHaveDeleted() && conn.SessionID() == session {
				return nil
			}
			return errLost
		case errors.Is(err, zk.ErrSessionExpired):
			return errLost
		case closedConn(conn, err):
			return errLost // the node goes with the closed session
		case recipe.IsConnectionLoss(err) && tries < mutantRetryLimit:
			doubt.lost = true
			time.Sleep(mutantBackoff)
		default:
			return err
		}
	}
}

// deleteDoubt is what a release knows of its own Deletes: one of them was
// lost on the way (it may have applied), and those abandoned before their
// answer came, whose answers are read when they come.
type deleteDoubt struct {
	lost bool
	open []chan error
}

// mayHaveDeleted reports whether a Delete of the release deleted the node
// or may have.
func (d *deleteDoubt) mayHaveDeleted() bool {
	open := d.open[:0]
	for _, answer := range d.open {
		select {
		case err := <-answer:
			d.lost = d.lost || err == nil || recipe.IsConnectionLoss(err)
		default:
			open = append(open, answer)
		}
	}
	d.open = open
	return d.lost || len(d.open) > 0
}

// makeDir creates dir and its ancestors as persistent nodes, through
// connection loss, but not on a closed Conn.
func makeDir(ctx context.Context, conn zktest.Conn, dir string) error {
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		err := retryOpen(ctx, conn, func() error {
			_, err := conn.Create(p, nil, 0, zktest.OpenACL)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// retryFor runs op through connection loss for as long as limit.
func retryFor(ctx context.Context, limit time.Duration, op func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := op()
		if !recipe.IsConnectionLoss(err) || !time.Now().Before(deadline) {
			return err
		}
		if err := pause(ctx, mutantBackoff); err != nil {
			return err
		}
	}
}

// retry runs op until it returns anything but a connection loss.
func retry(ctx context.Context, op func() error) error {
	for tries := 0; ; tries++ {
		err := op()
		if !recipe.IsConnectionLoss(err) || tries >= mutantRetryLimit {
			return err
		}
		if err := pause(ctx, mutantBackoff); err != nil {
			return err
		}
	}
}

// pause waits for d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
