package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ElectionOp is an operation on a leader election, or on the resource its
// leader writes to. The leader is the lock holder of the mutex model, seen
// by observers: Campaign, Resign and LeaderWrite mean what Acquire, Release
// and Write mean there.
type ElectionOp uint8

// Election operations.
const (
	// Campaign waits until the session leads, as Acquire does. Output OK
	// reports whether it was elected, and Token is the fencing token (the
	// epoch) it was handed, 0 if the election hands out none; tokens grow
	// with every new leader. A Campaign that gave up (OK false) constrains
	// nothing, and claims the session never led through it.
	Campaign ElectionOp = iota + 1
	// Resign gives leadership up, as Release does: OK true claims the
	// session led, OK false that it did not.
	Resign
	// Observe asks who leads. Output Token is the leader's token the
	// reader saw, 0 for no leader; OK is ignored. The read may be stale,
	// as ZooKeeper reads are, but a session's reads never go back: see
	// [CheckElection].
	Observe
	// LeaderWrite writes to the resource the election guards, presenting
	// Input Token, as Write does: Token 0 is an unfenced write, legal only
	// while the session leads; a fenced resource must accept (OK) exactly
	// the writes whose token is not older than the newest it accepted.
	LeaderWrite
)

// String names the operation.
func (o ElectionOp) String() string {
	switch o {
	case Campaign:
		return "campaign"
	case Resign:
		return "resign"
	case Observe:
		return "observe"
	case LeaderWrite:
		return "leader-write"
	}
	return fmt.Sprintf("ElectionOp(%d)", uint8(o))
}

// ElectionInput is the input of an election operation. A history for
// [CheckElection] holds ElectionInput and [SessionExpiry] inputs.
type ElectionInput struct {
	Op ElectionOp
	// Election is the election's path; histories are checked one election
	// at a time.
	Election string
	// Session is the ZooKeeper session acting: a session leads, not a
	// goroutine, and a session's reads are what must not go back.
	Session int64
	// Token is the fencing token a LeaderWrite presents, 0 for none.
	Token int64
}

// String describes the input the way reports show it.
func (in ElectionInput) String() string {
	s := fmt.Sprintf("%s %s %s", sessionName(in.Session), in.Op, in.Election)
	if in.Op == LeaderWrite && in.Token != 0 {
		s += fmt.Sprintf(" token %d", in.Token)
	}
	return s
}

// mutexInput is the lock operation a campaign, a resignation or a leader's
// write is.
func (in ElectionInput) mutexInput() MutexInput {
	var op MutexOp
	switch in.Op {
	case Campaign:
		op = Acquire
	case Resign:
		op = Release
	case LeaderWrite:
		op = Write
	}
	return MutexInput{Op: op, Lock: in.Election, Session: in.Session, Token: in.Token}
}

// ElectionOutput is the output of an election operation whose outcome is
// known.
type ElectionOutput struct {
	// OK: Campaign was elected, Resign gave leadership up, LeaderWrite was
	// accepted. Observe ignores it.
	OK bool
	// Token is the token a Campaign was handed, or the leader's token an
	// Observe saw (0: no leader).
	Token int64
}

// ElectionUnknown is the output of an operation that returned without
// saying what it did, as [MutexUnknown] is for a lock: it took effect, or
// did not, between its call and its return. A Campaign that failed after
// its node had become the lowest may have led for a while and let go
// again; record it as an unknown Campaign and an unknown Resign over the
// same interval, as the lock's harness does. An Observe with an unknown
// outcome constrains nothing and is dropped.
type ElectionUnknown struct{}

// electionState is the state of one election: its leadership is a lock's,
// and beside it the model keeps which tokens leaders were handed and what
// each session has observed. Values are immutable once built; their slices
// are shared between states.
type electionState struct {
	lock mutexState
	// handed lists the tokens handed to campaigns with a known outcome,
	// ascending (tokens grow with every leader).
	handed []int64
	// unsure lists, ascending, the ranges of tokens that campaigns with an
	// unknown outcome may have been handed.
	unsure []tokenRange
	// seen lists, by session, the newest non-zero token each session has
	// observed.
	seen []sessionToken
}

// tokenRange holds the tokens that leaders elected by campaigns of unknown
// outcome may have had: those after the newest token handed out when the
// first of them led, and before the next one a known campaign was handed
// (before is 0 while none has been).
type tokenRange struct{ after, before int64 }

func (r tokenRange) contains(token int64) bool {
	return token > r.after && (r.before == 0 || token < r.before)
}

type sessionToken struct{ session, token int64 }

func (s electionState) seenBy(session int64) int64 {
	i, found := slices.BinarySearchFunc(s.seen, session, compareSession)
	if !found {
		return 0
	}
	return s.seen[i].token
}

