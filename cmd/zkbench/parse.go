package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// result is one line of `go test -bench` output: a benchmark's name
// (without the GOMAXPROCS suffix), its iterations and its measurements by
// unit ("ns/op", "B/op", "allocs/op", and whatever b.ReportMetric added).
type result struct {
	name       string
	iterations int
	values     map[string]float64
}

// benchLine matches a result line: the name, the -GOMAXPROCS suffix the
// testing package adds when GOMAXPROCS > 1, the iteration count, and the
// measurements.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// parseResult parses one line of benchmark output; ok is false for
// anything that is not a result line (headers, PASS, log output).
func parseResult(line string) (r result, ok bool) {
	m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return result{}, false
	}
	iterations, err := strconv.Atoi(m[2])
	if err != nil {
		return result{}, false
	}
	fields := strings.Fields(m[3])
	if len(fields) == 0 || len(fields)%2 != 0 {
		return result{}, false
	}
	r = result{name: m[1], iterations: iterations, values: map[string]float64{}}
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return result{}, false
		}
		r.values[fields[i+1]] = v
	}
	if _, ok := r.values["ns/op"]; !ok {
		return result{}, false
	}
	return r, true
}

// parseResults reads benchmark output and returns its result lines, in
// order, copying every line to echo (if not nil) as it goes.
func parseResults(out io.Reader, echo io.Writer) ([]result, error) {
	var results []result
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			fmt.Fprintln(echo, line)
		}
		if r, ok := parseResult(line); ok {
			results = append(results, r)
		}
	}
	return results, sc.Err()
}

// side is one target's measurements of a workload: the median of each unit
// over the runs (-count) that reported it.
type side struct {
	runs   int
	values map[string]float64
}

// row is one workload of the table, as measured on the fake and the real
// ensemble; a side that did not run is nil.
type row struct {
	workload   string // the benchmark name without its target: "LockHandoff/waiters=10"
	fake, real *side
}

// splitTarget splits "BenchmarkLockHandoff/real/waiters=10" into the
// workload "LockHandoff/waiters=10" and the target "real". ok is false for a
// benchmark that does not put "fake" or "real" second in its name.
func splitTarget(name string) (workload, target string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
	if len(parts) < 2 || (parts[1] != "fake" && parts[1] != "real") {
		return "", "", false
	}
	return strings.Join(append(parts[:1:1], parts[2:]...), "/"), parts[1], true
}

// collect groups results into rows, in the order workloads first appear,
// with the median of every unit over repeated runs.
func collect(results []result) []row {
	type key struct{ workload, target string }
	samples := map[key][]result{}
	var order []string
	seen := map[string]bool{}
	for _, r := range results {
		workload, target, ok := splitTarget(r.name)
		if !ok {
			continue
		}
		if !seen[workload] {
			seen[workload] = true
			order = append(order, workload)
		}
		k := key{workload, target}
		samples[k] = append(samples[k], r)
	}
	rows := make([]row, 0, len(order))
	for _, w := range order {
		rows = append(rows, row{
			workload: w,
			fake:     summarize(samples[key{w, "fake"}]),
			real:     summarize(samples[key{w, "real"}]),
		})
	}
	return rows
}

// summarize takes the median of each unit over runs; nil for no runs.
func summarize(runs []result) *side {
	if len(runs) == 0 {
		return nil
	}
	byUnit := map[string][]float64{}
	for _, r := range runs {
		for unit, v := range r.values {
			byUnit[unit] = append(byUnit[unit], v)
		}
	}
	s := &side{runs: len(runs), values: map[string]float64{}}
	for unit, vs := range byUnit {
		s.values[unit] = median(vs)
	}
	return s
}

// median returns the median of vs (the mean of the middle two for an even
// count); vs is sorted in place.
func median(vs []float64) float64 {
	sort.Float64s(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
