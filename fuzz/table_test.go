package fuzz_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/zksim/zksim/fuzz"
)

// TestMutantTable measures how many cases the campaign takes to find each
// mutant (and each example's recipe) by its own detector, at most 3,000 a
// seed, over ZKFUZZ_TABLE_SEEDS seeds (20 in the long tier unless it is
// set), and prints the rows of the package documentation's mutant
// tables: the median and the most over the seeds. Every seed must find every mutant.
//
//	ZKFUZZ_TABLE_SEEDS=20 go test ./fuzz -run TestMutantTable -v
func TestMutantTable(t *testing.T) {
	seeds, err := strconv.Atoi(os.Getenv("ZKFUZZ_TABLE_SEEDS"))
	if err != nil && fuzz.LongTier() {
		seeds, err = 20, nil
	}
	if err != nil || seeds <= 0 {
		t.Skip("set ZKFUZZ_TABLE_SEEDS to the number of seeds, or run the long tier (-tags long)")
	}
	const budget = 3000
	// The rows are measured in parallel and printed in the mutants'
	// order once all are in.
	mutants := withExamples()
	rows := make([]string, len(mutants))
	t.Run("rows", func(t *testing.T) {
		for i, m := range mutants {
			t.Run(m.Name, func(t *testing.T) {
				t.Parallel()
				var found []int
				for seed := 1; seed <= seeds; seed++ {
					f, cases := fuzz.Survey(t, m.Target, m.Options, budget, uint64(seed), byDetector(m.Detector))
					if f == nil {
						// Said once the row is done: rapid refuses a failed T.
						defer t.Errorf("%s: seed %d did not find it by %s in %d cases", m.Name, seed, m.Detector, budget)
						continue
					}
					found = append(found, int(cases))
				}
				if len(found) == 0 {
					return
				}
				slices.Sort(found)
				n := len(found)
				median := float64(found[n/2])
				if n%2 == 0 {
					median = float64(found[n/2-1]+found[n/2]) / 2
				}
				rows[i] = fmt.Sprintf("| %s | %s | %s | %g / %d |", m.Name, m.Recipe, m.Detector, median, found[n-1])
			})
		}
	})
	for _, row := range rows {
		if row != "" {
			t.Log(row)
		}
	}
}
