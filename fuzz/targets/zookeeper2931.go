package targets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// ZOOKEEPER-2931: ZooKeeper's own lock recipe
// (org.apache.zookeeper.recipes.lock.WriteLock, with its ProtocolSupport
// and ZNodeName) as it was before the fix, ported line for line. Its nodes
// are named "x-<session id>-<sequence>", and ZNodeName.compareTo compared
// the prefix, "x-<session id>", before the sequence number.

func zookeeper2931() KnownBug {
	return KnownBug{
		Name:   "ZOOKEEPER-2931",
		Title:  "WriteLock recipe: incorrect znode ordering when the sessionId is part of the znode name",
		Recipe: "WriteLock, ZooKeeper's lock recipe (zookeeper-recipes-lock)",
		Mechanism: "WriteLock names its node x-<sessionId>-<sequence> and sorts the children with ZNodeName.compareTo, which compares the prefix x-<sessionId> first and the sequence number only between equal prefixes. " +
			"So the queue is ordered by session id: a contender whose session id is lower than the holder's sorts ahead of it, finds nothing less than its own node, and takes the lock.",
		Schedule:  "no fault: a client whose session id is lower than the holder's (an older session, or the holder restarted with a new one) calls Lock while the lock is held",
		Symptom:   "two clients hold the lock at once",
		Fixed:     "fixed in 3.4.12 and 3.5.4 (apache/zookeeper#413): compareTo compares the sequence number first, and the prefix only between equal sequence numbers",
		Detectors: []fuzz.Detector{fuzz.MutualExclusion},
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			return &writeLockUser{conn: conn, dir: dir}
		}),
		// The bug needs no fault, and WriteLock's other bugs do: an
		// Unlock that takes NoNode for a release, after an expiry or a
		// delete from outside; children it did not make, sorted into its
		// queue.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutForeignChildren(), fuzz.WithoutSequenceWrap()},
	}
}

// writeLockUser uses a WriteLock as its documentation asks: lock(), and if
// it returns false, wait for the LockListener's lockAcquired; unlock() to
// release or to leave the queue. A Lock given up closes its WriteLock, so
// that the watcher it left behind cannot queue again (WriteLock's watcher
// calls lock() whenever it fires), and the next Lock makes a new one.
type writeLockUser struct {
	conn zktest.Conn
	dir  string
	wl   *writeLock
	// sequenceFirst: the WriteLock fixed for ZOOKEEPER-2931 (3.4.12 on).
	sequenceFirst bool
}

func (u *writeLockUser) Lock(ctx context.Context) error {
	if u.wl == nil {
		// WriteLock makes its directory but not the directory's parent.
		_, _ = u.conn.Create(path.Dir(u.dir), nil, 0, zktest.OpenACL)
		u.wl = &writeLock{conn: u.conn, dir: u.dir, mon: make(chan struct{}, 1), sequenceFirst: u.sequenceFirst}
	}
	acquired := make(chan struct{}, 1)
	u.wl.setListener(func() { acquired <- struct{}{} })
	ok, err := u.wl.lock()
	if err != nil || ok {
		return err
	}
	select {
	case <-acquired:
		return nil
	case <-ctx.Done():
		err := u.wl.unlock()
		u.wl.close()
		u.wl = nil
		return errors.Join(ctx.Err(), err)
	}
}

func (u *writeLockUser) Unlock() error {
	if u.wl == nil {
		return nil
	}
	return u.wl.unlock()
}

// writeLock is WriteLock. Its synchronized methods hold mon, Java's
// monitor: a channel, so that a goroutine waiting for it is durably
// blocked in a synctest bubble (one waiting on a sync.Mutex is not, and
// would keep the harness from ever seeing the clients settle). Java's
// exceptions are Go errors: go-zookeeper's connection loss for
// KeeperException.ConnectionLossException, zk.ErrSessionExpired for
// SessionExpiredException, zk.ErrNoNode for NoNodeException.
type writeLock struct {
	conn          zktest.Conn
	dir           string
	mon           chan struct{}
	closed        bool
	sequenceFirst bool

	id           string
	idName       znodeName
	ownerID      string
	lastChildID  string
	lockAcquired func()
}

// WriteLock's data and ProtocolSupport's retry settings.
var writeLockData = []byte{0x12, 0x34}

const (
	writeLockRetryDelay = 500 * time.Millisecond
	writeLockRetryCount = 10
)

func (l *writeLock) setListener(f func()) {
	l.mon <- struct{}{}
	defer func() { <-l.mon }()
	l.lockAcquired = f
}

func (l *writeLock) close() {
	l.mon <- struct{}{}
	defer func() { <-l.mon }()
	l.closed = true
}

// lock is WriteLock.lock.
func (l *writeLock) lock() (bool, error) {
	l.mon <- struct{}{}
	defer func() { <-l.mon }()
	if l.closed {
		return false, nil
	}
	l.ensurePathExists(l.dir)
	var ok bool
	err := l.retryOperation(func() (err error) { ok, err = l.execute(); return err })
	return ok, err
}

// unlock is WriteLock.unlock: one delete, not retried; NoNode is fine,
// any other failure is thrown (here returned), and either way the id is
// forgotten.
func (l *writeLock) unlock() error {
	l.mon <- struct{}{}
	defer func() { <-l.mon }()
	if l.closed || l.id == "" {
		return nil
	}
	defer func() { l.id = "" }()
	if err := l.conn.Delete(l.id, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("WriteLock.unlock: %w", err)
	}
	return nil
}