func compareSession(st sessionToken, session int64) int {
	return cmp.Compare(st.session, session)
}

// mayHaveLed reports whether token can be a leader's by now: one a known
// campaign was handed, or one a campaign with an unknown outcome may have
// been.
func (s electionState) mayHaveLed(token int64) bool {
	if _, found := slices.BinarySearch(s.handed, token); found {
		return true
	}
	return slices.ContainsFunc(s.unsure, func(r tokenRange) bool { return r.contains(token) })
}

func electionStep(state, input, output any) (bool, any) {
	s := state.(electionState)
	if e, ok := input.(SessionExpiry); ok {
		s.lock = s.lock.expire(e.Session)
		return true, s
	}
	in := input.(ElectionInput)
	out, known := output.(ElectionOutput)
	if in.Op == Observe {
		if !known {
			return true, s // CheckElection drops these; a read that saw nothing known constrains nothing
		}
		return s.observe(in.Session, out.Token)
	}
	ok, lock := s.lock.step(in.mutexInput(), MutexOutput{OK: out.OK, Token: out.Token}, known)
	if !ok {
		return false, s
	}
	if in.Op == Campaign {
		switch {
		case known && out.OK && out.Token != 0:
			s.handed = append(slices.Clip(s.handed), out.Token)
			if n := len(s.unsure); n > 0 && s.unsure[n-1].before == 0 {
				// The unknown campaigns' tokens came before this one.
				s.unsure = slices.Clone(s.unsure)
				s.unsure[n-1].before = out.Token
			}
		case !known && !s.lock.held && lock.held:
			// Elected, with a token nobody saw: any after the newest
			// handed out. An open range already covers it.
			if n := len(s.unsure); n == 0 || s.unsure[n-1].before != 0 {
				s.unsure = append(slices.Clip(s.unsure), tokenRange{after: s.lock.lastAcquireToken})
			}
		}
	}
	s.lock = lock
	return true, s
}

// observe checks a read that saw the leader with token (0: none), and
// raises the session's floor. Any leader of the past may be seen, for
// ZooKeeper reads may be stale, and so may no leader; but not (a) a leader
// older than one the session has already seen, for a session's reads never
// go back, nor (b) a leader not yet elected, for a read sees only what was
// committed before it returned.
func (s electionState) observe(session, token int64) (bool, any) {
	if token == 0 {
		return true, s
	}
	floor := s.seenBy(session)
	if token < floor || !s.mayHaveLed(token) {
		return false, s
	}
	if token == floor {
		return true, s
	}
	i, found := slices.BinarySearchFunc(s.seen, session, compareSession)
	s.seen = slices.Clone(s.seen)
	if found {
		s.seen[i].token = token
	} else {
		s.seen = slices.Insert(s.seen, i, sessionToken{session, token})
	}
	return true, s
}

func electionEqual(a, b any) bool {
	x, y := a.(electionState), b.(electionState)
	return mutexEqual(x.lock, y.lock) && slices.Equal(x.handed, y.handed) &&
		slices.Equal(x.unsure, y.unsure) && slices.Equal(x.seen, y.seen)
}

// electionHash hashes how many tokens were handed out, not which, for there
// may be many: equal states still hash equally, and porcupine compares only
// states reached by the same operations, which were handed the same tokens
// anyway.
func electionHash(state any) uint64 {
	s := state.(electionState)
	h := hasher(mutexHash(s.lock)).int(int64(len(s.handed)))
	for _, r := range s.unsure {
		h = h.int(r.after).int(r.before)
	}
	for _, st := range s.seen {
		h = h.int(st.session).int(st.token)
	}
	return uint64(h)
}

func describeElectionOperation(input, output any) string {
	if e, ok := input.(SessionExpiry); ok {
		return e.String()
	}
	in := input.(ElectionInput)
	out, known := output.(ElectionOutput)
	result := "?"
	if known {
		switch in.Op {
		case Campaign:
			result = "not elected"
			if out.OK {
				result = "elected"
				if out.Token != 0 {
					result += fmt.Sprintf(", token %d", out.Token)
				}
			}
		case Resign:
			result = "failed"
			if out.OK {
				result = "resigned"
			}
		case Observe:
			result = "no leader"
			if out.Token != 0 {
				result = fmt.Sprintf("leader with token %d", out.Token)
			}
		case LeaderWrite:
			result = "rejected"
			if out.OK {
				result = "accepted"
			}
		}
	}
	return fmt.Sprintf("%s → %s", in, result)
}

