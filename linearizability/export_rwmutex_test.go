package linearizability

import "github.com/anishathalye/porcupine"

// RWMutexMutants returns the read/write lock model with one of its rules
// broken, by name, for tests to show that some history tells each from
// the real one. Most mutants hide part of the state from the real step,
// and put it back afterwards, so the rule is gone without a second copy of
// the step to keep in line.
func RWMutexMutants() map[string]porcupine.Model {
	mutant := func(step func(s rwMutexState, input, output any) (bool, any)) porcupine.Model {
		m := rwMutexModel
		m.Step = func(state, input, output any) (bool, any) {
			return step(state.(rwMutexState), input, output)
		}
		return m
	}
	// on runs step for operations op, and the real step for the rest.
	on := func(op RWMutexOp, step func(s rwMutexState, in RWMutexInput, output any) (bool, any)) porcupine.Model {
		return mutant(func(s rwMutexState, input, output any) (bool, any) {
			if in, ok := input.(RWMutexInput); ok && in.Op == op {
				return step(s, in, output)
			}
			return rwMutexStep(s, input, output)
		})
	}
	// unheld runs the real step as if no session held the write side,
	// and then puts the writer back.
	unheld := func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
		held, holder := s.write.held, s.write.holder
		s.write.held, s.write.holder = false, 0
		ok, next := rwMutexStep(s, in, output)
		n := next.(rwMutexState)
		if held {
			n.write.held, n.write.holder = true, holder
		}
		return ok, n
	}
	// unread runs the real step as if the given readers held nothing, and
	// then puts them back.
	unread := func(s rwMutexState, in RWMutexInput, output any, hide func(sessionCount) bool) (bool, any) {
		var hidden, shown []sessionCount
		for _, r := range s.readers {
			if hide(r) {
				hidden = append(hidden, r)
			} else {
				shown = append(shown, r)
			}
		}
		s.readers = shown
		ok, next := rwMutexStep(s, in, output)
		n := next.(rwMutexState)
		for _, r := range hidden {
			for range r.n {
				n = n.addRead(r.session)
			}
		}
		return ok, n
	}
	return map[string]porcupine.Model{
		// Two writers at once: a write acquisition finds no writer.
		"writers-together": on(WriteAcquire, unheld),
		// A writer with readers: a write acquisition finds no reader.
		"writer-with-readers": on(WriteAcquire, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			return unread(s, in, output, func(sessionCount) bool { return true })
		}),
		// A session's own read holds do not keep its write out.
		"both-sides-by-one-session": on(WriteAcquire, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			return unread(s, in, output, func(r sessionCount) bool { return r.session == in.Session })
		}),
		// A reader with a writer: a read acquisition finds no writer.
		"reader-with-writer": on(ReadAcquire, unheld),
		// Readers exclude each other: a read acquisition finds the lock
		// taken while anyone reads.
		"readers-exclude-readers": on(ReadAcquire, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			if len(s.readers) > 0 && !s.write.held {
				s.write.held, s.write.holder = true, s.readers[0].session
				ok, next := rwMutexStep(s, in, output)
				n := next.(rwMutexState)
				n.write.held, n.write.holder = false, 0
				return ok, n
			}
			return rwMutexStep(s, in, output)
		}),
		// A session's read holds are not counted: one release ends all.
		"read-holds-not-counted": on(ReadRelease, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			ok, next := rwMutexStep(s, in, output)
			return ok, next.(rwMutexState).dropRead(in.Session, true)
		}),
		// A reader may write the unfenced resource: its write finds it
		// holding the write side.
		"readers-write-unfenced": on(RWWrite, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			if in.Token == 0 && !s.write.held && s.reads(in.Session) > 0 {
				s.write.held, s.write.holder = true, in.Session
				ok, next := rwMutexStep(s, in, output)
				n := next.(rwMutexState)
				n.write.held, n.write.holder = false, 0
				return ok, n
			}
			return rwMutexStep(s, in, output)
		}),
		// Write tokens need not grow.
		"tokens-need-not-grow": on(WriteAcquire, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			s.write.lastAcquireToken = 0
			return rwMutexStep(s, in, output)
		}),
		// The resource is not fenced: it accepts any token.
		"resource-not-fenced": on(RWWrite, func(s rwMutexState, in RWMutexInput, output any) (bool, any) {
			s.write.lastWriteToken = 0
			return rwMutexStep(s, in, output)
		}),
		// An acquisition that answered OK false claims nothing.
		"unavailable-claims-nothing": mutant(func(s rwMutexState, input, output any) (bool, any) {
			in, isRW := input.(RWMutexInput)
			out, known := output.(RWMutexOutput)
			if isRW && known && !out.OK && (in.Op == ReadAcquire || in.Op == WriteAcquire) {
				return true, s
			}
			return rwMutexStep(s, input, output)
		}),
		// An acquisition of unknown outcome never takes effect.
		"unknown-acquisitions-hold-nothing": mutant(func(s rwMutexState, input, output any) (bool, any) {
			in, isRW := input.(RWMutexInput)
			if _, known := output.(RWMutexOutput); isRW && !known && (in.Op == ReadAcquire || in.Op == WriteAcquire) {
				return true, s
			}
			return rwMutexStep(s, input, output)
		}),
		// A session's expiry ends nothing.
		"expiry-ends-nothing": mutant(func(s rwMutexState, input, output any) (bool, any) {
			if _, ok := input.(SessionExpiry); ok {
				return true, s
			}
			return rwMutexStep(s, input, output)
		}),
		// A session's expiry ends its write hold, not its reads.
		"expiry-ends-no-reads": mutant(func(s rwMutexState, input, output any) (bool, any) {
			if e, ok := input.(SessionExpiry); ok {
				s.write = s.write.expire(e.Session)
				return true, s
			}
			return rwMutexStep(s, input, output)
		}),
	}
}