// retryOperation is ProtocolSupport.retryOperation: op again after a
// connection loss, up to ten times, waiting i×500ms before the i-th retry;
// an expired session is thrown at once.
func (l *writeLock) retryOperation(op func() error) error {
	var first error
	for i := range writeLockRetryCount {
		err := op()
		if !recipe.IsConnectionLoss(err) {
			return err
		}
		if first == nil {
			first = err
		}
		if i > 0 {
			time.Sleep(time.Duration(i) * writeLockRetryDelay)
		}
	}
	return first
}

// ensurePathExists is ProtocolSupport.ensurePathExists: exists, else
// create, retried; whatever fails is logged and dropped.
func (l *writeLock) ensurePathExists(p string) {
	_ = l.retryOperation(func() error {
		ok, _, err := l.conn.Exists(p)
		if err != nil || ok {
			return err
		}
		_, err = l.conn.Create(p, nil, 0, zktest.OpenACL)
		return err
	})
}

// findPrefixInChildren is LockZooKeeperOperation.findPrefixInChildren. A
// node found by its prefix is kept by its bare name, as WriteLock kept it,
// where a created one is kept by its path.
func (l *writeLock) findPrefixInChildren(prefix string) error {
	names, _, err := l.conn.Children(l.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			l.id = name
			break
		}
	}
	if l.id == "" {
		id, err := l.conn.Create(l.dir+"/"+prefix, writeLockData, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
		if err != nil {
			return err
		}
		l.id = id
	}
	return nil
}

// execute is LockZooKeeperOperation.execute.
func (l *writeLock) execute() (bool, error) {
	for {
		if l.id == "" {
			prefix := "x-" + strconv.FormatInt(l.conn.SessionID(), 10) + "-"
			if err := l.findPrefixInChildren(prefix); err != nil {
				return false, err
			}
			l.idName = newZNodeName(l.id, l.sequenceFirst)
		}
		if l.id != "" {
			names, _, err := l.conn.Children(l.dir)
			if err != nil {
				return false, err
			}
			if len(names) == 0 {
				// "No children when we've just created one! Lets
				// recreate it..."
				l.id = ""
			} else {
				// A TreeSet: sorted by compareTo, one of each equal.
				var sorted []znodeName
				for _, name := range names {
					n := newZNodeName(l.dir+"/"+name, l.sequenceFirst)
					if !containsName(sorted, n) {
						sorted = append(sorted, n)
					}
				}
				sortNames(sorted)
				l.ownerID = sorted[0].name
				var lessThanMe []znodeName
				for _, n := range sorted {
					if n.compareTo(l.idName) < 0 {
						lessThanMe = append(lessThanMe, n)
					}
				}
				if len(lessThanMe) > 0 {
					l.lastChildID = lessThanMe[len(lessThanMe)-1].name
					ok, _, watch, err := l.conn.ExistsW(l.lastChildID)
					if err != nil {
						return false, err
					}
					if ok {
						go l.lockWatcher(watch)
						return false, nil
					}
					// "Could not find the stats for less than me"
				} else if l.isOwner() {
					if l.lockAcquired != nil {
						l.lockAcquired()
					}
					return true, nil
				}
			}
		}
		if l.id != "" {
			return false, nil
		}
	}
}

// lockWatcher is LockWatcher: whatever the event, it calls lock() again.
func (l *writeLock) lockWatcher(watch <-chan zk.Event) {
	if _, ok := <-watch; !ok {
		return
	}
	_, _ = l.lock()
}

// isOwner is WriteLock.isOwner.
func (l *writeLock) isOwner() bool { return l.id != "" && l.ownerID != "" && l.id == l.ownerID }

// znodeName is ZNodeName: a name, the prefix before its last '-', and the
// int after it (-1 if it is none); sequenceFirst orders it as the fix of
// ZOOKEEPER-2931 does.
type znodeName struct {
	name, prefix  string
	sequence      int32
	sequenceFirst bool
}

func newZNodeName(name string, sequenceFirst bool) znodeName {
	n := znodeName{name: name, prefix: name, sequence: -1, sequenceFirst: sequenceFirst}
	if i := strings.LastIndex(name, "-"); i >= 0 {
		n.prefix = name[:i]
		// Integer.parseInt: an int, sign allowed, or the -1 stays.
		if s, err := strconv.ParseInt(name[i+1:], 10, 32); err == nil {
			n.sequence = int32(s)
		}
	}
	return n
}

// compareTo is ZNodeName.compareTo: before ZOOKEEPER-2931's fix, the
// prefix first, then the sequence number (a name without one last); after
// it, the sequence number first. Both in Java's int arithmetic, which
// wraps.
func (n znodeName) compareTo(that znodeName) int32 {
	if n.sequenceFirst {
		// 3.4.12 on: the sequence numbers' difference, then the prefixes.
		if answer := n.sequence - that.sequence; answer != 0 {
			return answer
		}
		return int32(strings.Compare(n.prefix, that.prefix))
	}
	if c := strings.Compare(n.prefix, that.prefix); c != 0 {
		return int32(c)
	}
	s1, s2 := n.sequence, that.sequence
	switch {
	case s1 == -1 && s2 == -1:
		return int32(strings.Compare(n.name, that.name))
	case s1 == -1:
		return 1
	case s2 == -1:
		return -1
	}
	return s1 - s2
}

func containsName(names []znodeName, n znodeName) bool {
	for _, m := range names {
		if m.compareTo(n) == 0 {
			return true
		}
	}
	return false
}

// sortNames sorts as the TreeSet iterates: by compareTo.
func sortNames(names []znodeName) {
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j].compareTo(names[j-1]) < 0; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}
