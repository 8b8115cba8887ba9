package targets

import (
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// shayhatsor/zookeeper#26: ZooKeeper's own lock recipe, WriteLock, as it
// is since the fix of ZOOKEEPER-2931 (3.4.12 on, 3.8 too): the port of
// zookeeper2931.go with the sequence number compared first.

func writeLock26() KnownBug {
	return KnownBug{
		Name:   "shayhatsor/zookeeper#26",
		Title:  "WriteLock may never be granted",
		Recipe: "WriteLock, ZooKeeper's lock recipe (zookeeper-recipes-lock, 3.4.12 to 3.8)",
		Mechanism: "WriteLock lists the children, picks the node just ahead of its own, and sets a watch with exists on it; if that node is gone by then (its holder unlocked between the listing and the exists), exists returns null, WriteLock logs \"Could not find the stats for less than me\", and lock() returns false. " +
			"Nothing is watched that will ever fire, so the LockListener that lock() promised is never called.",
		Schedule:  "no fault: the holder unlocks between a contender's getChildren and its exists on the holder's node",
		Symptom:   "lock() returns false and the lock is never granted, though it is free: the contender and everyone queued behind it wait for ever",
		Fixed:     "open in ZooKeeper's WriteLock (3.8 has the same loop); reported against its C# port, ZooKeeperNetEx, by a user who checked the Java recipe too; Apache Helix's copy of WriteLock was fixed in apache/helix#44 (2016) by listing the children again",
		Detectors: []fuzz.Detector{fuzz.Liveness},
		Mark:      "'s Lock has not returned",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			return &writeLockUser{conn: conn, dir: dir, sequenceFirst: true}
		}),
		// The bug needs no fault, and WriteLock's other bugs do (see
		// zookeeper2931.go).
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutForeignChildren(), fuzz.WithoutSequenceWrap()},
	}
}
