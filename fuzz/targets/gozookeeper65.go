package targets

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// go-zookeeper/zk#65: go-zookeeper's zk.Lock as it was in v1.0.2 (lock.go
// at c9bbb5d, the commit before the fix 21b4929), ported line for line
// against *zk.Conn and run over real go-zookeeper clients (fuzz.LockZK),
// as ZKLock runs v1.0.4's. Its parseSeq split the node's name on "-" and
// read the last part, so the minus sign of a sequence number past the
// int32 wrap was lost: "-2147483648" read as 2147483648, "-0000000001" as
// 1, and every negative number as its absolute value, in reverse order of
// creation.

func goZookeeper65() KnownBug {
	return KnownBug{
		Name:   "go-zookeeper/zk#65",
		Title:  "Fix parseSeq incorrectly parsing negative sequence number",
		Recipe: "zk.Lock, go-zookeeper's lock recipe (v1.0.2)",
		Mechanism: "parseSeq splits the node's name on \"-\" and parses the last part, so a negative sequence number (the counter past the int32 wrap, or anywhere below zero) loses its sign: -2147483648 reads as 2147483648, -2147483647 as 2147483647, and a later node reads lower than an earlier one. " +
			"A contender that comes after the holder finds its own number lowest, takes the lock, and the holder still holds it.",
		Schedule:  "no fault: the lock directory's sequence counter at or past the int32 wrap (or just below zero), and a second client calling Lock while the lock is held",
		Symptom:   "two clients hold the lock at once; each new contender takes it from whoever holds it",
		Fixed:     "fixed in v1.0.3 (go-zookeeper/zk#65, 21b4929, 2021-09-02): parseSeq splits on \"lock-\", which keeps the sign. It left the search for the node ahead among numbers above -1 (prevSeq := -1), so past the wrap v1.0.4's Lock finds none, watches the directory's path with a trailing slash and fails with zk.ErrInvalidPath, leaving its node behind (zk.Lock/negative-sequence, open)",
		Detectors: []fuzz.Detector{fuzz.MutualExclusion},
		Mark:      "lock--",
		Target: fuzz.LockZK(func(conn *zk.Conn, path string) fuzz.Locker {
			return zkLock102{l: newLock102(conn, path, zk.WorldACL(zk.PermAll))}
		}),
		// The bug needs no fault but the sequence counter near the wrap;
		// the faults trip v1.0.2's other, still open bug first: an error
		// after the create leaves the node behind (#229). A child the
		// lock did not make fails every Lock in strconv (foreign
		// children), which is not this bug either.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutForeignChildren()},
	}
}

// zkLock102 is a lock102 as a fuzz.Locker; its Lock takes no context, as
// zk.Lock's did not, and heeds no deadline.
type zkLock102 struct{ l *lock102 }

func (z zkLock102) Lock(context.Context) error { return z.l.Lock() }

func (z zkLock102) Unlock() error { return z.l.Unlock() }

// errDeadlock102 and errNotLocked102 are v1.0.2's zk.ErrDeadlock and
// zk.ErrNotLocked.
var (
	errDeadlock102  = errors.New("zk: trying to acquire a lock twice")
	errNotLocked102 = errors.New("zk: not locked")
)

// lock102 is zk.Lock in v1.0.2.
type lock102 struct {
	c        *zk.Conn
	path     string
	acl      []zk.ACL
	lockPath string
	seq      int
}

func newLock102(c *zk.Conn, path string, acl []zk.ACL) *lock102 {
	return &lock102{c: c, path: path, acl: acl}
}

// parseSeq102 is the bug: a split on "-", whose last part has lost the
// sign of a negative number ("lock--2147483648" ends in "2147483648").
func parseSeq102(path string) (int, error) {
	parts := strings.Split(path, "-")
	// python client uses a __LOCK__ prefix
	if len(parts) == 1 {
		parts = strings.Split(path, "__")
	}
	return strconv.Atoi(parts[len(parts)-1])
}

// Lock is Lock: LockWithData with no data.
func (l *lock102) Lock() error { return l.LockWithData([]byte{}) }

// LockWithData is LockWithData in v1.0.2, unchanged but for the names.
func (l *lock102) LockWithData(data []byte) error {
	if l.lockPath != "" {
		return errDeadlock102
	}
	prefix := fmt.Sprintf("%s/lock-", l.path)
	path := ""
	var err error
	for i := 0; i < 3; i++ {
		path, err = l.c.CreateProtectedEphemeralSequential(prefix, data, l.acl)
		if err == zk.ErrNoNode {
			// Create parent node.
			parts := strings.Split(l.path, "/")
			pth := ""
			for _, p := range parts[1:] {
				var exists bool
				pth += "/" + p
				exists, _, err = l.c.Exists(pth)
				if err != nil {
					return err
				}
				if exists {
					continue
				}
				_, err = l.c.Create(pth, []byte{}, 0, l.acl)
				if err != nil && err != zk.ErrNodeExists {
					return err
				}
			}
		} else if err == nil {
			break
		} else {
			return err
		}
	}
	if err != nil {
		return err
	}
	seq, err := parseSeq102(path)
	if err != nil {
		return err
	}
	for {
		children, _, err := l.c.Children(l.path)
		if err != nil {
			return err
		}
		lowestSeq := seq
		prevSeq := -1
		prevSeqPath := ""
		for _, p := range children {
			s, err := parseSeq102(p)
			if err != nil {
				return err
			}
			if s < lowestSeq {
				lowestSeq = s
			}
			if s < seq && s > prevSeq {
				prevSeq = s
				prevSeqPath = p
			}
		}
		if seq == lowestSeq {
			// Acquired the lock
			break
		}
		// Wait on the node next in line for the lock
		_, _, ch, err := l.c.GetW(l.path + "/" + prevSeqPath)
		if err != nil && err != zk.ErrNoNode {
			return err
		} else if err != nil && err == zk.ErrNoNode {
			// try again
			continue
		}
		ev := <-ch
		if ev.Err != nil {
			return ev.Err
		}
	}
	l.seq = seq
	l.lockPath = path
	return nil
}

// Unlock is Unlock in v1.0.2.
func (l *lock102) Unlock() error {
	if l.lockPath == "" {
		return errNotLocked102
	}
	if err := l.c.Delete(l.lockPath, -1); err != nil {
		return err
	}
	l.lockPath = ""
	l.seq = 0
	return nil
}
