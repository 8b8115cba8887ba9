package fuzz

import (
	"fmt"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// checkTimeout bounds porcupine's work on one case's history. Histories of a
// case are short; a check that runs out of time is not a finding.
const checkTimeout = 10 * time.Second

// history is the recorded history, for porcupine.
func (c *caseResult) history() linearizability.History {
	return linearizability.History{Operations: c.ops, Faults: c.faults}
}

// checkHistory checks the recorded history with porcupine and the
// linearizability package's mutex model: first the lock alone (Lock calls
// and session expiries), then with the writes to the protected resource.
//
// Releases are checked as if their outcome were unknown: each may take
// effect at any instant after it was called, or never. A release's claim to
// have held the lock to the end is not the lock's promise to check: a lock
// whose hold outlives its session (one on a plain node) makes it truthfully
// after the session expired, and the model takes every hold to end with its
// session. What must hold is that no order of releases and expiries lets
// the acquisitions, and then the writes, be what they were.
func (c *caseResult) checkHistory() *Finding {
	if c.h != nil && !c.h.sub.isLock() {
		return c.checkModel()
	}
	if len(c.ops) == 0 {
		return nil
	}
	if lockOnly := c.checked(false); illegal(lockOnly) {
		tokens := !illegal(withoutTokens(lockOnly))
		summary := "porcupine finds no order of the recorded Lock and Unlock calls and session expiries that a lock allows"
		if tokens {
			summary = "the fencing tokens do not grow with each acquisition: a later holder got an older token, which a fenced resource would refuse"
		}
		c.verdict = &historyVerdict{tokens: tokens}
		c.verdict.finding = c.historyFinding(MutualExclusion, summary)
		return c.verdict.finding
	}
	if illegal(c.checked(true)) {
		if c.h != nil && !c.h.fencedLock() {
			// The writes of a lock without tokens: the campaign reports
			// what it cannot promise once (Report.Tokenless).
			if c.h.tokenless == "" {
				c.h.tokenless = "porcupine finds no order of the recorded writes to the protected resource that a lock allows: the locker hands out no fencing token"
			}
			return nil
		}
		c.verdict = &historyVerdict{withWrites: true}
		c.verdict.finding = c.historyFinding(UnfencedWrite, "porcupine finds no order of the recorded writes to the protected resource that the lock and its fencing allow")
		return c.verdict.finding
	}
	return nil
}

// explainFinding puts, in the summary of f if it is porcupine's finding,
// the sentence that names the culprit first and porcupine's words after
// it; without a culprit (a real ensemble's history) porcupine's words
// stay alone. It is done only for a finding that is shown or kept: the
// search for the culprit may take several more checks of the history,
// which the many silent runs of shrinking need not pay for (rapid compares
// the summaries of silent runs with each other only).
func (c *caseResult) explainFinding(f *Finding) {
	v := c.verdict
	if v == nil || v.finding != f || v.explained {
		return
	}
	v.explained = true
	explain := func() (string, int) { return c.explain(v.withWrites, v.tokens) }
	if v.model {
		explain = c.explainModel
	}
	s, named := explain()
	v.named = named
	if s != "" {
		f.Summary = StableName(s + " (" + f.Summary + ")")
		f.Story = c.story() + "✗ " + string(f.Detector) + ": " + f.Summary + "\n"
	}
}

// checked returns the history to check: releases with an unknown outcome,
// and writes only if withWrites.
func (c *caseResult) checked(withWrites bool) linearizability.History {
	ops, _ := c.checkedOps(withWrites)
	return linearizability.History{Operations: ops, Faults: c.faults}
}

// checkedOps returns the operations checked returns, and for each the
// index of the recorded operation it comes from.
func (c *caseResult) checkedOps(withWrites bool) (ops []linearizability.Operation, from []int) {
	ops = make([]linearizability.Operation, 0, len(c.ops))
	for i, op := range c.ops {
		if in, ok := op.Input.(linearizability.MutexInput); ok {
			switch in.Op {
			case linearizability.Write:
				if !withWrites {
					continue
				}
			case linearizability.Release:
				op.Output, op.Return = nil, linearizability.Never
			}
		}
		ops = append(ops, op)
		from = append(from, i)
	}
	return ops, from
}

// withoutTokens drops the tokens acquisitions were handed.
func withoutTokens(h linearizability.History) linearizability.History {
	for i, op := range h.Operations {
		if out, ok := op.Output.(linearizability.MutexOutput); ok {
			out.Token = 0
			h.Operations[i].Output = out
		}
	}
	return h
}

func illegal(h linearizability.History) bool {
	res, err := linearizability.CheckMutex(h, checkTimeout)
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: the recorded history is malformed: %v", err))
	}
	return res.Outcome == linearizability.Illegal
}

func (c *caseResult) historyFinding(d Detector, summary string) *Finding {
	return &Finding{
		Detector: d,
		Summary:  summary,
		Story:    c.story() + "✗ " + string(d) + ": " + summary + "\n",
		EventLog: c.eventLog(),
	}
}

// writeHTML writes porcupine's visualization of the case's history to dir.
func (c *caseResult) writeHTML(dir string) (string, error) {
	if c.h != nil && !c.h.sub.isLock() {
		return c.modelHTML(dir)
	}
	res, err := linearizability.CheckMutex(c.checked(true), checkTimeout)
	if err != nil {
		return "", err
	}
	return c.marked(res).WriteReport(dir)
}

// marked marks, in the report of res, the call the finding's summary
// names, if it names one: the report then opens at that call, not at
// whichever of its neighbours porcupine shows first.
func (c *caseResult) marked(res linearizability.Result) linearizability.Result {
	if v := c.verdict; v != nil && v.explained && v.named >= 0 && v.named < len(c.ops) {
		return res.Mark(c.ops[v.named], v.finding.Summary)
	}
	return res
}
