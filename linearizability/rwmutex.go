package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// RWMutexOp is an operation on a read/write lock, or on the resource its
// writers write to. The write side is a lock of [CheckMutex]'s, which the
// read side's holders also keep out: WriteAcquire, WriteRelease and RWWrite
// mean what TryLock, Release and Write mean there.
type RWMutexOp uint8

// Read/write lock operations.
const (
	// ReadAcquire takes the read side, which any number of sessions may
	// hold at once while no session holds the write side. Output OK true
	// claims the session got it; OK false claims the read side was
	// unavailable (the write side held, by any session) at some instant
	// during the call, or that the session had expired — what a TryRLock
	// answers. A blocking acquisition that gave up claims nothing: leave
	// it out of the history, or, if it may have held the read side for a
	// while, record it as an unknown ReadAcquire and an unknown
	// ReadRelease over its call. Output Token is not checked: fencing
	// tokens are the writers'.
	ReadAcquire RWMutexOp = iota + 1
	// ReadRelease gives one read hold up. OK true claims the session held
	// the read side; OK false (the release failed, e.g. the session had
	// expired) claims it held none.
	ReadRelease
	// WriteAcquire takes the write side, which one session at a time may
	// hold, and only while no session holds the read side. OK true claims
	// the session got it, and Token, if the lock hands out fencing tokens,
	// must grow with every write acquisition. OK false claims the lock was
	// unavailable (held on either side, by any session) at some instant
	// during the call, or that the session had expired; a blocking
	// acquisition that gave up is left out, as for ReadAcquire.
	WriteAcquire
	// WriteRelease gives the write side up. OK true claims the session
	// held it, OK false that it did not.
	WriteRelease
	// RWWrite writes to the resource the write side protects, presenting
	// Input Token, as the mutex model's Write does: Token 0 is an unfenced
	// write, legal only while the session holds the write side; a fenced
	// resource must accept (OK) exactly the writes whose token is not older
	// than the newest it accepted.
	RWWrite
)

// String names the operation.
func (o RWMutexOp) String() string {
	switch o {
	case ReadAcquire:
		return "read-acquire"
	case ReadRelease:
		return "read-release"
	case WriteAcquire:
		return "write-acquire"
	case WriteRelease:
		return "write-release"
	case RWWrite:
		return "resource-write"
	}
	return fmt.Sprintf("RWMutexOp(%d)", uint8(o))
}

// RWMutexInput is the input of a read/write lock operation. A history for
// [CheckRWMutex] holds RWMutexInput and [SessionExpiry] inputs.
type RWMutexInput struct {
	Op RWMutexOp
	// Lock is the lock's path; histories are checked one lock at a time.
	Lock string
	// Session is the ZooKeeper session acting: holds belong to sessions.
	Session int64
	// Token is the fencing token an RWWrite presents, 0 for none.
	Token int64
}

// String describes the input the way reports show it.
func (in RWMutexInput) String() string {
	s := fmt.Sprintf("%s %s %s", sessionName(in.Session), in.Op, in.Lock)
	if in.Op == RWWrite && in.Token != 0 {
		s += fmt.Sprintf(" token %d", in.Token)
	}
	return s
}

// mutexInput is the operation of the write side's lock that a write
// acquisition, a write release or a write to the resource is. A write
// acquisition is a TryLock, for its OK false claims the lock was taken.
func (in RWMutexInput) mutexInput() MutexInput {
	var op MutexOp
	switch in.Op {
	case WriteAcquire:
		op = TryLock
	case WriteRelease:
		op = Release
	case RWWrite:
		op = Write
	}
	return MutexInput{Op: op, Lock: in.Lock, Session: in.Session, Token: in.Token}
}

// RWMutexOutput is the output of a read/write lock operation whose outcome
// is known.
type RWMutexOutput struct {
	// OK: an acquisition got its side, a release gave it up, an RWWrite
	// was accepted.
	OK bool
	// Token is the fencing token a WriteAcquire was handed, 0 if the lock
	// hands out none. A ReadAcquire's is ignored.
	Token int64
}

// RWMutexUnknown is the output of an operation that returned without
// saying what it did, as [MutexUnknown] is for a lock: it took effect, or
// did not, between its call and its return. An output of nil instead
// leaves the outcome open for ever after the call.
type RWMutexUnknown struct{}

