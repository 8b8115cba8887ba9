package linearizability

import (
	"fmt"
	"strings"
)

// History is a recorded history: the operations, and the faults injected
// while they ran.
type History struct {
	Operations []Operation
	Faults     []Fault
}

// Operation is one operation of a history. Only the order of timestamps
// matters; the interval [Call, Return] is closed, so operations that share a
// timestamp are concurrent.
type Operation struct {
	// ClientID is the porcupine client id: one sequential process, used to
	// lay out reports. Ids should be small and dense, starting at 0.
	ClientID int
	// Tag identifies the operation in the server's log, if the caller gave
	// one (see [Recorder.CallTagged]).
	Tag    string
	Input  any
	Output any // nil when the outcome is unknown
	Call   int64
	Return int64 // Never when the outcome is unknown
}

// Unknown reports whether the operation's outcome is unknown.
func (op Operation) Unknown() bool { return op.Return == Never }

// Fault is an injected fault, shown in reports.
type Fault struct {
	Kind FaultKind
	// ClientID is the porcupine client id of the client the fault hit, or
	// -1 when it hit no particular client.
	ClientID   int
	Detail     string
	Start, End int64
}

// SessionExpiry is the input of an operation that no client invokes: the
// server expiring a session, which ends the locks it holds and the
// leadership it has, and deletes its ephemeral znodes. Record it with
// [Recorder.Observe]; every model here accepts it, and its output is
// ignored. A model of the caller's own run by [Check] must accept it too.
type SessionExpiry struct {
	Session int64
}

// String describes the expiry the way reports show it.
func (e SessionExpiry) String() string {
	return fmt.Sprintf("session %s expired", sessionName(e.Session))
}

// sessionName formats a session id the way ZooKeeper logs it.
func sessionName(session int64) string {
	return fmt.Sprintf("0x%x", uint64(session))
}

// sessionNames formats session ids for reports, separated by spaces.
func sessionNames(sessions []int64) string {
	names := make([]string, len(sessions))
	for i, s := range sessions {
		names[i] = sessionName(s)
	}
	return strings.Join(names, " ")
}
