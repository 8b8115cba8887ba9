package fuzz

import (
	"fmt"
	"time"
)

// An ensemble loses its quorum when a majority of its members stop: no
// write or read gets through, and — with no leader to expire them — no
// session expires, however long the outage lasts. When the members start
// again the sessions resume with every node they had, and a fresh timeout
// each. A recipe whose timers assume a session is gone after a minute
// without the server (a background deletion that gives up) meets its
// mistake here.

// quorumPairs are the pairs of members an actQuorumLoss, or a lost reply
// (action.stopPair), stops: the two followers, or the leader and one
// follower.
var quorumPairs = [...][2]int{{1, 2}, {0, 1}, {0, 2}}

// canStopQuorum reports whether the case can lose its quorum now: it runs
// on an ensemble, and has not lost it already.
func (h *harness) canStopQuorum() bool { return h.members > 2 && len(h.stopped) == 0 }

// stopMajority stops the pair of members pair names.
func (h *harness) stopMajority(pair int) {
	members := quorumPairs[pair%len(quorumPairs)]
	h.begin(fmt.Sprintf("members %d and %d of the ensemble stop: it has no quorum, serves no one, and expires no session until they are back", members[0], members[1]))
	h.srv.StopMembers(members[:]...)
	h.quorumStopped(members[:])
	h.settle()
}

// quorumStopped notes that members, a majority, have stopped: by
// stopMajority, or with a lost reply (zkfake.ReplyLoss.StopMembers).
func (h *harness) quorumStopped(members []int) {
	h.stopped = members
	h.quorumLost = time.Now()
	h.tally.QuorumLosses++
}

// restartMembers lets after pass, and starts the stopped members again.
func (h *harness) restartMembers(after time.Duration) {
	if after > 0 {
		h.begin(fmt.Sprintf("%v passes without a quorum; then members %d and %d start again", after, h.stopped[0], h.stopped[1]))
		h.advance(after)
	} else {
		h.begin(fmt.Sprintf("members %d and %d start again", h.stopped[0], h.stopped[1]))
	}
	if time.Since(h.quorumLost) > time.Minute {
		h.tally.QuorumLossesLong++
	}
	h.srv.StartMembers(h.stopped...)
	h.stopped = nil
	h.settle()
}
