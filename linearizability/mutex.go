package linearizability

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// MutexOp is an operation on a lock, or on the resource it protects.
type MutexOp uint8

// Lock operations.
const (
	// Acquire waits until the session holds the lock. Output OK reports
	// whether it got it; an Acquire that gave up (OK false) constrains
	// nothing. Token, if the lock hands out fencing tokens, must grow with
	// every acquisition, as ZooKeeper sequence numbers do.
	Acquire MutexOp = iota + 1
	// TryLock takes the lock only if it is free. OK false claims the lock
	// was held by someone at some instant during the call, or that the
	// session had expired.
	TryLock
	// Release gives the lock up. OK true claims the session held it; OK
	// false (the release failed, e.g. the session had expired) claims it
	// did not.
	Release
	// Write writes to the resource the lock protects. Input Token 0 means
	// the resource is not fenced: the write is legal only while the writing
	// session holds the lock. A non-zero Token is checked by a fenced
	// resource, which must accept the write (OK) if the token is not older
	// than the newest it has accepted, and reject it (not OK) otherwise.
	Write
	// Revoke is no client's call: someone other than the session deleted
	// the node through which the session held the lock, which ends its
	// hold (not the session, which may take the lock again). Its output is
	// MutexOutput{OK: true}.
	Revoke
)

// String names the operation.
func (o MutexOp) String() string {
	switch o {
	case Acquire:
		return "acquire"
	case TryLock:
		return "try-lock"
	case Release:
		return "release"
	case Write:
		return "write"
	case Revoke:
		return "revoke"
	}
	return fmt.Sprintf("MutexOp(%d)", uint8(o))
}

// MutexInput is the input of a lock operation. A history for [CheckMutex]
// holds MutexInput and [SessionExpiry] inputs.
type MutexInput struct {
	Op MutexOp
	// Lock is the lock's path; histories are checked one lock at a time.
	Lock string
	// Session is the ZooKeeper session acting: the lock belongs to a
	// session, not to a goroutine.
	Session int64
	// Token is the fencing token a Write presents, 0 for none.
	Token int64
}

// String describes the input the way reports show it.
func (in MutexInput) String() string {
	s := fmt.Sprintf("%s %s %s", sessionName(in.Session), in.Op, in.Lock)
	if in.Op == Write && in.Token != 0 {
		s += fmt.Sprintf(" token %d", in.Token)
	}
	return s
}

// MutexOutput is the output of a lock operation whose outcome is known.
type MutexOutput struct {
	// OK: Acquire and TryLock got the lock, Release released it, Write was
	// accepted.
	OK bool
	// Token is the fencing token an Acquire or TryLock was handed, 0 if the
	// lock hands out none.
	Token int64
}

// MutexUnknown is the output of an operation that returned without saying
// what it did: it took effect, or did not, between its call and its
// return. A Lock that failed after its node had been first in the queue is
// one (it may have held the lock for a while, and let it go again); an
// output of nil instead leaves the outcome open for ever after the call.
type MutexUnknown struct{}

// mutexState is the state of one lock and of the resource it protects.
// Values are immutable once built; ended is shared between states.
type mutexState struct {
	held   bool
	holder int64
	// lastAcquireToken is the newest token handed out, 0 if none yet.
	lastAcquireToken int64
	// lastWriteToken is the newest token the fenced resource accepted.
	lastWriteToken int64
	// ended lists, sorted, the sessions whose expiry has been linearized:
	// nothing they do can take the lock any more.
	ended []int64
}

func (s mutexState) hasEnded(session int64) bool {
	_, found := slices.BinarySearch(s.ended, session)
	return found
}

func mutexStep(state, input, output any) (bool, any) {
	s := state.(mutexState)
	if e, ok := input.(SessionExpiry); ok {
		return true, s.expire(e.Session)
	}
	out, known := output.(MutexOutput)
	ok, next := s.step(input.(MutexInput), out, known)
	return ok, next
}

// expire ends the session: its hold, if it has one, and any it could take.
func (s mutexState) expire(session int64) mutexState {
	if s.held && s.holder == session {
		s.held, s.holder = false, 0
	}
	if i, found := slices.BinarySearch(s.ended, session); !found {
		s.ended = slices.Insert(slices.Clip(s.ended), i, session)
	}
	return s
}

