package fuzz

import (
	"fmt"
	"sort"

	"github.com/zksim/zksim/linearizability"
)

// A finding's summary says in one sentence what went wrong, naming the
// clients, the steps of the story and the tokens. Porcupine only says that
// no order of the history is legal. Most broken histories show why
// plainly: two holds of different sessions that no order can separate
// (neither could have ended before the other began), a token no newer
// than one handed out before, a write accepted from an expired session
// after another took the lock. When none shows, the history is cut at the
// return of each claim in turn (an acquisition, a TryLock that found the
// lock taken, a write) and porcupine checks the cuts: the first illegal
// one ends with the culprit. Cuts grow monotonically illegal: a claim with
// a definite outcome joins a cut once it has returned, and an operation
// whose outcome is unknown (every release is checked that way) joins once
// it was called, since it can only add ways to order the rest.

// opStep returns the story's number for the step in which operation i of
// the history took effect as porcupine orders it: for a Lock, the step in
// which it returned (the story tells the client holding a move or so
// later, when the harness lets it on); for a write or an expiry, which
// take no time, the step they happened in.
func (c *caseResult) opStep(i int) int {
	op := c.ops[i]
	if op.Return != linearizability.Never && op.Return > op.Call {
		return c.h.stampStep(op.Return)
	}
	return c.h.stampStep(op.Call)
}

// claim reports whether op says something about the lock's state that can
// make a history illegal: an acquisition, a TryLock that found the lock
// taken, or (with writes) a write.
func claim(op linearizability.Operation, withWrites bool) bool {
	in, ok := op.Input.(linearizability.MutexInput)
	if !ok || !definite(op) {
		return false
	}
	out, ok := op.Output.(linearizability.MutexOutput)
	if !ok {
		return false
	}
	switch in.Op {
	case linearizability.Acquire:
		return out.OK
	case linearizability.TryLock:
		return true
	case linearizability.Write:
		return withWrites
	}
	return false
}

// historyUpTo returns the part of ops that is in the history up to instant t:
// definite operations that returned by t, and the others once called.
func historyUpTo(ops []linearizability.Operation, t int64) []linearizability.Operation {
	var out []linearizability.Operation
	for _, op := range ops {
		if definite(op) && op.Return <= t || !definite(op) && op.Call <= t {
			out = append(out, op)
		}
	}
	return out
}

// culprit returns the index in checked of the first claim whose cut is
// illegal, -1 if none is.
func (c *caseResult) culprit(checked linearizability.History, withWrites bool) int {
	var claims []int
	for i, op := range checked.Operations {
		if claim(op, withWrites) {
			claims = append(claims, i)
		}
	}
	sort.SliceStable(claims, func(a, b int) bool {
		return checked.Operations[claims[a]].Return < checked.Operations[claims[b]].Return
	})
	illegalAt := func(k int) bool {
		t := checked.Operations[claims[k]].Return
		return illegal(linearizability.History{Operations: historyUpTo(checked.Operations, t), Faults: checked.Faults})
	}
	// sort.Search has found illegalAt(k) true when k is in range.
	k := sort.Search(len(claims), illegalAt)
	if k == len(claims) {
		return -1
	}
	return claims[k]
}

// explain says in one sentence which claim of the history no order
// allows, and what stands against it, and returns the index in the case's
// ops of the call it names; "" and -1 when it cannot tell (a history
// from a real ensemble, which the story does not number by steps). tokens
// says that the tokens alone break the lock's history.
func (c *caseResult) explain(withWrites, tokens bool) (string, int) {
	h := c.h
	if h == nil {
		return "", -1
	}
	ops, from := c.checkedOps(withWrites)
	if s, named := c.plainly(ops, from, withWrites, tokens); s != "" {
		return s, named
	}
	checked := linearizability.History{Operations: ops, Faults: c.faults}
	k := c.culprit(checked, withWrites)
	if k < 0 {
		return "", -1
	}
	op := ops[k]
	in := op.Input.(linearizability.MutexInput)
	out := op.Output.(linearizability.MutexOutput)
	who, step := h.porcClient(op.ClientID), c.opStep(from[k])
	before := historyUpTo(ops, op.Return)
	if in.Op == linearizability.Write {
		return c.explainWrite(ops, from, k)
	}
	if in.Op == linearizability.TryLock && !out.OK {
		return fmt.Sprintf("%s's TryLock at step %d found the lock taken, and no order of the Lock and Unlock calls and session expiries up to it allows that", who, step), from[k]
	}
	// A token no newer than one handed out before is wrong whoever holds.
	if !illegal(withoutTokens(linearizability.History{Operations: before, Faults: c.faults})) {
		for i := k - 1; i >= 0; i-- {
			if _, o, ok := hold(ops[i]); ok && ops[i].Return < op.Return && o.Token >= out.Token {
				return staleToken(who, step, out.Token, h.porcClient(ops[i].ClientID), c.opStep(from[i]), o.Token), from[k]
			}
		}
	}
	// The other hold open when it returned: acquired by another session,
	// with no release called and no expiry of its session before.
	for i := len(ops) - 1; i >= 0; i-- {
		p := ops[i]
		pin, pout, ok := hold(p)
		if i == k || !ok || p.Return > op.Return || pin.Session == in.Session || ended(ops, pin.Session, p.Return, op.Return) {
			continue
		}
		return heldMeanwhile(who, step, out.Token, h.porcClient(p.ClientID), c.opStep(from[i]), pout.Token, pin.Session), from[k]
	}
	return fmt.Sprintf("%s acquired at step %d%s, and no order of the Lock and Unlock calls and session expiries before it allows that", who, step, withToken(out.Token)), from[k]
}

