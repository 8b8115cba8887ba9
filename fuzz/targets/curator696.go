package targets

import "github.com/zksim/zksim/fuzz"

// CURATOR-696: Curator's LeaderLatch as at 3468ee91 (curatorlatch.go's
// curatorLatch5; released in 5.6.0), the last change before the fix,
// 1027c2cd. Since CURATOR-644/645 (4b96f18b, 5.4.0) RECONNECTED lists the
// children instead of resetting, and the latch keeps its node across a
// lost session: after Curator gave its session up on its own, the node it
// finds first is the old session's, which the server still holds.

func curator696() KnownBug {
	return KnownBug{
		Name:   "CURATOR-696",
		Title:  "Double leader for LeaderLatch",
		Recipe: "LeaderLatch, Curator's leader latch (5.4.0 to 5.6.0)",
		Mechanism: "On RECONNECTED the latch lists the children and, if its node is first, takes leadership, without asking whose the node is; it kept its node across a LOST, so after Curator gave up a session the server still held, the node it leads through is the old session's. " +
			"When the server expires that session the node goes, and the latch, a leader, watches nothing: it goes on leading while the next candidate, whose watch fires, leads too.",
		Schedule:  "a latch's node is first (it leads, or is about to) when the ensemble loses its quorum for longer than the client's session timeout: Curator injects a session expiration and opens a new session once the quorum is back, while the new leader gives the old session a fresh timeout; the latch leads through the old node until that timeout runs out",
		Symptom:   "two leaders, as the report's timeline has it: the latch says it leads, connected and with a live session, through a node the server has deleted, while another candidate's node is first",
		Fixed:     "fixed in Curator 5.7.0 (apache/curator#500, commit 1027c2cd): checkLeadership reads its first node, and leads only if the node's ephemeral owner is the client's session now; otherwise it resets",
		Detectors: []fuzz.Detector{fuzz.StateReport},
		// The check tells whose the node was: the client's earlier
		// session's, and the latch had it while in that session. (Its
		// protected create, since 4.2.0, no longer takes an old session's
		// node in a new one, CURATOR-498's way to the same node.)
		Mark:   "the latch had the node while the client was in that session",
		Target: latchTarget(curatorLatch5),
		// The bug needs an outage long enough for Curator to give up its
		// session while the server keeps it: a quorum lost for longer
		// than the session timeout, when no leader expires sessions, is
		// drawn alone. Its chain (the outage, the new session, the old
		// session's fresh timeout running out) outlasts most schedules of
		// 80 actions, whose wind-down closes the latches first: 200 let
		// it finish. The latch's line is out of order past the int32 wrap
		// (LockInternals sorts the text after "latch-"): a new node sorts
		// ahead of the leader's, a finding of the check on another
		// account.
		Options: []fuzz.Option{fuzz.WithSteps(200), fuzz.WithoutFaults(allFaultsBut(fuzz.QuorumLoss)...),
			fuzz.WithoutSequenceWrap()},
	}
}
