package fuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
)

// RecipeMutex is the NewLocker of the project's own lock, recipe.Mutex.
func RecipeMutex(conn recipe.Conn, path string) Locker {
	return recipe.NewMutex(conn, path)
}

// Mutant is a deliberately broken lock: the campaign must find each one,
// with the detector named.
type Mutant struct {
	// Name selects the mutant in cmd/zkfuzz (-locker=NAME).
	Name string
	// Bug says what is wrong with it.
	Bug string
	// Detector is what finds it.
	Detector Detector
	New      NewLocker
	// Options are what a campaign needs to see the bug rather than
	// another one the mutant also has.
	Options []Option
}

// Mutants returns the built-in broken locks. Each is a small lock written
// the way people write them, with one classic mistake; the queue lock they
// share is otherwise sound (a test holds it to the same campaign as
// recipe.Mutex).
func Mutants() []Mutant {
	queue := func(v variant) NewLocker {
		return func(conn recipe.Conn, path string) Locker { return &queueLock{conn: conn, dir: path, v: v} }
	}
	return []Mutant{
		{"herd", "waits on the whole children list (a child watch on the lock's directory), so every release wakes every waiter", Herd, queue(watchChildren), nil},
		{"wrong-watch", "watches the lock directory's data instead of the node just ahead, and children coming and going never change it", Liveness, queue(watchDirectory), nil},
		{"no-relist", "takes the deletion of the node ahead as the lock without listing again, though that node may have been a waiter that left", MutualExclusion, queue(noRelist), nil},
		// With more than one waiter, two of them can end up behind the
		// same node, as names sort by GUID: a herd, which two clients
		// avoid.
		{"whole-name-order", "orders the protected names by the whole name, whose random GUID comes first, instead of by the sequence number", MutualExclusion, queue(wholeNameOrder), []Option{WithClients(2)}},
		// With more than one waiter, every waiter watches the one node and
		// a release wakes them all: a herd, which two clients avoid.
		{"check-then-create", "checks that a plain (persistent) node is missing, then creates it: a crashed holder's node stays for ever", Liveness, func(conn recipe.Conn, path string) Locker {
			return &nodeLock{conn: conn, dir: path, flags: 0, wait: true}
		}, []Option{WithClients(2)}},
		{"timed-wait", "waits for the node ahead with a timeout, and reports the lock acquired when the wait times out", MutualExclusion, queue(timedWait), nil},
		{"wrong-unlock", "Unlock deletes the first node in the queue, assuming it is its own, which after a session expiry is another client's", MutualExclusion, queue(deleteFirst), nil},
		{"plain-retry", "creates a plain (unprotected) sequential node and retries the create after a lost reply, leaving the first node waiting for nobody", Liveness, queue(plainRetry), nil},
		{"spin", "a polling spin lock: tries to create the lock node, and on failure sleeps and tries again", Herd, func(conn recipe.Conn, path string) Locker {
			return &nodeLock{conn: conn, dir: path, flags: zk.FlagEphemeral}
		}, nil},
	}
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
)

// errLost is what a mutant's Unlock returns when its node was already gone.
var errLost = recipe.ErrLockLost

const (
	mutantBackoff    = 10 * time.Millisecond
	mutantTimedWait  = time.Second
	mutantSpinPause  = 20 * time.Millisecond
	mutantRetryLimit = 200
)

var openACL = zk.WorldACL(zk.PermAll)

