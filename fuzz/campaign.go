package fuzz

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// This file is Run's campaign: its cases by index, on as many workers as
// asked, one slice of them if the campaign is sharded.
//
// Case k of the campaign is the case rapid.Check runs k-th from its seed
// (caseSeed, in shim.go), so it depends on the campaign's seed and its
// index only, whichever worker or shard runs it, and the first failing
// case by index is the same with one worker or many. Once the cases up to
// it have run, the campaign runs it again, alone, through rapid.Check,
// which shrinks it and writes the fail file as a test's campaign does.

// shardCases describes the cases shard (from 1) of shards runs, of a
// campaign of cases: every shards-th index, from shard-1, so that each
// shard draws from the whole campaign, and shards together run every case
// once. It returns how many there are and the index of the i-th; a
// campaign may be far too long to list (Cases 1<<30, stopped by its ctx).
func shardCases(cases, shard, shards int) (n int, index func(i int) int) {
	if shards < 1 {
		shard, shards = 1, 1
	}
	if cases >= shard {
		n = (cases-shard)/shards + 1
	}
	return n, func(i int) int { return shard - 1 + i*shards }
}

// caseOutcome is what a case of the search left: its steps, its faults,
// and its finding.
type caseOutcome struct {
	ran       bool
	steps     int
	tally     Faults
	finding   *Finding
	tokenless string // what the case showed a lock without tokens cannot promise
}

// campaignResult is what the campaign found.
type campaignResult struct {
	run      int // cases run, in index order, up to the first failing one
	shrunk   int // runs spent shrinking the first failing one
	steps    int
	faults   Faults
	searched time.Duration // the search's wall time, before shrinking
}

// campaign runs the cases of Run's campaign under t: the fail files
// first, then the shard's cases on the workers, then the first failing
// case again, shrunk, which fails t (and so ends the test's goroutine:
// what the campaign found is in res by then).
func (e *engine) campaign(t *testing.T, res *campaignResult) {
	cfg := e.cfg
	// The fail files, as a test's campaign replays them: a failing one
	// fails t with its story.
	setFlag("rapid.checks", "0")
	rapid.Check(t, e.property)
	setFlag("rapid.checks", "1")

	n, index := shardCases(cfg.Cases, cfg.Shard, cfg.Shards)
	var mu sync.Mutex
	outcomes := map[int]caseOutcome{} // by position among the shard's cases
	var next atomic.Int64
	var firstFailing atomic.Int64 // position of the first failing case so far
	firstFailing.Store(int64(n))
	searchStart := time.Now()
	t.Run("search", func(t *testing.T) {
		for w := range max(cfg.Workers, 1) {
			t.Run("worker"+strconv.Itoa(w+1), func(t *testing.T) {
				t.Parallel()
				for {
					i := int(next.Add(1) - 1)
					if i >= n || int64(i) > firstFailing.Load() || e.ctx != nil && e.ctx.Err() != nil {
						return
					}
					o := e.searchCase(t, index(i))
					mu.Lock()
					outcomes[i] = o
					mu.Unlock()
					if o.finding != nil {
						for {
							old := firstFailing.Load()
							if int64(i) >= old || firstFailing.CompareAndSwap(old, int64(i)) {
								break
							}
						}
					}
				}
			})
		}
	})
	res.searched = time.Since(searchStart)
	// What a lock without tokens cannot promise, as the first case by
	// index showed it, whatever the workers ran beyond it.
	tokenlessSet := false
	e.mu.Lock()
	e.tokenless = ""
	e.mu.Unlock()

	for i := 0; i < n; i++ {
		o := outcomes[i]
		if !o.ran {
			break // a stopped campaign: the cases run so far are those before the first that did not run
		}
		res.run++
		res.steps += o.steps
		res.faults.add(o.tally)
		if o.tokenless != "" && !tokenlessSet {
			// The first case by index, whichever worker ran it first.
			tokenlessSet = true
			e.mu.Lock()
			e.tokenless = o.tokenless
			e.mu.Unlock()
		}
		if o.finding != nil {
			e.firstFail.Store(int64(res.run))
			// Again, alone: rapid shrinks it and fails t with the
			// shrunk story, as a test's campaign does.
			setFlag("rapid.seed", strconv.FormatUint(caseSeed(cfg.Seed, index(i)), 10))
			before := e.runs.Load()
			defer func() { res.shrunk = int(e.runs.Load() - before) }()
			rapid.Check(t, e.property)
			if e.lastFinding() == nil {
				// Not reproduced (rapid has said so on t): the search's
				// own finding stands.
				e.mu.Lock()
				e.last = o.finding
				e.mu.Unlock()
			}
			break
		}
	}
}

// searchCase runs case k by itself, under a subtest of its own (whose name
// matches no fail file), and returns what it left.
func (e *engine) searchCase(t *testing.T, k int) caseOutcome {
	var out caseOutcome
	t.Run(strconv.Itoa(k), func(t *testing.T) {
		seed := strconv.FormatUint(caseSeed(e.cfg.Seed, k), 10)
		checkReadingFlags(t, map[string]string{"rapid.seed": seed}, func(rt *rapid.T) {
			e.runs.Add(1)
			c, f := e.runAndCheck(rt)
			out = caseOutcome{ran: true, steps: c.steps, tally: c.tally, finding: f}
			if c.h != nil {
				out.tokenless = c.h.tokenless
			}
			if f != nil {
				e.failures.Add(1)
				return
			}
			e.mu.Lock()
			e.faults.add(c.tally) // for Progress only: the Report sums the outcomes
			e.mu.Unlock()
		})
	})
	return out
}
