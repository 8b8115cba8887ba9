package linearizability

import (
	"slices"

	"github.com/anishathalye/porcupine"
)

// ElectionMutants returns the election model with one of its rules broken,
// by name, for tests to show that some history tells each from the real
// one. Most mutants bend the state before the real step sees it, so the
// rule is gone without a second copy of the step to keep in line.
func ElectionMutants() map[string]porcupine.Model {
	mutant := func(step func(s electionState, input, output any) (bool, any)) porcupine.Model {
		m := electionModel
		m.Step = func(state, input, output any) (bool, any) {
			return step(state.(electionState), input, output)
		}
		return m
	}
	bent := func(bend func(s electionState, op ElectionOp, output any) electionState) porcupine.Model {
		return mutant(func(s electionState, input, output any) (bool, any) {
			if in, ok := input.(ElectionInput); ok {
				s = bend(s, in.Op, output)
			}
			return electionStep(s, input, output)
		})
	}
	return map[string]porcupine.Model{
		// A session's reads may go back: no floor.
		"reads-not-monotonic": bent(func(s electionState, op ElectionOp, _ any) electionState {
			if op == Observe {
				s.seen = nil
			}
			return s
		}),
		// A read may see a leader not yet elected: whatever it saw counts
		// as handed out.
		"reads-from-the-future": bent(func(s electionState, op ElectionOp, output any) electionState {
			out, _ := output.(ElectionOutput)
			if i, found := slices.BinarySearch(s.handed, out.Token); op == Observe && out.Token != 0 && !found {
				s.handed = slices.Insert(slices.Clone(s.handed), i, out.Token)
			}
			return s
		}),
		// An unknown campaign's token is not bounded by the next known one.
		"unknown-tokens-unbounded": bent(func(s electionState, _ ElectionOp, _ any) electionState {
			unsure := make([]tokenRange, len(s.unsure))
			for i, r := range s.unsure {
				unsure[i] = tokenRange{after: r.after}
			}
			s.unsure = unsure
			return s
		}),
		// Tokens need not grow from one leader to the next.
		"tokens-need-not-grow": bent(func(s electionState, op ElectionOp, _ any) electionState {
			if op == Campaign {
				s.lock.lastAcquireToken = 0
			}
			return s
		}),
		// The resource is not fenced: it accepts any token.
		"resource-not-fenced": bent(func(s electionState, op ElectionOp, _ any) electionState {
			if op == LeaderWrite {
				s.lock.lastWriteToken = 0
			}
			return s
		}),
		// Two leaders at once: a campaign finds the election vacant.
		"no-exclusion": bent(func(s electionState, op ElectionOp, _ any) electionState {
			if op == Campaign {
				s.lock.held, s.lock.holder = false, 0
			}
			return s
		}),
		// A session's expiry ends nothing.
		"expiry-ends-nothing": mutant(func(s electionState, input, output any) (bool, any) {
			if _, ok := input.(SessionExpiry); ok {
				return true, s
			}
			return electionStep(s, input, output)
		}),
	}
}
