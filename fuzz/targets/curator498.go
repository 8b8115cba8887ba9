package targets

import "github.com/zksim/zksim/fuzz"

// CURATOR-498: Curator's LeaderLatch as in 4.1.0 (curatorlatch.go's
// curatorLatch4), with its background protected create as it was before
// 4.2.0's ProtectedMode: a retry after a connection loss looks for a node
// of its protected id and takes the one it finds, whatever session made
// it. reset(), which LeaderLatch 4.1.0 calls on every RECONNECTED, makes
// its node with that create.
//
// It needs the create to be applied and its reply lost, and the retry that
// follows a second later to run after Curator has given its session up. In
// the report's schedule both are one event: the leader commits the create
// and the quorum goes down with the reply, which the harness draws as a lost
// reply with a majority stopped as it leaves (zkfake.ReplyLoss.StopMembers),
// and the outage outlasts every session's timeout. (A lost reply alone lets
// the fake's client reconnect at once, the session intact, and a quorum lost
// a step later rarely comes within the retry's second: that way the harness
// found it from 19 of seeds 1 to 20.) The latch then leads through the old
// node with nothing watched when the stale create's callback lands between
// the RECONNECTED reset's create callback and that callback's listing
// (otherwise the reset's watch on the old node fires when the old session
// expires, and the latch resets); the two leaders show once the server
// expires the old session, which the wind-down waits for. Its hunts replay
// since the quorum's members stop together (zkfake.Server.StopMembers) and
// the ports' sleeps end just after the fake's reconnect rounds
// (threadWakeSkew).

func curator498() KnownBug {
	return KnownBug{
		Name:   "CURATOR-498",
		Title:  "Protected Mode creation can mistake closing session's node causing problems for many recipes such as LeaderLatch",
		Recipe: "LeaderLatch, Curator's leader latch (4.1.0), on its protected create",
		Mechanism: "A protected create that lost its connection retries by listing the parent for a node of its protected id, and takes the one it finds as the node it made; before 4.2.0 it does not ask whose session made it. " +
			"When the connection was lost for longer than the session timeout and Curator gave its session up on its own, the retry runs in the new session and finds the node the old session made, which the server still holds: LeaderLatch takes it as its node, leads through it, and goes on leading when the server expires the old session and deletes the node, while the next candidate leads too.",
		Schedule:  "a latch's protected create is applied and the ensemble loses its quorum as the reply leaves (or soon after a lost reply, before the create's retry runs), for longer than the client's session timeout; Curator injects a session expiration, and the retry runs in the session that opens when the quorum is back, while the old one, given a fresh timeout by the new leader, still lives; nothing is ahead of the found node",
		Symptom:   "two leaders: the latch says it leads, connected and with a live session, through a node the server has deleted with the old session, while another candidate's node is first (the report saw a latch node of an old session replace the leader's own, and another client elected)",
		Fixed:     "fixed in Curator 4.2.0 (apache/curator#303, commits 5751526d to 782448e7): ProtectedMode remembers the session a protected ephemeral create began in, and a node a retry finds once the session has changed is deleted, not taken",
		Detectors: []fuzz.Detector{fuzz.StateReport},
		// The check tells whose the node was: the client's earlier
		// session's, and the latch never had it while in that session.
		// (CURATOR-696's latch keeps a node it had; 4.1.0 resets on
		// RECONNECTED, and has not that path.)
		Mark:   "the latch never had the node while the client was in that session",
		Target: latchTarget(curatorLatch4),
		// The bug needs a create's reply lost and an outage long enough
		// for Curator to give up its session while the server keeps it:
		// lost replies and quorum losses are drawn alone, over schedules
		// of 300 actions, as CURATOR-696's are over 200: one case must
		// hold the outage, the old session's expiry after it and the
		// latch's leading through the old node meanwhile.
		// The port's other bug, the one CURATOR-653's fix (9b3a1453,
		// 5.4.0) ended, shows up here
		// too: a stale create callback replaces the node of a latch that
		// leads, and 4.1.0's checkLeadership keeps the leadership when the
		// new node is not first (the check finds a leader whose node is
		// behind another, with no mark, or whose node of its own session
		// is gone, with the CURATOR-653 entry's mark). The latch's line
		// is out of order past the int32 wrap.
		Options: []fuzz.Option{fuzz.WithSteps(300), fuzz.WithoutFaults(allFaultsBut(fuzz.QuorumLoss, fuzz.LostReply)...),
			fuzz.WithoutSequenceWrap()},
	}
}
