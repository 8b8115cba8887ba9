package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// SemaphoreOp is an operation on a counting semaphore: N leases, each held
// by a session.
type SemaphoreOp uint8

// Semaphore operations.
const (
	// LeaseAcquire takes one of the semaphore's leases. Output OK true
	// claims the session got the lease named by the input; OK false claims
	// all Max leases were held at some instant during the call, or that the
	// session had expired — what a TryAcquire that found none free answers.
	// A blocking acquisition that gave up claims nothing: leave it out of
	// the history, or, if it may have held a lease for a while and let it
	// go again, record it as an unknown LeaseAcquire and an unknown
	// LeaseRelease of the same lease over its call.
	LeaseAcquire SemaphoreOp = iota + 1
	// LeaseRelease gives the lease named by the input up. OK true claims
	// the session held it; OK false (the release failed, e.g. the session
	// had expired) claims it did not.
	LeaseRelease
)

// String names the operation.
func (o SemaphoreOp) String() string {
	switch o {
	case LeaseAcquire:
		return "lease-acquire"
	case LeaseRelease:
		return "lease-release"
	}
	return fmt.Sprintf("SemaphoreOp(%d)", uint8(o))
}

// SemaphoreInput is the input of a semaphore operation. A history for
// [CheckSemaphore] holds SemaphoreInput and [SessionExpiry] inputs.
type SemaphoreInput struct {
	Op SemaphoreOp
	// Semaphore is the semaphore's path; histories are checked one
	// semaphore at a time.
	Semaphore string
	// Max is the semaphore's N, the most leases held at once; every
	// operation on a semaphore must give the same.
	Max int
	// Session is the ZooKeeper session acting: leases belong to sessions.
	Session int64
	// Lease names the lease: the node through which the session holds it.
	// A lease is the session's and the name's together, and a release
	// ends the one it names. An acquisition whose node nobody learned
	// the name of may leave it empty; only its session's expiry, or a
	// release naming no lease, ends such a hold.
	Lease string
}

// String describes the input the way reports show it.
func (in SemaphoreInput) String() string {
	s := fmt.Sprintf("%s %s %s", sessionName(in.Session), in.Op, in.Semaphore)
	if in.Lease != "" {
		s += " lease " + in.Lease
	}
	if in.Op == LeaseAcquire {
		s += fmt.Sprintf(" (max %d)", in.Max)
	}
	return s
}

// SemaphoreOutput is the output of a semaphore operation whose outcome is
// known.
type SemaphoreOutput struct {
	// OK: LeaseAcquire got the lease, LeaseRelease gave it up.
	OK bool
}

// SemaphoreUnknown is the output of an operation that returned without
// saying what it did, as [MutexUnknown] is for a lock: it took effect, or
// did not, between its call and its return. An output of nil instead
// leaves the outcome open for ever after the call.
type SemaphoreUnknown struct{}

// semaphoreState is the state of one semaphore. Values are immutable once
// built; their slices are shared between states.
type semaphoreState struct {
	// leases lists the leases held, sorted. A lease held twice (two
	// unnamed ones of one session, say) is listed twice.
	leases []heldLease
	// ended lists, sorted, the sessions whose expiry has been linearized:
	// nothing they do can take a lease any more.
	ended []int64
}

type heldLease struct {
	session int64
	name    string
}

func compareLease(a, b heldLease) int {
	return cmp.Or(cmp.Compare(a.session, b.session), cmp.Compare(a.name, b.name))
}

func (s semaphoreState) hasEnded(session int64) bool {
	_, found := slices.BinarySearch(s.ended, session)
	return found
}

func (s semaphoreState) holds(l heldLease) bool {
	_, found := slices.BinarySearchFunc(s.leases, l, compareLease)
	return found
}

func (s semaphoreState) take(l heldLease) semaphoreState {
	i, _ := slices.BinarySearchFunc(s.leases, l, compareLease)
	s.leases = slices.Insert(slices.Clip(s.leases), i, l)
	return s
}

// drop ends one hold of the lease, if there is one.
func (s semaphoreState) drop(l heldLease) semaphoreState {
	if i, found := slices.BinarySearchFunc(s.leases, l, compareLease); found {
		s.leases = slices.Delete(slices.Clone(s.leases), i, i+1)
	}
	return s
}

func semaphoreStep(state, input, output any) (bool, any) {
	s := state.(semaphoreState)
	if e, ok := input.(SessionExpiry); ok {
		return true, s.expire(e.Session)
	}
	out, known := output.(SemaphoreOutput)
	ok, next := s.step(input.(SemaphoreInput), out, known)
	return ok, next
}

// expire ends the session: the leases it holds, and any it could take.
func (s semaphoreState) expire(session int64) semaphoreState {
	s.leases = slices.DeleteFunc(slices.Clone(s.leases), func(l heldLease) bool { return l.session == session })
	if i, found := slices.BinarySearch(s.ended, session); !found {
		s.ended = slices.Insert(slices.Clip(s.ended), i, session)
	}
	return s
}

