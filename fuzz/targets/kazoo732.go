package targets

import (
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#732: kazoo's Lock (kazoo 2.9.0, kazoo730.go's port;
// 2.11.0 has the same code), used as the report's workers use it: a new
// Lock for every attempt, acquire(blocking=False), and release() after
// the work. A failed attempt cleans up with _best_effort_cleanup, one
// delete whose KazooException is swallowed.

func kazoo732() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#732",
		Title:  "Non-blocking lock acquisition failure can \"leak\" the ephemeral lock node.",
		Recipe: "Lock, kazoo's lock recipe (kazoo.recipe.lock, kazoo 2.9.0)",
		Mechanism: "An acquire that does not get the lock (blocking=False and the lock taken, or a timeout or cancel) deletes its node in _best_effort_cleanup, once, and swallows any KazooException. " +
			"If the connection is lost then and the session resumes, the node stays in the queue with nobody to delete it: once the holder releases, it is first, and nobody ever gets the lock again.",
		Schedule:  "a client's acquire(blocking=False) finds the lock taken, and the delete of its node is lost with the connection (the request or its reply lost) while the session lives on",
		Symptom:   "the lock is never acquired again (every contender waits behind the leaked node), until the leaking client's session ends",
		Fixed:     "open upstream: python-zk/kazoo#760 (open since 2025-02-26) would retry the cleanup's delete until it succeeds",
		Detectors: []fuzz.Detector{fuzz.Liveness, fuzz.Leak},
		Mark:      "'s delete /locks/mutex/",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			client := newKazooClient(conn, false)
			return &kazooLockUser{client: client, fresh: func() *kazooLock { return newKazooLock(client, dir, kazooExclusive) }}
		}),
		// The wrap trips #730, and a child that looks like a contender
		// (a foreign "__lock__" name) blocks kazoo's Lock by design. A
		// process that closes its client (stop(), fuzz.ClientCloser)
		// leads to the lock's other traits first: its release returns
		// True though the node went with the session; someone else's delete of a node
		// lets two clients hold (kazoo's Lock never checks its node while
		// it holds). None of these is this bug. The herd rule is left
		// out: an attempt that was cancelled, or timed out, leaves its
		// watch on the node that was ahead of it (ZooKeeper before 3.6 cannot remove a watch), and
		// when that node goes the client's next attempt, waiting on
		// another node, is notified too; the rule takes the stale
		// notification for a second waiter woken, though nothing of the
		// client's lists the directory for it.
		Options: []fuzz.Option{fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(), fuzz.WithoutFaults(fuzz.Close, fuzz.OutsideWrite), fuzz.WithoutDetectors(fuzz.Herd)},
	}
}