// rwMutexState is the state of one read/write lock. Values are immutable
// once built; their slices are shared between states.
type rwMutexState struct {
	// write is the write side, with the writers' tokens, the fenced
	// resource and the expired sessions.
	write mutexState
	// readers lists, by session, how many read holds each session has;
	// counts are positive. A session may hold the read side more than
	// once, through several handles, as ZooKeeper's recipe allows.
	readers []sessionCount
}

type sessionCount struct {
	session int64
	n       int
}

func compareSessionCount(sc sessionCount, session int64) int {
	return cmp.Compare(sc.session, session)
}

// reads returns how many read holds the session has.
func (s rwMutexState) reads(session int64) int {
	i, found := slices.BinarySearchFunc(s.readers, session, compareSessionCount)
	if !found {
		return 0
	}
	return s.readers[i].n
}

// addRead gives the session one more read hold.
func (s rwMutexState) addRead(session int64) rwMutexState {
	i, found := slices.BinarySearchFunc(s.readers, session, compareSessionCount)
	if found {
		s.readers = slices.Clone(s.readers)
		s.readers[i].n++
	} else {
		s.readers = slices.Insert(slices.Clip(s.readers), i, sessionCount{session, 1})
	}
	return s
}

// dropRead ends one of the session's read holds, all of them if all is
// set; it does nothing to a session that holds none.
func (s rwMutexState) dropRead(session int64, all bool) rwMutexState {
	i, found := slices.BinarySearchFunc(s.readers, session, compareSessionCount)
	switch {
	case !found:
	case all || s.readers[i].n == 1:
		s.readers = slices.Delete(slices.Clone(s.readers), i, i+1)
	default:
		s.readers = slices.Clone(s.readers)
		s.readers[i].n--
	}
	return s
}

func rwMutexStep(state, input, output any) (bool, any) {
	s := state.(rwMutexState)
	if e, ok := input.(SessionExpiry); ok {
		return true, s.expire(e.Session)
	}
	out, known := output.(RWMutexOutput)
	ok, next := s.step(input.(RWMutexInput), out, known)
	return ok, next
}

// expire ends the session: its holds on either side, and any it could take.
func (s rwMutexState) expire(session int64) rwMutexState {
	s.write = s.write.expire(session)
	return s.dropRead(session, true)
}

// step applies an operation whose output is out if known, and nothing
// (RWMutexUnknown, or nil) otherwise. An operation of unknown outcome that
// could take effect does, as in the mutex model: porcupine may place it
// where it could not, or, for one that never returns, after everything
// else, which is not at all.
func (s rwMutexState) step(in RWMutexInput, out RWMutexOutput, known bool) (bool, rwMutexState) {
	switch in.Op {
	case ReadAcquire:
		free := !s.write.held && !s.write.hasEnded(in.Session)
		switch {
		case !known:
			if free {
				s = s.addRead(in.Session)
			}
			return true, s
		case out.OK:
			if !free {
				return false, s
			}
			return true, s.addRead(in.Session)
		default:
			return !free, s
		}
	case ReadRelease:
		holds := s.reads(in.Session) > 0
		switch {
		case !known:
			return true, s.dropRead(in.Session, false)
		case out.OK:
			if !holds {
				return false, s
			}
			return true, s.dropRead(in.Session, false)
		default:
			return !holds, s
		}
	case WriteAcquire:
		if len(s.readers) > 0 {
			// The readers keep the write side out: an acquisition of
			// unknown outcome had no effect, and one that answered
			// found the lock taken.
			return !known || !out.OK, s
		}
		fallthrough
	case WriteRelease, RWWrite:
		ok, write := s.write.step(in.mutexInput(), MutexOutput{OK: out.OK, Token: out.Token}, known)
		s.write = write
		return ok, s
	}
	return false, s
}

func rwMutexEqual(a, b any) bool {
	x, y := a.(rwMutexState), b.(rwMutexState)
	return mutexEqual(x.write, y.write) && slices.Equal(x.readers, y.readers)
}

func rwMutexHash(state any) uint64 {
	s := state.(rwMutexState)
	h := hasher(mutexHash(s.write))
	for _, r := range s.readers {
		h = h.int(r.session).int(int64(r.n))
	}
	return uint64(h)
}

