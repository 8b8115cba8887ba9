package difftest

import (
	"errors"
	"fmt"
	"time"
)

// Checker runs sequences on a reference (a real ZooKeeper) and on the fake
// and reports each difference as a minimal sequence.
//
// A server shared with other clients makes zxids jump: their writes take
// zxids in the middle of a sequence. A difference in zxids alone that such
// writes could explain (see CompareZxids) is therefore run again, until
// every gap between two of the fake's zxids has been free of extra zxids
// on some run (then the sides agree), or for MaxRuns runs: then it counts
// only if some gap had the same number of extra zxids on every run, as a
// zxid the fake fails to use would; otherwise the sequence is left
// unverified. Any other difference counts once it has shown on
// Confirmations+1 runs.
type Checker struct {
	// Reference and Fake run one sequence on their side.
	Reference, Fake func(Sequence) (*Transcript, error)
	// Confirmations is how many more runs on the reference must show a
	// difference other than in zxids before it counts (default 0).
	Confirmations int
	// MaxRuns bounds the runs of one sequence on the reference (default
	// 20) when it differs in zxids alone.
	MaxRuns int
	// Attempts bounds the runs on the reference that may end
	// inconclusively in a row (a session that did not come up) before
	// Check gives up with an error (default 5, the pauses between them
	// doubling from half a second).
	Attempts int
	// Known, if set, names a divergence the fake is known to have so that
	// the checker passes over it; it returns "" for any other divergence.
	Known func(*Divergence) string
}

// Result is what Check found for one sequence.
type Result struct {
	// Divergence is the minimal diverging sequence, nil if the sides agree.
	Divergence *Divergence
	// Original is the divergence as first seen, on the full sequence.
	Original *Divergence
	// Known is the description of a known divergence that was passed over.
	Known string
	// Unverified is set when the reference kept answering with zxids other
	// clients' writes had shifted, differently each time, so that the
	// sequence could not be checked.
	Unverified bool
	// Runs counts the sequences run on the reference side.
	Runs int
}

type verdict int

const (
	agree verdict = iota
	differ
	unsettled
)

// Check runs seq on both sides and, if they differ, shrinks it.
func (c *Checker) Check(seq Sequence) (Result, error) {
	var res Result
	d, v, err := c.diverge(seq, &res)
	if err != nil || v == agree {
		return res, err
	}
	if v == unsettled {
		res.Unverified = true
		return res, nil
	}
	if known := c.known(d); known != "" {
		res.Known = known
		return res, nil
	}
	res.Original = d
	returned := map[int]string{}
	for i, op := range seq.Ops {
		returned[op.Label] = d.Want.Steps[i].Returned
	}
	var shrinkErr error
	minimal := Shrink(seq, returned, func(cand Sequence) bool {
		if shrinkErr != nil {
			return false
		}
		cd, v, err := c.diverge(cand, &res)
		if err != nil {
			shrinkErr = err
			return false
		}
		return v == differ && c.known(cd) == ""
	})
	if shrinkErr != nil {
		return res, shrinkErr
	}
	res.Divergence, v, err = c.diverge(minimal, &res)
	if v != differ || c.known(res.Divergence) != "" {
		// The shrunk sequence did not diverge again on its last runs (a
		// shared server's traffic): report the original.
		res.Divergence = d
	}
	return res, err
}

func (c *Checker) known(d *Divergence) string {
	if c.Known == nil {
		return ""
	}
	return c.Known(d)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// diverge runs seq on both sides and returns their divergence, once it is
// settled (see Checker).
func (c *Checker) diverge(seq Sequence, res *Result) (*Divergence, verdict, error) {
	fake, err := c.Fake(seq)
	if err != nil {
		return nil, agree, fmt.Errorf("fake: %v", err)
	}
	other := 0
	// Per gap between two zxids, the fewest and the most extra zxids the
	// reference had in it, over the runs that differed in zxids alone.
	var least, most map[[2]int64]int64
	var first *Divergence
	for range orDefault(c.MaxRuns, 20) {
		ref, err := c.reference(seq, res)
		if err != nil {
			return nil, agree, err
		}
		d := Compare("real", ref, "fake", fake)
		if d == nil {
			return nil, agree, nil
		}
		shift := CompareZxids(ref, fake)
		if !shift.Interference {
			if other++; other > c.Confirmations {
				return d, differ, nil
			}
			continue
		}
		if !shift.OnlyZxids {
			// Something other than zxids differs too. Whatever shifted the
			// zxids before it, judge it with the zxids mapped.
			if other++; other > c.Confirmations {
				return Compare("real", shift.Normalize(ref), "fake", fake), differ, nil
			}
			continue
		}
		if least == nil {
			first, least, most = d, map[[2]int64]int64{}, map[[2]int64]int64{}
			for gap, n := range shift.Extra {
				least[gap], most[gap] = n, n
			}
		}
		clean := true
		for gap := range least {
			least[gap] = min(least[gap], shift.Extra[gap])
			most[gap] = max(most[gap], shift.Extra[gap])
			clean = clean && least[gap] == 0
		}
		if clean {
			// Every gap has been free of extra zxids on some run: what
			// differed was other clients' writes.
			return nil, agree, nil
		}
	}
	for gap, n := range least {
		if n > 0 && most[gap] == n {
			// The same extra zxids in the same gap on every run: not
			// other clients, whose writes come at random.
			return first, differ, nil
		}
	}
	return nil, unsettled, nil
}

func (c *Checker) reference(seq Sequence, res *Result) (*Transcript, error) {
	var err error
	pause := 500 * time.Millisecond
	for i := range orDefault(c.Attempts, 5) {
		if i > 0 {
			// Give a server that is restarting or electing a leader time.
			time.Sleep(pause)
			pause *= 2
		}
		var t *Transcript
		res.Runs++
		t, err = c.Reference(seq)
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, errInconclusive) {
			return nil, err
		}
	}
	return nil, err
}