func describeElectionState(state any) string {
	s := state.(electionState)
	var b strings.Builder
	if s.lock.held {
		fmt.Fprintf(&b, "led by %s", sessionName(s.lock.holder))
	} else {
		b.WriteString("no leader")
	}
	switch n := len(s.handed); {
	case n > 8:
		// a long history's would fill the report
		fmt.Fprintf(&b, "; %d tokens handed out, the newest %d", n, s.handed[n-1])
	case n > 0:
		fmt.Fprintf(&b, "; tokens handed out %v", s.handed)
	}
	for _, r := range s.unsure {
		if r.before == 0 {
			fmt.Fprintf(&b, "; maybe tokens after %d", r.after)
		} else {
			fmt.Fprintf(&b, "; maybe tokens between %d and %d", r.after, r.before)
		}
	}
	if s.lock.lastWriteToken != 0 {
		fmt.Fprintf(&b, "; resource fenced at token %d", s.lock.lastWriteToken)
	}
	for _, st := range s.seen {
		fmt.Fprintf(&b, "; %s saw token %d", sessionName(st.session), st.token)
	}
	if len(s.lock.ended) > 0 {
		names := make([]string, len(s.lock.ended))
		for i, e := range s.lock.ended {
			names[i] = sessionName(e)
		}
		fmt.Fprintf(&b, "; expired: %s", strings.Join(names, " "))
	}
	return b.String()
}

var electionModel = porcupine.Model{
	Partition:                 partitionByInput(func(in ElectionInput) string { return in.Election }),
	Init:                      func() any { return electionState{} },
	Step:                      electionStep,
	Equal:                     electionEqual,
	Hash:                      electionHash,
	DescribeOperation:         describeElectionOperation,
	DescribeState:             describeElectionState,
	DescribeOperationMetadata: describeMetadata,
}

// ElectionModel returns the porcupine model [CheckElection] runs, for
// [Check] or a harness that takes a model. Through Check, inputs are not
// validated as CheckElection validates them (an input of another type makes
// the step panic, and Check return an error), and an Observe whose outcome
// is unknown is kept rather than dropped; it constrains nothing either way.
func ElectionModel() porcupine.Model { return electionModel }

// CheckElection checks that h is a legal history of leader elections. A
// leader is a lock holder ([CheckMutex]): at most one session leads at a
// time; leadership ends with Resign or with the leader's session expiry;
// tokens grow with every new leader; an unfenced resource is written only
// by the leader, and a fenced one accepts exactly the writes whose token
// is not older than the newest it accepted.
//
// An Observe is a read, and ZooKeeper reads are sequentially consistent,
// not linearizable: a reader may see any past leader, or none (token 0,
// always allowed). Two things are checked: (a) a session never sees an
// older leader than one it saw before, and (b) the leader it sees had
// been elected: its token was handed to a Campaign before the read, or
// may have been handed to one whose outcome is unknown — any token after
// the newest known one when that Campaign took leadership, and before the
// next known one. Which token of that range it got is not pinned down,
// so two reads may see two tokens of one unknown Campaign: (b) errs
// toward Ok there. A Campaign that gave up (OK false) hands out no token:
// it claims it never led, and no read may see it lead. Only what a session
// observed raises the floor its reads are held to, not its own Campaign.
//
// Each election is checked separately; session expiries apply to all. A
// timeout of 0 means no limit; when it runs out the outcome is [Unknown].
// Inputs must be [ElectionInput] or [SessionExpiry]; outputs
// [ElectionOutput], [ElectionUnknown], or nil for operations whose
// outcome stays unknown for ever after the call.
func CheckElection(h History, timeout time.Duration) (Result, error) {
	ops := make([]porcupine.Operation, 0, len(h.Operations))
	for _, op := range h.Operations {
		switch in := op.Input.(type) {
		case SessionExpiry:
		case ElectionInput:
			if in.Op < Campaign || in.Op > LeaderWrite {
				return Result{}, fmt.Errorf("linearizability: unknown election operation %d", in.Op)
			}
			switch op.Output.(type) {
			case ElectionOutput:
			case ElectionUnknown, nil:
				if in.Op == Observe {
					continue // a read whose answer nobody saw
				}
				if op.Output == nil {
					// An output nobody saw is an unknown outcome,
					// whatever the return time says.
					op.Return = Never
				}
			default:
				return Result{}, fmt.Errorf("linearizability: %v has output of type %T, want ElectionOutput", in, op.Output)
			}
		default:
			return Result{}, fmt.Errorf("linearizability: CheckElection got input of type %T, want ElectionInput or SessionExpiry", op.Input)
		}
		ops = append(ops, toPorcupine(op))
	}
	return check("election", electionModel, ops, h.Faults, timeout), nil
}
