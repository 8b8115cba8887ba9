package linearizability

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Outcome is the verdict of a check.
type Outcome = porcupine.CheckResult

// Outcomes.
const (
	// Ok: the history is linearizable with respect to the model.
	Ok Outcome = porcupine.Ok
	// Illegal: no linearization exists; the history shows a violation.
	Illegal Outcome = porcupine.Illegal
	// Unknown: the check ran out of time before deciding. It is not a pass.
	Unknown Outcome = porcupine.Unknown
)

// Result is the result of a check.
type Result struct {
	Outcome Outcome
	// Operations is the number of operations checked, after unknown reads
	// (which constrain nothing) were dropped.
	Operations int
	// UnknownOperations is how many of them have an unknown outcome.
	UnknownOperations int

	name    string
	model   porcupine.Model
	ops     []porcupine.Operation
	faults  []Fault
	timeout time.Duration
	mark    *mark // the operation a finding names, for the report
}

// check runs porcupine over ops. A timeout of 0 means no limit.
func check(name string, model porcupine.Model, ops []porcupine.Operation, faults []Fault, timeout time.Duration) Result {
	unknown := 0
	for _, op := range ops {
		if op.Return == Never {
			unknown++
		}
	}
	return Result{
		Outcome:           porcupine.CheckOperationsTimeout(model, ops, timeout),
		Operations:        len(ops),
		UnknownOperations: unknown,
		name:              name,
		model:             model,
		ops:               ops,
		faults:            faults,
		timeout:           timeout,
	}
}

// Check checks h against a model of the caller's own with porcupine. The
// Result's report ([Result.WriteReport]) shows the history's faults and the
// model's descriptions of operations and states, as the package's own
// checks do; without a DescribeOperationMetadata, it shows the operations'
// tags.
//
// The operations reach the model as recorded, but for one thing: an
// operation whose output is nil has an unknown outcome for ever after its
// call (its Return becomes [Never]), as in [CheckMutex], so that porcupine
// may linearize it anywhere after its call, which includes not at all. A
// [SessionExpiry] is the exception: it has no output, and its Call and
// Return bound when the session expired. An operation of the caller's own
// recorded with [Recorder.Observe] should therefore have a non-nil output.
//
// The history may hold SessionExpiry inputs, which no client invoked: a
// harness records one for each session that expired or was closed. The
// model must accept them — its Step gets them like any other input; one to
// which sessions mean nothing returns true and the state as it was — and
// its Partition, if it has one, should put each of them in every partition,
// for the session may have held something in any. A Step that panics (on
// an input it did not expect, say) makes Check return an error that names
// the input, instead of crashing the program from one of porcupine's
// goroutines.
//
// The model must have Init, and Step or StepContext. A timeout of 0 means
// no limit; when it runs out the outcome is [Unknown].
func Check(h History, model porcupine.Model, timeout time.Duration) (Result, error) {
	if model.Init == nil || (model.Step == nil && model.StepContext == nil) {
		return Result{}, errors.New("linearizability: Check needs a model with Init, and Step or StepContext")
	}
	if model.DescribeOperationMetadata == nil {
		model.DescribeOperationMetadata = describeMetadata
	}
	var g stepGuard
	g.wrap(&model)
	ops := make([]porcupine.Operation, len(h.Operations))
	for i, op := range h.Operations {
		if _, expiry := op.Input.(SessionExpiry); !expiry && op.Output == nil {
			op.Return = Never
		}
		ops[i] = toPorcupine(op)
	}
	res := check("check", model, ops, h.Faults, timeout)
	if err := g.failure(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// stepGuard catches a panic in a model's step, which porcupine would let
// crash the program from a goroutine of its own, and keeps the first for
// Check to return. The step that panicked reports that the operation could
// not be taken.
type stepGuard struct {
	mu  sync.Mutex
	err error
}

func (g *stepGuard) wrap(m *porcupine.Model) {
	if step := m.Step; step != nil {
		m.Step = func(state, input, output any) (ok bool, next any) {
			defer g.catch(input, output)
			return step(state, input, output)
		}
	}
	if step := m.StepContext; step != nil {
		m.StepContext = func(ctx context.Context, state, input, output any) (ok bool, next any) {
			defer g.catch(input, output)
			return step(ctx, state, input, output)
		}
	}
}

// catch is deferred by a step: recover works only in the deferred call
// itself. A step that panics returns its zero results: false, nil.
func (g *stepGuard) catch(input, output any) {
	p := recover()
	if p == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = fmt.Errorf("linearizability: the model's step panicked on input %#v, output %#v: %v\n%s", input, output, p, debug.Stack())
	}
}

func (g *stepGuard) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// toPorcupine converts an operation; the tag travels as metadata, for
// reports.
func toPorcupine(op Operation) porcupine.Operation {
	var metadata any
	if op.Tag != "" {
		metadata = op.Tag
	}
	return porcupine.Operation{
		ClientId: op.ClientID,
		Input:    op.Input,
		Call:     op.Call,
		Output:   op.Output,
		Return:   op.Return,
		Metadata: metadata,
	}
}

// partitionByInput is a model's Partition for inputs of type In, checked
// one by the key each names (a lock's path, an election's): operations of
// any other input (a session expiry) affect every group.
func partitionByInput[In any](key func(In) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		return partitionBy(ops, func(op porcupine.Operation) (string, bool) {
			if in, ok := op.Input.(In); ok {
				return key(in), false
			}
			return "", true
		})
	}
}

// partitionBy groups ops by key, in order of first appearance. Operations
// whose key reports global (a session expiry, a sync) affect every group and
// are added to each of them; with no keyed operation at all they form one
// group.
func partitionBy(ops []porcupine.Operation, key func(porcupine.Operation) (k string, global bool)) [][]porcupine.Operation {
	var groups [][]porcupine.Operation
	var globals []porcupine.Operation
	index := make(map[string]int)
	for _, op := range ops {
		k, global := key(op)
		if global {
			globals = append(globals, op)
			continue
		}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], op)
	}
	if len(groups) == 0 {
		if len(globals) == 0 {
			return nil
		}
		return [][]porcupine.Operation{globals}
	}
	for i := range groups {
		groups[i] = append(groups[i], globals...)
	}
	return groups
}