// ended reports whether session's hold taken at from may have ended by to:
// a release of it was called, or the session expired, in between.
func ended(ops []linearizability.Operation, session, from, to int64) bool {
	for _, o := range ops {
		switch in := o.Input.(type) {
		case linearizability.MutexInput:
			if in.Op == linearizability.Release && in.Session == session && o.Call > from && o.Call < to {
				return true
			}
		case linearizability.SessionExpiry:
			if in.Session == session && o.Call < to {
				return true
			}
		}
	}
	return false
}

// explainWrite says which write to the protected resource no order allows:
// one whose holder's session had expired, accepted after another client
// had taken the lock.
func (c *caseResult) explainWrite(ops []linearizability.Operation, from []int, k int) (string, int) {
	h := c.h
	op := ops[k]
	in := op.Input.(linearizability.MutexInput)
	out := op.Output.(linearizability.MutexOutput)
	who, step := h.porcClient(op.ClientID), c.opStep(from[k])
	verdict := "the resource accepted it"
	if !out.OK {
		verdict = "the resource refused it"
	}
	expired := ""
	for i, o := range ops {
		if e, ok := o.Input.(linearizability.SessionExpiry); ok && e.Session == in.Session && o.Call < op.Call {
			expired = fmt.Sprintf(" after its session %#x had %s at step %d", in.Session, h.endedHow(in.Session), c.opStep(from[i]))
		}
	}
	other := ""
	for i := k - 1; i >= 0; i-- {
		p := ops[i]
		if pin, pout, ok := hold(p); ok && p.Return < op.Call && pin.Session != in.Session {
			other = fmt.Sprintf(" and %s had acquired at step %d%s", h.porcClient(p.ClientID), c.opStep(from[i]), withToken(pout.Token))
			break
		}
	}
	return fmt.Sprintf("%s wrote to the protected resource at step %d%s%s%s, and %s", who, step, withToken(in.Token), expired, other, verdict), from[k]
}

// staleToken says that who acquired with a token no newer than one another
// client got before.
func staleToken(who string, step int, token int64, before string, beforeStep int, beforeToken int64) string {
	return fmt.Sprintf("%s acquired at step %d with token %d, no newer than token %d that %s got at step %d: a fenced resource would refuse the later holder",
		who, step, token, beforeToken, before, beforeStep)
}

// heldMeanwhile says that who acquired while another client held the lock
// in a session that had neither released it nor expired.
func heldMeanwhile(who string, step int, token int64, holder string, since int, holderToken, session int64) string {
	return fmt.Sprintf("%s acquired at step %d%s while %s had held since step %d%s, had not called Unlock, and its session %#x had neither expired nor been closed",
		who, step, withToken(token), holder, since, withToken(holderToken), session)
}

// plainly looks for what breaks the history without porcupine's help,
// and says it, with the index in the case's ops of the call it names; ""
// and -1 if nothing shows plainly.
func (c *caseResult) plainly(ops []linearizability.Operation, from []int, withWrites, tokens bool) (string, int) {
	h := c.h
	var holds []int
	for i, op := range ops {
		if _, _, ok := hold(op); ok {
			holds = append(holds, i)
		}
	}
	sort.SliceStable(holds, func(a, b int) bool { return ops[holds[a]].Return < ops[holds[b]].Return })
	if withWrites {
		for k, op := range ops {
			in, ok := op.Input.(linearizability.MutexInput)
			out, _ := op.Output.(linearizability.MutexOutput)
			if !ok || in.Op != linearizability.Write || !out.OK {
				continue
			}
			// Accepted, though another session took the lock with a newer
			// token before it.
			for _, j := range holds {
				jin, jout, _ := hold(ops[j])
				if ops[j].Return < op.Call && jin.Session != in.Session && jout.Token > in.Token {
					return c.explainWrite(ops, from, k)
				}
			}
		}
		return "", -1
	}
	for x, j := range holds {
		jin, jout, _ := hold(ops[j])
		for _, i := range holds[:x] {
			iin, iout, _ := hold(ops[i])
			switch {
			case tokens:
				// i returned before j was called, so i came first; j's
				// token must be newer (a reentrant hold keeps its own).
				if ops[i].Return < ops[j].Call && jout.Token != 0 && jout.Token <= iout.Token && !(iin.Session == jin.Session && iout.Token == jout.Token) {
					return staleToken(h.porcClient(ops[j].ClientID), c.opStep(from[j]), jout.Token, h.porcClient(ops[i].ClientID), c.opStep(from[i]), iout.Token), from[j]
				}
			case iin.Session != jin.Session && !ended(ops, iin.Session, ops[i].Call, ops[j].Return) && !ended(ops, jin.Session, ops[j].Call, ops[i].Return):
				// Whichever took effect first, its hold could not have
				// ended before the other's began.
				return heldMeanwhile(h.porcClient(ops[j].ClientID), c.opStep(from[j]), jout.Token, h.porcClient(ops[i].ClientID), c.opStep(from[i]), iout.Token, iin.Session), from[j]
			}
		}
	}
	return "", -1
}
