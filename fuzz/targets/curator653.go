package targets

import "github.com/zksim/zksim/fuzz"

// CURATOR-653: Curator's LeaderLatch as in 5.3.0 (curatorlatch.go's
// curatorLatch53), the last release before the fix, 9b3a1453 (5.4.0). The
// report's race is between Curator's state-listener thread, whose
// RECONNECTED reset gives leadership up and only then deletes the node,
// and its event thread, which takes leadership through that node in
// between; no request separates the two steps, and the harness, which
// interleaves at requests and events, does not draw it (the port runs
// both on one event thread). What the fix ended is what follows: a latch
// that leads replaces its node with one that is not first, and keeps its
// leadership. The harness reaches that through requests: two resets'
// creates (the latch's first, and the one of the reset that RECONNECTED
// began after a session expiry), whose callbacks land in turn, the
// latch taking leadership through the first.

func curator653() KnownBug {
	return KnownBug{
		Name:   "CURATOR-653",
		Title:  "Double leader for LeaderLatch",
		Recipe: "LeaderLatch, Curator's leader latch (5.3.0)",
		Mechanism: "A latch's node can change while it leads: reset() gives leadership up and makes a new node in the background, whose create callback sets it as the latch's node, deleting the one before; when an earlier reset's create lands after a later reset began, the latch leads through the earlier node, and the later reset's callback then replaces it, deleting the leader's node. " +
			"checkLeadership on the new node, when it is not first, watches the node ahead and leaves hasLeadership as it was: the latch goes on leading, its leader node deleted, while the candidate whose watch that delete fired leads too.",
		Schedule:  "the server expires a latch's session while the latch's first create is under way: that create runs in the new session, and the latch leads through its node; the create of the reset that RECONNECTED began lands next, and its callback takes the newer node, behind another candidate's, deleting the leader's (in the report, the RECONNECTED reset races the event thread instead, which takes leadership between the reset's setLeadership(false) and its delete)",
		Symptom:   "the latch says it leads, connected and with a live session, through a node of its own session that it deleted itself, while another candidate's node is first in line: that candidate leads once its watch on the deleted node fires, and there are two leaders, as in the report's timeline (a candidate whose watch came too late resets instead, and the latch leads alone through a node that no longer exists)",
		Fixed:     "fixed in Curator 5.4.0 (apache/curator#436, commit 9b3a1453, from apache/curator#398): checkLeadership gives leadership up (setLeadership(false)) when its node is not first",
		Detectors: []fuzz.Detector{fuzz.StateReport},
		// The check tells whose the node was: the latch's own session's.
		// (CURATOR-696's and CURATOR-498's nodes are an earlier
		// session's.)
		Mark:   "it was its session's own",
		Target: latchTarget(curatorLatch53),
		// Session expiries are drawn alone: one is enough, and with them
		// alone a seed tells the same stories twice (with every fault, 2
		// of 12 runs of one seed told a case otherwise: a create reached
		// the gate in one and not yet in the other, during a quorum
		// loss). The latch's line is out of order past the int32 wrap, as
		// for CURATOR-696.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.Expiry)...), fuzz.WithoutSequenceWrap()},
	}
}