// step applies an operation whose output is out if known, and nothing
// (SemaphoreUnknown, or nil) otherwise. An operation of unknown outcome
// that could take effect does, as in the mutex model: porcupine may place
// it where it could not, or, for one that never returns, after everything
// else, which is not at all.
func (s semaphoreState) step(in SemaphoreInput, out SemaphoreOutput, known bool) (bool, semaphoreState) {
	l := heldLease{in.Session, in.Lease}
	switch in.Op {
	case LeaseAcquire:
		free := len(s.leases) < in.Max && !s.hasEnded(in.Session)
		switch {
		case !known:
			if free {
				s = s.take(l)
			}
			return true, s
		case out.OK:
			if !free {
				return false, s
			}
			return true, s.take(l)
		default:
			return !free, s
		}
	case LeaseRelease:
		switch {
		case !known:
			return true, s.drop(l)
		case out.OK:
			if !s.holds(l) {
				return false, s
			}
			return true, s.drop(l)
		default:
			return !s.holds(l), s
		}
	}
	return false, s
}

func semaphoreEqual(a, b any) bool {
	x, y := a.(semaphoreState), b.(semaphoreState)
	return slices.Equal(x.leases, y.leases) && slices.Equal(x.ended, y.ended)
}

func semaphoreHash(state any) uint64 {
	s := state.(semaphoreState)
	h := newHasher().int(int64(len(s.leases)))
	for _, l := range s.leases {
		h = h.int(l.session).string(l.name)
	}
	for _, e := range s.ended {
		h = h.int(e)
	}
	return uint64(h)
}

func describeSemaphoreOperation(input, output any) string {
	if e, ok := input.(SessionExpiry); ok {
		return e.String()
	}
	in := input.(SemaphoreInput)
	out, known := output.(SemaphoreOutput)
	result := "?"
	if known {
		switch in.Op {
		case LeaseAcquire:
			result = "none free"
			if out.OK {
				result = "acquired"
			}
		case LeaseRelease:
			result = "failed"
			if out.OK {
				result = "released"
			}
		}
	}
	return fmt.Sprintf("%s → %s", in, result)
}

func describeSemaphoreState(state any) string {
	s := state.(semaphoreState)
	var b strings.Builder
	switch len(s.leases) {
	case 0:
		b.WriteString("no lease held")
	case 1:
		b.WriteString("1 lease held: ")
	default:
		fmt.Fprintf(&b, "%d leases held: ", len(s.leases))
	}
	for i, l := range s.leases {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sessionName(l.session))
		if l.name != "" {
			b.WriteString(" " + l.name)
		}
	}
	if len(s.ended) > 0 {
		fmt.Fprintf(&b, "; expired: %s", sessionNames(s.ended))
	}
	return b.String()
}

var semaphoreModel = porcupine.Model{
	Partition:                 partitionByInput(func(in SemaphoreInput) string { return in.Semaphore }),
	Init:                      func() any { return semaphoreState{} },
	Step:                      semaphoreStep,
	Equal:                     semaphoreEqual,
	Hash:                      semaphoreHash,
	DescribeOperation:         describeSemaphoreOperation,
	DescribeState:             describeSemaphoreState,
	DescribeOperationMetadata: describeMetadata,
}

// SemaphoreModel returns the porcupine model [CheckSemaphore] runs, for
// [Check] or a harness that takes a model. Through Check, inputs are not
// validated as CheckSemaphore validates them: an input of another type
// makes the step panic, and Check return an error; a Max below 1 lets no
// acquisition succeed.
func SemaphoreModel() porcupine.Model { return semaphoreModel }

// CheckSemaphore checks that h is a legal history of counting semaphores:
// never more than Max leases held at once; a lease is held from its
// LeaseAcquire to its LeaseRelease or its session's expiry; a release that
// answered claims whether the session held the lease it names; an
// acquisition that answered OK false claims all Max leases were held at
// some instant of the call, or that its session had expired.
//
// Each semaphore is checked separately; session expiries apply to all. A
// timeout of 0 means no limit; when it runs out the outcome is [Unknown].
// Inputs must be [SemaphoreInput] or [SessionExpiry], every operation on a
// semaphore giving the same Max, at least 1; outputs [SemaphoreOutput],
// [SemaphoreUnknown], or nil for operations whose outcome stays unknown for
// ever after the call.
func CheckSemaphore(h History, timeout time.Duration) (Result, error) {
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	maxes := make(map[string]int) // by semaphore
	for _, op := range h.Operations {
		switch in := op.Input.(type) {
		case SessionExpiry:
		case SemaphoreInput:
			if in.Op < LeaseAcquire || in.Op > LeaseRelease {
				return Result{}, fmt.Errorf("linearizability: unknown semaphore operation %d", in.Op)
			}
			if in.Max < 1 {
				return Result{}, fmt.Errorf("linearizability: %v has Max %d, want at least 1", in, in.Max)
			}
			if m, seen := maxes[in.Semaphore]; seen && m != in.Max {
				return Result{}, fmt.Errorf("linearizability: %v has Max %d, but an earlier operation on %s has %d", in, in.Max, in.Semaphore, m)
			}
			maxes[in.Semaphore] = in.Max
			switch op.Output.(type) {
			case SemaphoreOutput, SemaphoreUnknown:
			case nil:
				// An output nobody saw is an unknown outcome, whatever
				// the return time says.
				op.Return = Never
			default:
				return Result{}, fmt.Errorf("linearizability: %v has output of type %T, want SemaphoreOutput", in, op.Output)
			}
		default:
			return Result{}, fmt.Errorf("linearizability: CheckSemaphore got input of type %T, want SemaphoreInput or SessionExpiry", op.Input)
		}
		ops = append(ops, toPorcupine(op))
	}
	return check("semaphore", semaphoreModel, ops, h.Faults, timeout), nil
}