func describeRWMutexOperation(input, output any) string {
	if e, ok := input.(SessionExpiry); ok {
		return e.String()
	}
	in := input.(RWMutexInput)
	out, known := output.(RWMutexOutput)
	result := "?"
	if known {
		switch in.Op {
		case ReadAcquire, WriteAcquire:
			result = "not acquired"
			if out.OK {
				result = "acquired"
				if in.Op == WriteAcquire && out.Token != 0 {
					result += fmt.Sprintf(", token %d", out.Token)
				}
			}
		case ReadRelease, WriteRelease:
			result = "failed"
			if out.OK {
				result = "released"
			}
		case RWWrite:
			result = "rejected"
			if out.OK {
				result = "accepted"
			}
		}
	}
	return fmt.Sprintf("%s → %s", in, result)
}

func describeRWMutexState(state any) string {
	s := state.(rwMutexState)
	var b strings.Builder
	switch {
	case s.write.held:
		fmt.Fprintf(&b, "write side held by %s", sessionName(s.write.holder))
	case len(s.readers) > 0:
		names := make([]string, len(s.readers))
		for i, r := range s.readers {
			names[i] = sessionName(r.session)
			if r.n > 1 {
				names[i] += fmt.Sprintf(" ×%d", r.n)
			}
		}
		fmt.Fprintf(&b, "read side held by %s", strings.Join(names, ", "))
	default:
		b.WriteString("free")
	}
	if s.write.lastAcquireToken != 0 {
		fmt.Fprintf(&b, "; last write token handed out %d", s.write.lastAcquireToken)
	}
	if s.write.lastWriteToken != 0 {
		fmt.Fprintf(&b, "; resource fenced at token %d", s.write.lastWriteToken)
	}
	if len(s.write.ended) > 0 {
		fmt.Fprintf(&b, "; expired: %s", sessionNames(s.write.ended))
	}
	return b.String()
}

var rwMutexModel = porcupine.Model{
	Partition:                 partitionByInput(func(in RWMutexInput) string { return in.Lock }),
	Init:                      func() any { return rwMutexState{} },
	Step:                      rwMutexStep,
	Equal:                     rwMutexEqual,
	Hash:                      rwMutexHash,
	DescribeOperation:         describeRWMutexOperation,
	DescribeState:             describeRWMutexState,
	DescribeOperationMetadata: describeMetadata,
}

// RWMutexModel returns the porcupine model [CheckRWMutex] runs, for
// [Check] or a harness that takes a model. Through Check, inputs are not
// validated as CheckRWMutex validates them: an input of another type makes
// the step panic, and Check return an error.
func RWMutexModel() porcupine.Model { return rwMutexModel }

// CheckRWMutex checks that h is a legal history of read/write locks: any
// number of sessions hold the read side at once, or one session holds the
// write side, never both — not even one session holding both sides, for the
// recipe neither upgrades nor downgrades, and its write node would wait
// behind the session's own read node. A hold ends with its release or with
// its session's expiry; a session may hold the read side several times
// over, and each ReadRelease ends one of its holds. Write acquisitions'
// fencing tokens grow with every write acquisition (readers' tokens are
// not checked); an unfenced resource is written only by the write side's
// holder, and a fenced one accepts exactly the writes whose token is not
// older than the newest it accepted. An acquisition that answered OK false
// claims the lock was unavailable to it at some instant of the call, or
// that its session had expired.
//
// Each lock is checked separately; session expiries apply to all. A
// timeout of 0 means no limit; when it runs out the outcome is [Unknown].
// Inputs must be [RWMutexInput] or [SessionExpiry]; outputs
// [RWMutexOutput], [RWMutexUnknown], or nil for operations whose outcome
// stays unknown for ever after the call.
func CheckRWMutex(h History, timeout time.Duration) (Result, error) {
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	for _, op := range h.Operations {
		switch in := op.Input.(type) {
		case SessionExpiry:
		case RWMutexInput:
			if in.Op < ReadAcquire || in.Op > RWWrite {
				return Result{}, fmt.Errorf("linearizability: unknown read/write lock operation %d", in.Op)
			}
			switch op.Output.(type) {
			case RWMutexOutput, RWMutexUnknown:
			case nil:
				// An output nobody saw is an unknown outcome, whatever
				// the return time says.
				op.Return = Never
			default:
				return Result{}, fmt.Errorf("linearizability: %v has output of type %T, want RWMutexOutput", in, op.Output)
			}
		default:
			return Result{}, fmt.Errorf("linearizability: CheckRWMutex got input of type %T, want RWMutexInput or SessionExpiry", op.Input)
		}
		ops = append(ops, toPorcupine(op))
	}
	return check("rwmutex", rwMutexModel, ops, h.Faults, timeout), nil
}
