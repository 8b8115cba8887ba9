package fuzz

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// What the package's external tests (package fuzz_test) need of the engine
// to measure it: they see the built-in targets and mutants (package
// targets, which imports this one and so cannot be imported by its
// internal tests), and these hooks run campaigns the way a test's Check
// does while reading what Check keeps to itself.

// LockPath is the lock's directory in every case of the lock loop.
const LockPath = lockPath

// LongTier reports whether the tests run in the long tier (-tags long);
// RaceEnabled, whether under the race detector.
func LongTier() bool    { return longTier }
func RaceEnabled() bool { return raceEnabled }

// RapidCheck runs rapid.Check(t, prop) with rapid's -rapid.checks and
// -rapid.seed set. Under -short rapid runs a fifth of the checks asked
// for; the count is scaled to make up for it. Parallel tests may call it:
// the flags are set, read by rapid and put back under flagsMu
// (checkReadingFlags).
func RapidCheck(t *testing.T, checks int, seed uint64, prop func(*rapid.T)) {
	t.Helper()
	if testing.Short() {
		checks *= 5
	}
	checkReadingFlags(t, map[string]string{
		"rapid.checks": strconv.Itoa(checks),
		"rapid.seed":   strconv.FormatUint(seed, 10),
	}, prop)
}

// campaign runs checks cases of target from seed with opts, as a test's
// Check does, on an engine that set has adjusted first, and returns the
// engine for what it kept.
func campaign(t *testing.T, target Target, opts []Option, checks int, seed uint64, set func(e *engine)) *engine {
	e := newEngine(target.subject(), configure(opts))
	set(e)
	RapidCheck(t, checks, seed, e.property)
	return e
}

// Survey runs checks cases of target from seed, as Check does, but
// records the first finding accept accepts (any, if accept is nil)
// without failing t, and skips the cases after it. It returns the
// finding, unshrunk, and the number of the case that found it; nil and 0
// if none did.
func Survey(t *testing.T, target Target, opts []Option, checks int, seed uint64, accept func(*Finding) bool) (*Finding, int64) {
	e := campaign(t, target, opts, checks, seed, func(e *engine) { e.survey, e.surveyFor = true, accept })
	return e.lastFinding(), e.firstFail.Load()
}

// SurveyTokenless is Survey that also returns what the campaign reports
// once of a lock without fencing tokens (Report.Tokenless).
func SurveyTokenless(t *testing.T, target Target, opts []Option, checks int, seed uint64) (*Finding, string) {
	e := campaign(t, target, opts, checks, seed, func(e *engine) { e.survey = true })
	return e.lastFinding(), e.tokenlessNote()
}

// SurveyLagging is Survey on ensembles of three whose followers lag from
// the start of every case, until the schedule or the wind-down catches
// them up.
func SurveyLagging(t *testing.T, target Target, checks int, seed uint64, accept func(*Finding) bool) (*Finding, int64) {
	e := campaign(t, target, nil, checks, seed, func(e *engine) { e.survey, e.surveyFor, e.lagFromStart = true, accept, true })
	return e.lastFinding(), e.firstFail.Load()
}

// SurveyEnsemble is Survey on the real ensemble at servers: cases cases of
// the lock loop, in real time.
func SurveyEnsemble(t *testing.T, target Target, servers []string, cases int, seed uint64) (*Finding, int64) {
	e := newEngine(target.subject(), configure([]Option{OnEnsemble(servers...)}))
	e.survey = true
	e.realCampaign(t, cases, seed)
	return e.lastFinding(), e.firstFail.Load()
}

// Transcripts runs checks cases of target from seed with opts, as Survey
// does, and returns every case's transcript: its story and the server's
// event log.
func Transcripts(t *testing.T, target Target, opts []Option, checks int, seed uint64) []string {
	return transcripts(t, target, opts, checks, seed, false)
}

// AllTranscripts is Transcripts past findings: every one of the checks
// cases runs, whatever the cases before it found.
func AllTranscripts(t *testing.T, target Target, opts []Option, checks int, seed uint64) []string {
	return transcripts(t, target, opts, checks, seed, true)
}

func transcripts(t *testing.T, target Target, opts []Option, checks int, seed uint64, all bool) []string {
	var out []string
	campaign(t, target, opts, checks, seed, func(e *engine) {
		e.survey, e.countOnly = !all, all
		e.onCase = func(c *caseResult) { out = append(out, c.transcript()) }
	})
	return out
}

// CaseRecord is what one case did, as TestDumpHistories writes it: the
// history its clients recorded with the server's event log, and its story.
type CaseRecord struct {
	History, Story string
}

// Records runs checks cases of target from seed, looking for nothing, and
// returns what each did.
func Records(t *testing.T, target Target, opts []Option, checks int, seed uint64) []CaseRecord {
	var records []CaseRecord
	campaign(t, target, opts, checks, seed, func(e *engine) {
		e.countOnly = true
		e.onCase = func(c *caseResult) { records = append(records, CaseRecord{History: c.historyDump(), Story: c.story()}) }
	})
	return records
}

// CountFaults runs checks cases of target from seed with opts, looking
// for nothing, and returns the faults they drew and how many cases ran.
func CountFaults(t *testing.T, target Target, opts []Option, checks int, seed uint64) (Faults, int64) {
	e := campaign(t, target, opts, checks, seed, func(e *engine) { e.countOnly = true })
	return e.faultCounts(), e.runs.Load()
}

// historyDump is the case's history as TestDumpHistories writes it: its
// steps, the operations its clients recorded, the faults, and the
// server's event log, GUIDs elided.
func (c *caseResult) historyDump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d steps\n", c.steps)
	for _, op := range c.ops {
		// A recipe may name its nodes with random GUIDs, which the
		// operations' inputs carry.
		b.WriteString(StableName(fmt.Sprintf("%d %s %d..%d %+v -> %+v\n", op.ClientID, op.Tag, op.Call, op.Return, op.Input, op.Output)))
	}
	for _, f := range c.faults {
		fmt.Fprintf(&b, "fault %+v\n", f)
	}
	b.WriteString(c.eventLog())
	return b.String()
}
