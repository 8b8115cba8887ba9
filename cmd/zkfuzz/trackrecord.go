package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// trackRecordCases is how many cases a seed of the track record may take
// to find its bug, as TestCatalogue allows.
const trackRecordCases = 2000

// bugRecord is one known bug's line of the track record: the cases to its
// first finding and the time the search took, one per seed (0 cases: not
// found).
type bugRecord struct {
	bug       targets.KnownBug
	cases     []int
	times     []time.Duration
	detectors []string // those that found it, in the catalogue's order
}

// trackRecord hunts every known bug of the catalogue (targets.Catalogue)
// with each seed from 1 to seeds, on one worker, without shrinking, and
// writes the track record as a Markdown table to w: per bug, its upstream
// id, the detector that found it, the cases to the first finding and the
// search's wall time (median and most over the seeds that found it). The
// detectors are those of the bug's that found it in some seed. Stopped
// (ctx), it writes no table. only, if not
// empty, hunts the bugs whose names contain it. Progress goes to log.
func trackRecord(ctx context.Context, seeds int, only string, w, log io.Writer) error {
	var records []bugRecord
	for _, b := range targets.Catalogue() {
		if only != "" && !strings.Contains(b.Name, only) {
			continue
		}
		r := bugRecord{bug: b}
		for seed := 1; seed <= seeds; seed++ {
			opts := append(slices.Clip(b.Options), fuzz.OnlyFindings(b.Accepts), fuzz.WithName("zkfuzz-track-"+b.Name),
				fuzz.WithSeed(uint64(seed)), fuzz.WithCases(trackRecordCases), fuzz.WithWorkers(1),
				fuzz.WithShrinkTime(time.Millisecond), fuzz.WithoutFailFile(), fuzz.WithOutput(io.Discard))
			report, err := fuzz.Run(ctx, b.Target, opts...)
			if err != nil {
				return fmt.Errorf("%s, seed %d: %w", b.Name, seed, err)
			}
			if report.Stopped {
				return fmt.Errorf("stopped at %s, seed %d: no table", b.Name, seed)
			}
			found := 0
			if len(report.Findings) > 0 {
				found = report.Cases
				if d := string(report.Findings[0].Detector); !slices.Contains(r.detectors, d) {
					r.detectors = append(r.detectors, d)
				}
			}
			r.cases = append(r.cases, found)
			r.times = append(r.times, report.Searched)
			fmt.Fprintf(log, "%s seed %d: %d cases, %v\n", b.Name, seed, found, report.Searched.Round(time.Millisecond))
		}
		records = append(records, r)
	}
	writeTrackRecord(w, records, seeds)
	return nil
}

// writeTrackRecord writes the table.
func writeTrackRecord(w io.Writer, records []bugRecord, seeds int) {
	fmt.Fprintf(w, "| upstream | recipe | found by | found in | cases to find (median / most) | time to find, one core (median / most) |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|\n")
	for _, r := range records {
		found := 0
		for _, c := range r.cases {
			if c > 0 {
				found++
			}
		}
		var detectors []string
		for _, d := range r.bug.Detectors {
			if slices.Contains(r.detectors, string(d)) {
				detectors = append(detectors, string(d))
			}
		}
		recipe, _, _ := strings.Cut(r.bug.Recipe, ",")
		// The counts and times of the seeds that found it.
		var cases []int
		var times []time.Duration
		for i, c := range r.cases {
			if c > 0 {
				cases, times = append(cases, c), append(times, r.times[i])
			}
		}
		if len(cases) == 0 {
			fmt.Fprintf(w, "| %s | %s | — | 0 of %d seeds | — | — |\n", r.bug.Name, recipe, seeds)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d of %d seeds | %s / %d | %s / %s |\n", r.bug.Name, recipe, strings.Join(detectors, ", "),
			found, seeds, median(cases), slices.Max(cases), medianDuration(times), slices.Max(times).Round(time.Millisecond))
	}
}

// middle returns the two middle values of xs, sorted (the same one twice
// for an odd count): their mean is the median.
func middle[T cmp.Ordered](xs []T) (lo, hi T) {
	s := slices.Sorted(slices.Values(xs))
	return s[(len(s)-1)/2], s[len(s)/2]
}

// median is the median of the counts, halves shown.
func median(xs []int) string {
	lo, hi := middle(xs)
	if (lo+hi)%2 == 0 {
		return fmt.Sprint((lo + hi) / 2)
	}
	return fmt.Sprintf("%d.5", (lo+hi)/2)
}

func medianDuration(ds []time.Duration) string {
	lo, hi := middle(ds)
	return ((lo + hi) / 2).Round(time.Millisecond).String()
}
