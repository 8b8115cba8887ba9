package linearizability

import (
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