// step applies a lock operation whose output is out if known, and nothing
// (MutexUnknown, or nil) otherwise. The election model shares it: a
// campaign, a resignation and a leader's write are exactly a lock's.
func (s mutexState) step(in MutexInput, out MutexOutput, known bool) (bool, mutexState) {
	switch in.Op {
	case Acquire, TryLock:
		free := !s.held && !s.hasEnded(in.Session)
		switch {
		case !known:
			// Took the lock if it could. Otherwise it had no effect
			// here — it failed, or never reached the server — and it
			// must always be allowed to have had none.
			if free {
				s.held, s.holder = true, in.Session
			}
			return true, s
		case out.OK:
			if !free {
				return false, s
			}
			if out.Token != 0 {
				if out.Token <= s.lastAcquireToken {
					return false, s
				}
				s.lastAcquireToken = out.Token
			}
			s.held, s.holder = true, in.Session
			return true, s
		case in.Op == TryLock:
			return s.held || s.hasEnded(in.Session), s
		default:
			return true, s // an Acquire that gave up
		}
	case Release:
		holds := s.held && s.holder == in.Session
		switch {
		case !known:
			if holds {
				s.held, s.holder = false, 0
			}
			return true, s
		case out.OK:
			if !holds {
				return false, s
			}
			s.held, s.holder = false, 0
			return true, s
		default:
			return !holds, s
		}
	case Revoke:
		if s.held && s.holder == in.Session {
			s.held, s.holder = false, 0
		}
		return true, s
	case Write:
		if in.Token == 0 {
			// Unfenced: whatever the resource did, it must not have
			// been written by a session that does not hold the lock.
			return !known || !out.OK || (s.held && s.holder == in.Session), s
		}
		fresh := in.Token >= s.lastWriteToken
		switch {
		case !known:
			if fresh {
				s.lastWriteToken = in.Token
			}
			return true, s
		case out.OK:
			if !fresh {
				return false, s
			}
			s.lastWriteToken = in.Token
			return true, s
		default:
			return !fresh, s
		}
	}
	return false, s
}

func mutexEqual(a, b any) bool {
	x, y := a.(mutexState), b.(mutexState)
	return x.held == y.held && x.holder == y.holder &&
		x.lastAcquireToken == y.lastAcquireToken && x.lastWriteToken == y.lastWriteToken &&
		slices.Equal(x.ended, y.ended)
}

func mutexHash(state any) uint64 {
	s := state.(mutexState)
	h := newHasher().bool(s.held).int(s.holder).int(s.lastAcquireToken).int(s.lastWriteToken)
	for _, e := range s.ended {
		h = h.int(e)
	}
	return uint64(h)
}

func describeMutexOperation(input, output any) string {
	if e, ok := input.(SessionExpiry); ok {
		return e.String()
	}
	in := input.(MutexInput)
	out, known := output.(MutexOutput)
	result := "?"
	if known {
		switch in.Op {
		case Acquire, TryLock:
			result = "not acquired"
			if out.OK {
				result = "acquired"
				if out.Token != 0 {
					result += fmt.Sprintf(", token %d", out.Token)
				}
			}
		case Release:
			result = "failed"
			if out.OK {
				result = "released"
			}
		case Write:
			result = "rejected"
			if out.OK {
				result = "accepted"
			}
		case Revoke:
			result = "hold ended"
		}
	}
	return fmt.Sprintf("%s → %s", in, result)
}

func describeMutexState(state any) string {
	s := state.(mutexState)
	var b strings.Builder
	if s.held {
		fmt.Fprintf(&b, "held by %s", sessionName(s.holder))
	} else {
		b.WriteString("free")
	}
	if s.lastAcquireToken != 0 {
		fmt.Fprintf(&b, "; last token handed out %d", s.lastAcquireToken)
	}
	if s.lastWriteToken != 0 {
		fmt.Fprintf(&b, "; resource fenced at token %d", s.lastWriteToken)
	}
	if len(s.ended) > 0 {
		names := make([]string, len(s.ended))
		for i, e := range s.ended {
			names[i] = sessionName(e)
		}
		fmt.Fprintf(&b, "; expired: %s", strings.Join(names, " "))
	}
	return b.String()
}

var mutexModel = porcupine.Model{
	Partition:                 partitionByInput(func(in MutexInput) string { return in.Lock }),
	Init:                      func() any { return mutexState{} },
	Step:                      mutexStep,
	Equal:                     mutexEqual,
	Hash:                      mutexHash,
	DescribeOperation:         describeMutexOperation,
	DescribeState:             describeMutexState,
	DescribeOperationMetadata: describeMetadata,
}

// CheckMutex checks that h is a legal history of locks: at most one session
// holds a lock at a time; a hold ends with Release or with the holder's
// session expiry; fencing tokens grow with each acquisition; an unfenced
// resource is written only by the holder, and a fenced one accepts exactly
// the writes whose token is not older than the newest it accepted; a Revoke
// (the holder's node deleted by someone else) ends a hold too. Each lock
// is checked separately; session expiries apply to all.
//
// A timeout of 0 means no limit; when it runs out the outcome is [Unknown].
// Inputs must be [MutexInput] or [SessionExpiry]; outputs [MutexOutput], or
// nil for operations with an unknown outcome.
func CheckMutex(h History, timeout time.Duration) (Result, error) {
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	for _, op := range h.Operations {
		switch in := op.Input.(type) {
		case SessionExpiry:
		case MutexInput:
			if in.Op < Acquire || in.Op > Revoke {
				return Result{}, fmt.Errorf("linearizability: unknown mutex operation %d", in.Op)
			}
			switch op.Output.(type) {
			case MutexOutput, MutexUnknown:
			case nil:
				// An output nobody saw is an unknown outcome, whatever
				// the return time says.
				op.Return = Never
			default:
				return Result{}, fmt.Errorf("linearizability: %v has output of type %T, want MutexOutput", in, op.Output)
			}
		default:
			return Result{}, fmt.Errorf("linearizability: CheckMutex got input of type %T, want MutexInput or SessionExpiry", op.Input)
		}
		ops = append(ops, toPorcupine(op))
	}
	return check("mutex", mutexModel, ops, h.Faults, timeout), nil
}
