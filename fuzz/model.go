package fuzz

import (
	"fmt"
	"sort"

	"github.com/zksim/zksim/linearizability"
)

// This file checks a Recipe's history with the recipe's own model, and
// names the first call no order allows.

// checkModel is the Model detector: porcupine checks the whole history —
// what the ops recorded, and the session expiries from the server's log —
// against the recipe's model.
func (c *caseResult) checkModel() *Finding {
	sub := c.h.sub
	if sub.model.Init == nil || len(c.ops) == 0 || !c.modelIllegal(c.ops) {
		return nil
	}
	c.verdict = &historyVerdict{model: true}
	c.verdict.finding = c.historyFinding(Model, fmt.Sprintf("porcupine finds no order of the recorded calls and session expiries that the %s's model allows", sub.name))
	return c.verdict.finding
}

// modelIllegal reports whether porcupine finds ops illegal under the
// recipe's model; a check that runs out of time finds nothing.
func (c *caseResult) modelIllegal(ops []linearizability.Operation) bool {
	res, err := linearizability.Check(linearizability.History{Operations: ops, Faults: c.faults}, c.h.sub.model, checkTimeout)
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: checking the %s's history: %v", c.h.sub.name, err))
	}
	return res.Outcome == linearizability.Illegal
}

// explainModel names the first call whose return makes the history
// illegal: the history cut at each call's return (calls made later left
// out, calls still open then kept with their outcome unknown) is legal up
// to it, and returns its index in the case's ops; "" and -1 if it cannot
// tell.
func (c *caseResult) explainModel() (string, int) {
	var returned []int
	for i, op := range c.ops {
		if op.Return != linearizability.Never && op.Output != nil {
			returned = append(returned, i)
		}
	}
	sort.SliceStable(returned, func(a, b int) bool { return c.ops[returned[a]].Return < c.ops[returned[b]].Return })
	cut := func(t int64) []linearizability.Operation {
		var out []linearizability.Operation
		for _, op := range c.ops {
			switch {
			case op.Return != linearizability.Never && op.Return <= t:
				out = append(out, op)
			case op.Call <= t:
				op.Output, op.Return = nil, linearizability.Never
				out = append(out, op)
			}
		}
		return out
	}
	k := sort.Search(len(returned), func(k int) bool { return c.modelIllegal(cut(c.ops[returned[k]].Return)) })
	if k == len(returned) {
		return "", -1
	}
	i := returned[k]
	op := c.ops[i]
	what := fmt.Sprintf("%v → %v", op.Input, op.Output)
	if describe := c.h.sub.model.DescribeOperation; describe != nil {
		what = describe(op.Input, op.Output)
	}
	return fmt.Sprintf("%s's call returning at step %d (%s) is the first that no order of the calls and session expiries before it allows",
		c.h.porcClient(op.ClientID), c.opStep(i), what), i
}

// modelHTML writes porcupine's view of a Recipe's history to dir.
func (c *caseResult) modelHTML(dir string) (string, error) {
	res, err := linearizability.Check(c.history(), c.h.sub.model, checkTimeout)
	if err != nil {
		return "", err
	}
	return c.marked(res).WriteReport(dir)
}