// queueLock is the ZooKeeper lock recipe as a careful person writes it in
// an afternoon: a protected ephemeral sequential node, a listing ordered by
// sequence number, a data watch on the node just ahead, a new listing when
// it goes; lost replies are settled by finding the node by its GUID and
// checking its owner, and an Unlock whose reply was lost does not take the
// node's absence for a lost hold. Its variants each break one thing.
type queueLock struct {
	conn    recipe.Conn
	dir     string
	v       variant
	node    string // the own node's path while queued or holding
	holding bool
	token   int64
	session int64 // the session that owns the node, while holding
	guids   uint64
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
	for {
		if err := l.enqueue(ctx); err != nil {
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
// is all the whole-name-order mutant needs.
func (l *queueLock) newGUID() string {
	l.guids++
	a := splitmix(uint64(l.conn.SessionID()) ^ l.guids*0x9e3779b97f4a7c15)
	return fmt.Sprintf("%016x%016x", a, splitmix(a))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// enqueue creates the own node.
func (l *queueLock) enqueue(ctx context.Context) error {
	guid := l.newGUID()
	prefix := l.dir + "/_c_" + guid + "-lock-"
	if l.v == plainRetry {
		prefix = l.dir + "/lock-"
	}
	for tries := 0; ; tries++ {
		node, err := l.conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
		switch {
		case err == nil:
			l.node = node
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := makeDir(ctx, l.conn, l.dir); err != nil {
				return err
			}
			continue
		case isConnectionLoss(err) && l.v != plainRetry:
			node, ferr := l.findOwn(ctx, "_c_"+guid+"-")
			if ferr != nil {
				return ferr
			}
			if node != "" {
				l.node = node
				return nil
			}
		case isConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
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
		path := l.dir + "/" + c
		var st *zk.Stat
		var ok bool
		err := retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(path); return err })
		if err != nil {
			return "", err
		}
		if ok && st.EphemeralOwner == l.conn.SessionID() {
			return path, nil
		}
	}
	return "", nil
}

func (l *queueLock) children(ctx context.Context) ([]string, error) {
	var children []string
	err := retry(ctx, func() (err error) { children, _, err = l.conn.Children(l.dir); return err })
	return children, err
}

// order sorts the contenders: by sequence number, or, for the
// whole-name-order mutant, by the whole name.
func (l *queueLock) order(children []string) []string {
	queue := slices.Clone(children)
	if l.v == wholeNameOrder {
		slices.Sort(queue)
		return queue
	}
	slices.SortFunc(queue, func(a, b string) int { return strings.Compare(sequenceOf(a), sequenceOf(b)) })
	return queue
}

func sequenceOf(name string) string {
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
		queue := l.order(children)
		i := slices.Index(queue, own)
		if i < 0 {
			return false, nil
		}
		if i == 0 {
			return l.took(ctx)
		}
		pred := l.dir + "/" + queue[i-1]
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
		case isConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
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

// took reads the own node's czxid for the fencing token; false if the node
// is gone after all, or is not the current session's (a follower that lags
// can still show a node whose session has expired).
func (l *queueLock) took(ctx context.Context) (bool, error) {
	var ok bool
	var st *zk.Stat
	if err := retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(l.node); return err }); err != nil {
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
		_ = deleteNode(l.conn, l.node, l.conn.SessionID())
		l.node = ""
	}
}

func (l *queueLock) Unlock() error {
	if !l.holding {
		return zk.ErrNotLocked
	}
	l.holding, l.token = false, 0
	target := l.node
	l.node = ""
	if l.v == deleteFirst {
		children, err := l.children(context.Background())
		if err != nil {
			return err
		}
		if queue := l.order(children); len(queue) > 0 {
			target = l.dir + "/" + queue[0]
		}
	}
	return deleteNode(l.conn, target, l.session)
}

// nodeLock is a lock on one node of a fixed name, "lock" in the lock's
// directory. With wait set it checks the node is missing (watching it if
// not) and then creates it; otherwise it tries to create it and, if it
// exists, sleeps and tries again.
type nodeLock struct {
	conn    recipe.Conn
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
			case err != nil && !isConnectionLoss(err):
				return err
			case err != nil:
				if err := pause(ctx, mutantBackoff); err != nil {
					return err
				}
				continue
			}
		}
		_, err := l.conn.Create(node, nil, l.flags, openACL)
		switch {
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
		case isConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
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
func deleteNode(conn recipe.Conn, path string, session int64) error {
	unsure := false
	for tries := 0; ; tries++ {
		err := conn.Delete(path, -1)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if unsure && conn.SessionID() == session {
				return nil
			}
			return errLost
		case errors.Is(err, zk.ErrSessionExpired):
			return errLost
		case isConnectionLoss(err) && tries < mutantRetryLimit:
			unsure = true
			time.Sleep(mutantBackoff)
		default:
			return err
		}
	}
}

// makeDir creates dir and its ancestors as persistent nodes.
func makeDir(ctx context.Context, conn recipe.Conn, dir string) error {
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		err := retry(ctx, func() error {
			_, err := conn.Create(p, nil, 0, openACL)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// retry runs op until it returns anything but a connection loss.
func retry(ctx context.Context, op func() error) error {
	for tries := 0; ; tries++ {
		err := op()
		if !isConnectionLoss(err) || tries >= mutantRetryLimit {
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
