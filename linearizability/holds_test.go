package linearizability_test

import "github.com/zksim/zksim/linearizability"

// A definiteHold is a hold that a history shows beyond doubt: its
// acquisition returned OK by start, and nothing that could end it was
// called before end. Whatever the linearization, the hold lasts over
// (start, end). Property tests use such holds to tell, without the
// checker, that a history from a broken service must be illegal.
type definiteHold struct {
	start, end int64
	write      bool
}

// holdEvent is what classify makes of an operation for definiteHolds.
type holdEvent struct {
	// acquired: an acquisition that answered OK. release: any release,
	// whatever its outcome.
	acquired, release bool
	session           int64
	// key is what a release must name to end the hold: a lease, a side.
	key   string
	write bool
}

// definiteHolds returns the history's definite holds: one for each
// acquisition known to have succeeded, up to the earliest call of a
// release of the same session and key not over before the acquisition
// began, or of its session's expiry. Holds that end before they begin are
// left out.
func definiteHolds(h linearizability.History, classify func(linearizability.Operation) holdEvent) []definiteHold {
	var holds []definiteHold
	for _, op := range h.Operations {
		if _, expiry := op.Input.(linearizability.SessionExpiry); expiry || op.Unknown() {
			continue
		}
		acq := classify(op)
		if !acq.acquired {
			continue
		}
		end := linearizability.Never
		for _, other := range h.Operations {
			if e, expiry := other.Input.(linearizability.SessionExpiry); expiry {
				if e.Session == acq.session {
					end = min(end, other.Call)
				}
				continue
			}
			rel := classify(other)
			if rel.release && rel.session == acq.session && rel.key == acq.key && other.Return >= op.Call {
				end = min(end, other.Call)
			}
		}
		if op.Return < end {
			holds = append(holds, definiteHold{start: op.Return, end: end, write: acq.write})
		}
	}
	return holds
}

// mostAtOnce returns the largest number of holds certainly held at one
// instant: the most of them whose acquisitions had all returned before any
// of them could end. The largest set starts just after one of the holds'
// start.
func mostAtOnce(holds []definiteHold) int {
	most := 0
	for _, h := range holds {
		n := 0
		for _, g := range holds {
			if g.start <= h.start && g.end > h.start {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// writerShares reports whether a write hold certainly overlaps another
// hold, of either side.
func writerShares(holds []definiteHold) bool {
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if (a.write || b.write) && max(a.start, b.start) < min(a.end, b.end) {
				return true
			}
		}
	}
	return false
}
