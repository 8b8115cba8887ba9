package fuzz

import "fmt"

// This file is what a campaign draws and reports: the faults it may leave
// out (WithoutFaults) and the detectors (WithoutDetectors).

// Fault names a kind of fault a case draws, for WithoutFaults.
type Fault uint8

// The faults a case draws. Each names the fault and the step that ends it,
// where it has one (a partition and its heal, a pause and its thaw).
const (
	// LostRequest: a client's next request is lost before the server
	// applies it, and the client reconnects.
	LostRequest Fault = iota + 1
	// LostReply: a client's next request is applied and its reply lost;
	// the client may reconnect to a lagging follower, and with
	// QuorumLoss a majority may stop as the reply leaves.
	LostReply
	// Partition: a client is cut off from the server, and the cut heals,
	// before or after the client notices, or its session expires.
	Partition
	// Pause: a client's process freezes (a long GC pause) and thaws.
	Pause
	// Expiry: the server expires a client's session; its next session may
	// open on a lagging follower.
	Expiry
	// Crash: a client's process crashes and a new one takes its place.
	Crash
	// LaggingFollower: a follower lags, its sessions reading stale data,
	// and catches up; and a client whose reply was lost, or whose session
	// expired, goes on at a lagging follower.
	LaggingFollower
	// Close: a client's process closes its Conn, makes a call or two on
	// it, and ends.
	Close
	// Cancel: a client's waiting call is cancelled.
	Cancel
	// OutsideWrite: someone else deletes a client's node in the
	// recipe's directory, or writes to it.
	OutsideWrite
	// QuorumLoss: a majority of the ensemble's members stop, and start
	// again, at once or minutes later. With LostReply, a majority may
	// also stop as a lost reply leaves (the leader commits the write and
	// goes down with its quorum).
	QuorumLoss
	// LateEvent: a client's next watch event reaches its code late,
	// after the reply to the request it makes next.
	LateEvent
	numFaults
)

// AllFaults lists every fault a case draws, for WithoutFaults(AllFaults()...):
// a campaign of moves and waits alone, for a bug that needs no fault.
func AllFaults() []Fault {
	all := make([]Fault, 0, numFaults-1)
	for f := Fault(1); f < numFaults; f++ {
		all = append(all, f)
	}
	return all
}

// String names the fault as its constant does.
func (f Fault) String() string {
	if f > 0 && f < numFaults {
		return faultNames[f]
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

var faultNames = [numFaults]string{
	LostRequest:     "LostRequest",
	LostReply:       "LostReply",
	Partition:       "Partition",
	Pause:           "Pause",
	Expiry:          "Expiry",
	Crash:           "Crash",
	LaggingFollower: "LaggingFollower",
	Close:           "Close",
	Cancel:          "Cancel",
	OutsideWrite:    "OutsideWrite",
	QuorumLoss:      "QuorumLoss",
	LateEvent:       "LateEvent",
}

// WithoutFaults leaves faults out of every case's schedule: steps that
// would have drawn one are moves and waits instead. A target whose
// code cannot meet a fault by design (a client that never cancels), or a
// campaign that looks for one defect of a target past its others, is
// fuzzed with it.
func WithoutFaults(faults ...Fault) Option {
	return func(c *config) {
		for _, f := range faults {
			if f > 0 && f < numFaults {
				c.NoFaults |= 1 << f
			}
		}
	}
}

// drawn reports whether the campaign draws fault f.
func (c config) drawn(f Fault) bool { return c.NoFaults&(1<<f) == 0 }

// WithoutDetectors leaves detectors out of a campaign: what they would
// report goes in the story as a note, and the case goes on looking for
// the rest (the model's check, a finding after the case, counts as
// clean). A recipe a detector's rule does not fit (the herd rule assumes
// a queue, and ZooKeeper's own double barrier wakes every waiter by
// design) is fuzzed with it. A left-out liveness finding ends the
// wind-down all the same: the stuck clients' nodes may then show as a
// leak.
func WithoutDetectors(detectors ...Detector) Option {
	return func(c *config) {
		for _, d := range detectors {
			if c.NoDetectors == nil {
				c.NoDetectors = map[Detector]bool{}
			}
			c.NoDetectors[d] = true
		}
	}
}

// reported returns f, or nil if its detector is left out
// (WithoutDetectors), or the campaign passes over it (OnlyFindings).
func (c config) reported(f *Finding) *Finding {
	if f != nil && (c.NoDetectors[f.Detector] || c.Only != nil && !c.Only(f)) {
		return nil
	}
	return f
}

// OnlyFindings makes a campaign report only the findings accept accepts,
// and pass over the others, as if their case had found nothing: a port
// of a library with more than one bug, hunted for one of them (the known
// bugs of package targets' catalogue are), shrinks and tells that one.
// accept sees a finding whole, its story too.
func OnlyFindings(accept func(*Finding) bool) Option {
	return func(c *config) { c.Only = accept }
}
