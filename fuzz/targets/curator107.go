package targets

import (
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// CURATOR-107: Curator's InterProcessMutex before commit 8a94985c (2014):
// the port of curator79.go (2.6.0's create path) with LockInternals'
// loop watching the node ahead with checkExists, as it did then.

func curator107() KnownBug {
	return KnownBug{
		Name:   "CURATOR-107",
		Title:  "Regarding large number of watch count",
		Recipe: "InterProcessMutex, Curator's lock (2.4)",
		Mechanism: "LockInternals.internalLockLoop watches the contender ahead with checkExists().usingWatcher, which sets a watch whether the node is there or not, and waits only if it is. " +
			"When the contender ahead released between the listing and the checkExists, the watch is one for a creation that never comes: the loop goes on, and the watch stays on the server for as long as the session.",
		Schedule:  "no fault: the holder releases between a contender's listing of the children and its checkExists on the holder's node",
		Symptom:   "the servers' watch count grows with every such race, as the report saw with lock.acquire and lock.release in a loop",
		Fixed:     "fixed in May 2014 (commit 8a94985c, apache/curator#7): the loop reads the node ahead with getData, which sets no watch on a node that is not there",
		Detectors: []fuzz.Detector{fuzz.Leak},
		Mark:      "the server still holds",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			m := newCurator2Mutex(newCurator2Client(conn), dir)
			m.existsWatch = true
			return newCurator79Mutex(m)
		}),
		// The bug needs no fault; the lock's other bugs do (CURATOR-79's
		// orphan, on an interrupt, shows as a node left, not a watch).
		// Past the int32 wrap its queue is out of order; a child it did
		// not make sorts into it.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(),
			fuzz.WithoutDetectors(fuzz.Herd)},
	}
}
