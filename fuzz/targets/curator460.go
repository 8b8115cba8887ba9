package targets

import "github.com/zksim/zksim/fuzz"

// CURATOR-460: Curator's LeaderLatch as in 4.0.1 (curatorlatch.go's
// curatorLatch4: LeaderLatch.java did not change between 4.0.1 and
// 4.1.0), its client built as the fix's own test builds it, with
// SessionConnectionStateErrorPolicy and StandardConnectionHandlingPolicy(30),
// on 4.0.1's ConnectionStateManager, whose state thread injects the
// session expiration only when its queue poll times out, at the whole
// negotiated timeout (curatorHandling.pollIgnoresPercent). 4.0.1 also
// lacks CURATOR-405's restart of the clock after an injection, which
// makes no difference here: the injection turns the state LOST at once.

func curator460() KnownBug {
	return KnownBug{
		Name:   "CURATOR-460",
		Title:  "Timed tolerance for connection suspended leads to simultaneous leaders",
		Recipe: "LeaderLatch, Curator's leader latch (4.0.1), with SessionConnectionStateErrorPolicy",
		Mechanism: "Under SessionConnectionStateErrorPolicy the latch keeps its leadership while SUSPENDED and gives it up on LOST, which Curator posts once a SUSPENDED spell has lasted the connection handling policy's share of the negotiated session timeout, set to 30% so that LOST comes before the server can expire the session (the client notices a dead connection only after two thirds of the timeout). " +
			"ConnectionStateManager's state thread waits on its queue for the whole timeout from the start of the spell, and checks the spell only when that wait ends: LOST comes at 100%, five thirds of the timeout after the last the server heard of the client, long after the server expired the session and the next candidate took the lead.",
		Schedule:  "the leader's client is cut off from the ensemble for longer than its session timeout: it notices after two thirds of the timeout and is SUSPENDED; the server expires its session at the timeout, deleting its latch node, and the next candidate leads; the cut heals, or the client's LOST comes, only later",
		Symptom:   "simultaneous leaders, as the report's timeline has them: the cut-off latch says it leads in a session the server has expired, while another candidate's node is first in line and it leads",
		Fixed:     "fixed in Curator 4.0.2 (apache/curator#262, commits 72b7b870 to 5920c744): the state thread's poll waits for the handling policy's share of the timeout, so LOST comes at 30% after SUSPENDED, before the server's expiry",
		Detectors: []fuzz.Detector{fuzz.StateReport},
		Mark:      "leadership lasts until LOST, and LOST has not come",
		Target: latchTarget(curatorLatchVersion{
			resetOnReconnect:   true,
			sessionErrorPolicy: true,
			handling:           curatorHandling{expirationPercent: 30, pollIgnoresPercent: true},
		}),
		// The bug needs a cut that outlasts the session timeout and
		// nothing else: partitions are drawn alone. (A pause, its process
		// frozen, keeps any latch leading past its session's expiry,
		// fixed or not; the check holds a frozen process to nothing.)
		// The latch's line is out of order past the int32 wrap, as for
		// CURATOR-696.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.Partition)...), fuzz.WithoutSequenceWrap()},
	}
}
