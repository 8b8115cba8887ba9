package fuzz

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"pgregory.net/rapid"
)

// engine runs the cases of one campaign: it is the property rapid checks.
type engine struct {
	sub *subject // what the cases fuzz
	cfg config
	// ctx, when set, ends the campaign early: cases return at once.
	ctx context.Context

	runs      atomic.Int64
	steps     atomic.Int64
	failures  atomic.Int64
	firstFail atomic.Int64 // the run that failed first: cases to find

	mu       sync.Mutex
	faults   Faults            // the faults of the cases before the first finding
	last     *Finding          // the last failing run's finding: after shrinking, the shrunk one
	lastCase *caseResult       // and its case
	html     map[string]string // story → report path, so a case rerun reuses its report
	// tokenless is the first case's account of what a lock without
	// fencing tokens cannot promise (Report.Tokenless).
	tokenless string

	// onCase, when set, sees every case once it has run (tests of
	// determinism).
	onCase func(c *caseResult)
	// survey makes the property record findings without failing, and skip
	// every case after the first finding: tests that measure how soon a
	// campaign finds something use it.
	survey bool
	// surveyFor, in a survey, counts only the findings it accepts: a
	// mutant whose mistake shows in more than one way is measured by the
	// way it is meant to be found.
	surveyFor func(*Finding) bool
	// countOnly makes the property count every case's faults and look for
	// nothing: tests of what the schedules draw use it.
	countOnly bool
	// lagFromStart makes every case run on an ensemble of three whose
	// followers lag from the start (until the schedule or the wind-down
	// catches them up): tests of late watch events use it.
	lagFromStart bool
}

func newEngine(sub *subject, cfg config) *engine {
	return &engine{sub: sub, cfg: cfg, html: map[string]string{}}
}

// property runs one case. The case itself runs inside a testing/synctest
// bubble, where time is virtual and the harness decides the interleaving;
// the linearizability check runs after it, outside the bubble, as
// porcupine's timeout is a timer.
func (e *engine) property(t *rapid.T) {
	if e.survey && e.failures.Load() > 0 {
		return
	}
	run := e.runs.Add(1)
	if e.ctx != nil && e.ctx.Err() != nil {
		return
	}
	c, f := e.runAndCheck(t)
	if e.countOnly || e.failures.Load() == 0 {
		e.mu.Lock()
		e.faults.add(c.tally)
		e.mu.Unlock()
	}
	if e.countOnly {
		return
	}
	if f == nil || e.survey && e.surveyFor != nil && !e.surveyFor(f) {
		return
	}
	e.failures.Add(1)
	e.firstFail.CompareAndSwap(0, run)
	if e.survey || t.Output() != io.Discard {
		c.explainFinding(f)
	}
	// rapid runs a case silently while it searches and shrinks, and once
	// more with its output shown at the end: only then is the story worth
	// printing and the HTML report worth writing.
	if t.Output() != io.Discard && !e.survey {
		f.HTML = e.report(c, f)
		t.Logf("%s", f)
	}
	e.mu.Lock()
	e.last, e.lastCase = f, c
	e.mu.Unlock()
	if !e.survey {
		fail(t, f)
	}
}

// runAndCheck runs one case in a bubble of its own and checks its history,
// and returns it with its finding, if any.
func (e *engine) runAndCheck(t *rapid.T) (*caseResult, *Finding) {
	var c *caseResult
	rapid.SyncTest(t, func(t *rapid.T) { c = runCase(t, e.sub, e.cfg, e.lagFromStart) })
	e.steps.Add(int64(c.steps))
	if e.onCase != nil {
		e.onCase(c)
	}
	if e.countOnly {
		return c, nil
	}
	// A case stuck or leaky may also have broken mutual exclusion on the
	// way there: that finding, the worse, is the one reported.
	f := e.cfg.reported(c.finding)
	if f == nil || f.Detector == Liveness || f.Detector == Leak {
		if g := e.cfg.reported(c.checkHistory()); g != nil {
			f = g
		}
	}
	if c.h != nil && c.h.tokenless != "" {
		e.mu.Lock()
		if e.tokenless == "" {
			e.tokenless = c.h.tokenless
		}
		e.mu.Unlock()
	}
	return c, f
}

// report writes porcupine's HTML view of the case's history, once per
// story.
func (e *engine) report(c *caseResult, f *Finding) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.html[f.Story]; ok {
		return p
	}
	p, err := c.writeHTML(e.cfg.HTMLDir)
	if err != nil {
		p = "(no HTML report: " + err.Error() + ")"
	}
	e.html[f.Story] = p
	return p
}

// fail fails the case from a line of its own for each detector: rapid
// keeps a shrunk case only if it fails at the same place, so shrinking keeps
// the detector of the case it started from.
func fail(t *rapid.T, f *Finding) {
	msg := fmt.Sprintf("%s: %s", f.Detector, f.Summary)
	switch f.Detector {
	case MutualExclusion:
		t.Fatal(msg)
	case Herd:
		t.Fatal(msg)
	case Polling:
		t.Fatal(msg)
	case Liveness:
		t.Fatal(msg)
	case Leak:
		t.Fatal(msg)
	case UnfencedWrite:
		t.Fatal(msg)
	case StateReport:
		t.Fatal(msg)
	default:
		t.Fatal(msg)
	}
}

// lastFinding returns the finding of the last failing run.
func (e *engine) lastFinding() *Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// faultCounts returns the faults counted so far.
func (e *engine) faultCounts() Faults {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.faults
}
