package linearizability

import (
	"fmt"
	"time"
)

// GroundTruth is what a server's own log knows about operations whose
// outcome their client never learned. In fake mode the in-memory server's
// event log provides it; a real ensemble has none.
//
// Settling unknown operations matters for speed: every operation left
// unknown stays open to the end of the history, and the checker's work grows
// exponentially with their number.
type GroundTruth interface {
	// Fate tells what became of op, an operation with an unknown outcome
	// (op.Return == Never) whose call was recorded at the instant called.
	// op.Tag, when set, names it uniquely; otherwise op.Input must do.
	// For an observed [SessionExpiry], called is the lower bound given to
	// [Recorder.Observe], and the fate is the instant the session expired.
	Fate(op Operation, called time.Time) Fate
}

// Verdict is the ground truth's answer about one operation.
type Verdict uint8

// Verdicts.
const (
	// Undetermined: the log cannot tell. The operation stays unknown.
	Undetermined Verdict = iota
	// Applied: the server applied the operation at Fate.At.
	Applied
	// NotApplied: the server never applied the operation and never will
	// (its request was lost, or its session is gone). The operation is
	// removed from the history, as if it had never been invoked.
	NotApplied
)

// Fate is what became of one operation.
type Fate struct {
	Verdict Verdict
	// At is the instant the server applied the operation (Applied only),
	// read from the same clock as the recorder's.
	At time.Time
	// Output is what the operation returned at the server, in the model's
	// output type, or nil if the log cannot say; then the checker still
	// knows when the operation took effect but not its result.
	Output any
}

// Settle returns the history with unknown operations settled by truth, as
// etcd's robustness tests settle theirs with the write-ahead log: an
// operation the server applied gets its output and is pinned to the instant
// it was applied; one it never applied is dropped; the rest stay unknown.
// Settle fails if truth contradicts the recording — an operation applied
// before it was called.
func (r *Recorder) Settle(truth GroundTruth) (History, error) {
	h := r.History()
	r.mu.Lock()
	defer r.mu.Unlock()
	settled := h.Operations[:0:0]
	for i, op := range h.Operations {
		rec := r.ops[i]
		if !op.Unknown() {
			settled = append(settled, op)
			continue
		}
		fate := truth.Fate(op, r.start.Add(rec.callAt))
		switch fate.Verdict {
		case NotApplied:
			continue
		case Applied:
			at := fate.At.Sub(r.start)
			if at < rec.callAt {
				return History{}, fmt.Errorf("linearizability: ground truth says %v was applied at %v, before it was called at %v", describeInput(op.Input), at, rec.callAt)
			}
			if rec.state == opObserved && rec.to >= 0 && at > rec.to {
				return History{}, fmt.Errorf("linearizability: ground truth says %v happened at %v, after it was observed at %v", describeInput(op.Input), at, rec.to)
			}
			lo, hi := r.timeline.bracket(at, at)
			op.Call = max(op.Call, lo)
			op.Return = max(hi, op.Call)
			if fate.Output != nil {
				op.Output = fate.Output
			}
		}
		settled = append(settled, op)
	}
	h.Operations = settled
	return h, nil
}

// describeInput names an input in error messages.
func describeInput(input any) string {
	if s, ok := input.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%+v", input)
}
