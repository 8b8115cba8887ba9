package targets

import (
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// CURATOR-604: Curator's InterProcessMutex as it is from 4.2.0 on:
// curator2.go's LockInternals with the protected create of CURATOR-498's
// fix, which no longer takes an old session's node as its own. The lock
// loop's listing still runs in the retry loop, which retries an expired
// session's call in the next session, and the node it stands in line
// with is the one the old session made.

func curator604() KnownBug {
	return KnownBug{
		Name:   "CURATOR-604",
		Title:  "Double locking issue while using InterProcessMutex lock code",
		Recipe: "InterProcessMutex, Curator's lock (4.2.0 and later)",
		Mechanism: "LockInternals.internalLockLoop lists the lock's children within the retry loop, which retries a call that failed with an expired session in the next session, and then looks for its own node, made by the session that expired, in what the new session sees. " +
			"When Curator gave up the session on its own (a connection down for longer than the session timeout), the server still holds the old session and its node, and when nothing is ahead of that node the loop holds the lock on it, about to be deleted.",
		Schedule:  "the ensemble loses its quorum while a contender's lock loop lists the children; the outage outlasts the session timeout by Curator's clock, so Curator gives up its session, and when the quorum is back the listing runs on the new session while the old one, given a fresh timeout by the new leader, still lives",
		Symptom:   "two clients hold the lock: one whose lock node is gone, as the report found, and the next contender, which takes the lock once the old session's node is deleted",
		Fixed:     "open upstream; CURATOR-689 proposes guarding the lock holder's writes with its lock node (a multi with a check)",
		Detectors: []fuzz.Detector{fuzz.MutualExclusion},
		Mark:      "gives up its session",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			c := newCurator2Client(conn)
			c.protectedSession, c.injectExpiry = true, true
			return &curatorMutex{m: newCurator2Mutex(c, dir)}
		}),
		// The bug needs an outage long enough for Curator to give up its
		// session while the server keeps it: a quorum lost for minutes,
		// when no leader expires sessions, is drawn alone, over schedules
		// of 160 actions (of 80, the slowest of 20 seeds took 1,629 cases,
		// and one took 2,013, past the 2,000 TestCatalogue allows a seed,
		// once watch events came at their instant during an advance; of
		// 160, at most 745). Curator gives
		// the session up from ConnectionStateManager's thread, also while
		// no call is under way; a Locker has no goroutine of its
		// process's own, so the port looks while an acquire or a release
		// is under way. The queue is out of order past the int32 wrap,
		// and a child the lock did not make sorts into it; a timed
		// acquire that gives up leaves its getData watch armed, a herd
		// by the harness's rule.
		Options: []fuzz.Option{fuzz.WithSteps(160), fuzz.WithoutFaults(allFaultsBut(fuzz.QuorumLoss)...),
			fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(), fuzz.WithoutDetectors(fuzz.Herd)},
	}
}
