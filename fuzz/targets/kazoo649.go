package targets

import (
	"slices"
	"strings"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#649: kazoo's ReadLock and WriteLock (kazoo/recipe/lock.py,
// kazoo 2.8.0), which are its Lock with other node names: kazoo730.go's
// port of Lock (2.9.0) with 2.8.0's _get_predecessor, the one place where
// the two versions differ (python-zk/kazoo#650, the fix, changed only it).

func kazoo649() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#649",
		Title:  "Deadlock with read/write lock recipe",
		Recipe: "ReadLock and WriteLock, kazoo's read/write lock recipe (kazoo.recipe.lock, kazoo 2.8.0)",
		Mechanism: "_get_predecessor walks the writers' nodes in order and stops at the lock's own node, but a reader's node is no writer's and never comes: the reader takes the last writer of the whole queue for its predecessor, one queued after it included. " +
			"A reader that re-lists once the writer ahead of it has released waits for the writer behind it, which waits for the reader: neither ever goes on.",
		Schedule:  "no fault: a writer holds, a reader queues, a second writer queues behind the reader, and the first writer releases",
		Symptom:   "the reader and the second writer wait for each other for ever (or a reader waits for a writer that came after it)",
		Fixed:     "fixed in kazoo 2.9.0 (python-zk/kazoo#650): _get_predecessor keeps only contenders whose sequence number is less than the node's own",
		Detectors: []fuzz.Detector{fuzz.Liveness},
		// A reader that waits and never returns: "client N's RLock has not
		// returned" when the whole lock stalls, "its RLock has waited"
		// when the reader alone waits for nothing. With no fault drawn,
		// only this bug keeps a reader waiting.
		Mark:   "RLock has ",
		Target: RWMutex(newKazooRW(kazooGetPredecessor28)),
		// The bug needs no fault. Kazoo's lock orders its queue by the
		// sequence numbers as strings, which the wrap breaks (#730), and
		// takes a foreign child named like its nodes for a contender.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren()},
	}
}

// kazooRW is a client's kazoo ReadLock and WriteLock on one path, each
// made once, as kazoo's documentation makes them.
type kazooRW struct{ r, w *kazooLockUser }

func (k kazooRW) ReadLocker() fuzz.Locker  { return k.r }
func (k kazooRW) WriteLocker() fuzz.Locker { return k.w }

// Reads tells a ReadLock's node by its _NODE_NAME.
func (kazooRW) Reads(node string) bool { return strings.Contains(node, kazooReader.nodeName) }

// newKazooRW makes the NewRWLocker of kazoo's read/write lock with the
// _get_predecessor given.
func newKazooRW(predecessor func(l *kazooLock, node string) (string, error)) NewRWLocker {
	return func(conn zktest.Conn, dir string) RWLocker {
		client := newKazooClient(conn, false)
		r, w := newKazooLock(client, dir, kazooReader), newKazooLock(client, dir, kazooWriter)
		r.predecessor, w.predecessor = predecessor, predecessor
		return kazooRW{r: &kazooLockUser{lock: r}, w: &kazooLockUser{lock: w}}
	}
}

// kazooGetPredecessor28 is _get_predecessor as kazoo 2.8.0 had it: the
// contender sorted just before the node's own match, and, when the node
// is no contender (a reader's, to a reader), the last contender of all.
func kazooGetPredecessor28(l *kazooLock, node string) (string, error) {
	children, err := l.client.getChildren(l.path)
	if err != nil {
		return "", err
	}
	foundSelf, selfMatches := false, false
	// "Filter out the contenders using the computed regex"
	var contenders [][2]string // the name, its sequence number
	for _, child := range children {
		m := l.contendersRE.FindStringSubmatch(child)
		if m != nil {
			contenders = append(contenders, [2]string{child, m[1]})
		}
		if child == node {
			// found_self = match: None when the node is no contender.
			foundSelf, selfMatches = true, m != nil
		}
	}
	if !foundSelf {
		return "", errForceRetry
	}
	predecessor := ""
	// "Sort the contenders using the sequence number extracted by the
	// regex, then extract the original string."
	slices.SortStableFunc(contenders, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
	for _, c := range contenders {
		if selfMatches && c[0] == node { // match is found_self
			break
		}
		predecessor = c[0]
	}
	return predecessor, nil
}
