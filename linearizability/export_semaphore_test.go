package linearizability

import (
	"math"

	"github.com/anishathalye/porcupine"
)

// SemaphoreMutants returns the semaphore model with one of its rules
// broken, by name, for tests to show that some history tells each from
// the real one. Most mutants bend the input or the state before the real
// step sees it.
func SemaphoreMutants() map[string]porcupine.Model {
	mutant := func(step func(s semaphoreState, input, output any) (bool, any)) porcupine.Model {
		m := semaphoreModel
		m.Step = func(state, input, output any) (bool, any) {
			return step(state.(semaphoreState), input, output)
		}
		return m
	}
	// on runs step for operations op, and the real step for the rest.
	on := func(op SemaphoreOp, step func(s semaphoreState, in SemaphoreInput, output any) (bool, any)) porcupine.Model {
		return mutant(func(s semaphoreState, input, output any) (bool, any) {
			if in, ok := input.(SemaphoreInput); ok && in.Op == op {
				return step(s, in, output)
			}
			return semaphoreStep(s, input, output)
		})
	}
	withMax := func(bend func(int) int) porcupine.Model {
		return on(LeaseAcquire, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			in.Max = bend(in.Max)
			return semaphoreStep(s, in, output)
		})
	}
	return map[string]porcupine.Model{
		// No limit at all.
		"no-limit": withMax(func(int) int { return math.MaxInt }),
		// One lease too many, or too few.
		"one-too-many": withMax(func(n int) int { return n + 1 }),
		"one-too-few":  withMax(func(n int) int { return n - 1 }),
		// An expired session may still acquire.
		"expired-may-acquire": on(LeaseAcquire, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			ended := s.ended
			s.ended = nil
			ok, next := semaphoreStep(s, in, output)
			n := next.(semaphoreState)
			n.ended = ended
			return ok, n
		}),
		// An acquisition that answered OK false claims nothing.
		"none-free-claims-nothing": on(LeaseAcquire, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			if out, known := output.(SemaphoreOutput); known && !out.OK {
				return true, s
			}
			return semaphoreStep(s, in, output)
		}),
		// An acquisition of unknown outcome never takes effect.
		"unknown-acquisitions-hold-nothing": on(LeaseAcquire, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			if _, known := output.(SemaphoreOutput); !known {
				return true, s
			}
			return semaphoreStep(s, in, output)
		}),
		// A release needs no hold: it succeeds whatever the session held.
		"release-needs-no-hold": on(LeaseRelease, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			return true, s.drop(heldLease{in.Session, in.Lease})
		}),
		// A release ends whichever lease its session holds, or, failing
		// that, the lease of that name whoever holds it.
		"release-ignores-names": on(LeaseRelease, func(s semaphoreState, in SemaphoreInput, output any) (bool, any) {
			for _, l := range s.leases {
				if l.session == in.Session || l.name == in.Lease {
					in.Session, in.Lease = l.session, l.name
					break
				}
			}
			return semaphoreStep(s, in, output)
		}),
		// A session's expiry ends nothing.
		"expiry-ends-nothing": mutant(func(s semaphoreState, input, output any) (bool, any) {
			if _, ok := input.(SessionExpiry); ok {
				return true, s
			}
			return semaphoreStep(s, input, output)
		}),
		// A session's expiry ends only one of its leases.
		"expiry-ends-one-lease": mutant(func(s semaphoreState, input, output any) (bool, any) {
			if e, ok := input.(SessionExpiry); ok {
				for _, l := range s.leases {
					if l.session == e.Session {
						s = s.drop(l)
						break
					}
				}
				s.ended = s.expire(e.Session).ended
				return true, s
			}
			return semaphoreStep(s, input, output)
		}),
	}
}
