package targets

import (
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#490: kazoo's Lock as kazoo 2.2.1 had it (the port of
// kazoo429.go, newKazooLock22), which watched the node ahead of its own
// with exists(), as every kazoo before 2.5.0 did.

func kazoo490() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#490",
		Title:  "fix (recipe): don't set creation watch on lock predecessor node",
		Recipe: "Lock, kazoo's lock recipe (kazoo.recipe.lock, kazoo 2.2.1)",
		Mechanism: "Lock watches the contender ahead of it with exists(), which sets a watch whether the node is there or not. " +
			"When the contender ahead is gone between the listing and the exists (it released), the watch waits for a creation of that node, which never comes: the lock goes on, and the watch stays on the server for the life of the session.",
		Schedule:  "no fault: the holder releases between a contender's listing of the children and its exists on the holder's node",
		Symptom:   "the server keeps a creation watch for every such race, for as long as the session lives: watches leak",
		Fixed:     "fixed in kazoo 2.5.0 by this pull request (commit 9b0a793, 2018): the predecessor is read with get(), which sets no watch on a node that is not there; the report says it was seen only in production, with no way to test it",
		Detectors: []fuzz.Detector{fuzz.Leak},
		Mark:      "the server still holds",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			return &kazooLockUser{lock: newKazooLock22(newKazooClient(conn, true), dir, nil)}
		}),
		// The bug needs no fault; kazoo's Lock has others that do.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren()},
	}
}
