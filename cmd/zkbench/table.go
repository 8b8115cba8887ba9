package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// report is everything the command prints.
type report struct {
	date     time.Time
	machine  string
	ensemble string   // what the real column ran on, or why it is empty
	commands []string // the commands that produced the numbers
	rows     []row
	notes    []string // anything that went wrong or needs saying
}

// standardUnits are shown in their own columns, not among the metrics.
var standardUnits = map[string]bool{"ns/op": true, "B/op": true, "allocs/op": true, "MB/s": true}

// writeMarkdown prints the report as Markdown.
func writeMarkdown(w io.Writer, rep report) {
	fmt.Fprintf(w, "Measured %s on %s.\n\n", rep.date.UTC().Format("2006-01-02 15:04 MST"), rep.machine)
	fmt.Fprintf(w, "Real ensemble: %s.\n\n", rep.ensemble)
	fmt.Fprintln(w, "| workload | fake | real | real ÷ fake | fake allocations | metrics |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
	for _, r := range rep.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n",
			label(r.workload), nsCell(r.fake), nsCell(r.real), ratioCell(r), allocCell(r.fake), metricsCell(r))
	}
	fmt.Fprintln(w)
	if targets := checkTargets(rep.rows); len(targets) > 0 {
		fmt.Fprintln(w, "Targets:")
		fmt.Fprintln(w)
		for _, t := range targets {
			fmt.Fprintf(w, "- %s\n", t)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Made with:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "```")
	for _, c := range rep.commands {
		fmt.Fprintln(w, c)
	}
	fmt.Fprintln(w, "```")
	for _, n := range rep.notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
}

// label names a workload for people.
func label(workload string) string {
	name, param, _ := strings.Cut(workload, "/")
	value := ""
	if _, v, ok := strings.Cut(param, "="); ok {
		if n, err := strconv.Atoi(v); err == nil {
			value = formatCount(n)
		}
	}
	if l, ok := semaphoreLabel(name, param, value); ok {
		return l
	}
	switch {
	case name == "Create" && param == "":
		return "create"
	case name == "Get" && param == "":
		return "get"
	case name == "Set" && param == "":
		return "set"
	case name == "Delete" && param == "":
		return "delete"
	case name == "Children" && param == "":
		return "children (10)"
	case name == "Multi" && param == "":
		return "multi (check + set)"
	case name == "CreateDelete" && param == "":
		return "create + delete"
	case name == "Reads" && value != "":
		return "reads, " + value + " goroutine" + plural(value)
	case name == "ReadWriteMix" && value != "":
		return "70/30 read/write, " + value + " goroutine" + plural(value)
	case name == "LockUncontended" && param == "":
		return "Lock + Unlock, uncontended"
	case name == "LockRequests" && param == "":
		return "Lock + Unlock's four requests, sent bare"
	case name == "LockHandoff" && value != "":
		return "lock handoff, " + value + " waiter" + plural(value)
	case name == "RWReadUncontended" && param == "":
		return "RWMutex RLock + RUnlock, uncontended"
	case name == "RWWriteUncontended" && param == "":
		return "RWMutex Lock + Unlock, uncontended"
	case name == "RWLockHandoff" && value != "":
		return "RWMutex handoff, writer to " + value + " reader" + plural(value) + " to writer"
	case name == "ZnodeMemory" && value != "":
		return "memory, " + value + " znodes"
	case name == fuzzWorkload && value != "":
		return fmt.Sprintf("fuzz case (recipe.Mutex, up to %d clients and %d steps), %s worker%s", fuzzClients, fuzzSteps, value, plural(value))
	case name == mutantWorkload && param != "":
		return "cases to find mutant " + param
	}
	return workload
}

func plural(count string) string {
	if count == "1" {
		return ""
	}
	return "s"
}

func nsCell(s *side) string {
	ns, ok := 0.0, s != nil
	if ok {
		ns, ok = s.values["ns/op"]
	}
	if !ok {
		return "—"
	}
	return formatNs(ns)
}

func ratioCell(r row) string {
	if r.fake == nil || r.real == nil || r.fake.values["ns/op"] <= 0 {
		return "—"
	}
	return formatRatio(r.real.values["ns/op"] / r.fake.values["ns/op"])
}

func allocCell(s *side) string {
	if s == nil {
		return ""
	}
	bytes, okB := s.values["B/op"]
	allocs, okA := s.values["allocs/op"]
	if !okB || !okA {
		return ""
	}
	return formatBytes(bytes) + ", " + formatNumber(allocs) + " allocs"
}

// metricsCell lists the workload's own metrics: one value when both sides
// agree, "fake / real" when they differ.
func metricsCell(r row) string {
	units := map[string]bool{}
	for _, s := range []*side{r.fake, r.real} {
		if s == nil {
			continue
		}
		for u := range s.values {
			if !standardUnits[u] {
				units[u] = true
			}
		}
	}
	sorted := make([]string, 0, len(units))
	for u := range units {
		sorted = append(sorted, u)
	}
	sort.Strings(sorted)
	var parts []string
	for _, u := range sorted {
		f, fok := value(r.fake, u)
		g, gok := value(r.real, u)
		switch {
		case fok && gok && formatMetric(f, u) == formatMetric(g, u):
			parts = append(parts, formatMetric(f, u))
		case fok && gok:
			fv, suffix := metricParts(f, u)
			gv, _ := metricParts(g, u)
			parts = append(parts, fv+" / "+gv+suffix+" (fake / real)")
		case fok:
			parts = append(parts, formatMetric(f, u))
		default:
			parts = append(parts, formatMetric(g, u)+" (real)")
		}
	}
	return strings.Join(parts, ", ")
}

func value(s *side, unit string) (float64, bool) {
	if s == nil {
		return 0, false
	}
	v, ok := s.values[unit]
	return v, ok
}

// formatMetric renders a metric with its unit; "ns/x" units read as
// durations per x.
func formatMetric(v float64, unit string) string {
	value, suffix := metricParts(v, unit)
	return value + suffix
}

// metricParts splits a rendered metric into its value and its unit.
func metricParts(v float64, unit string) (value, suffix string) {
	if per, ok := strings.CutPrefix(unit, "ns/"); ok {
		return formatNs(v), "/" + per
	}
	return formatNumber(v), " " + unit
}

// formatNs renders nanoseconds with a unit that keeps three significant
// digits.
func formatNs(ns float64) string {
	switch {
	case ns < 1e3:
		return sig3(ns) + " ns"
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e9) + " s"
}

func formatBytes(b float64) string {
	switch {
	case b < 1e3:
		return sig3(b) + " B"
	case b < 1e6:
		return sig3(b/1e3) + " kB"
	case b < 1e9:
		return sig3(b/1e6) + " MB"
	}
	return sig3(b/1e9) + " GB"
}

func formatRatio(r float64) string {
	if r >= 1000 {
		return formatCount(int(math.Round(r))) + "×"
	}
	return sig3(r) + "×"
}

// formatNumber renders a count or metric: integers up to a million with
// thousands separators, other values to three significant digits.
func formatNumber(v float64) string {
	switch {
	case v >= 1e6:
		return sig3(v/1e6) + "M"
	case v >= 1000 || v == math.Trunc(v):
		return formatCount(int(math.Round(v)))
	}
	return sig3(v)
}

// formatCount renders an integer with thousands separators.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + formatCount(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sig3 renders v with three significant digits and no trailing zeros
// after the point.
func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(v)))) - 1
	if digits < 0 {
		digits = 0
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// The performance targets the fake is held to.
const (
	getTarget          = 300  // ns for a Get on the fake
	createDeleteTarget = 2000 // ns for a Create and a Delete on the fake
	writeRatioTarget   = 1000 // every write at least this many times faster on the fake

	// recipe.Mutex's own overhead on the fake, as ratios of rows of the
	// same run, so that a busy machine slows both sides of each alike.
	lockRequestsTarget = 2  // an uncontended Lock+Unlock within this many times its requests' rows
	lockHandoffTarget  = 2  // a handoff with 1,000 waiters within this many times one with 1
	lockAllocsTarget   = 12 // allocations per uncontended Lock+Unlock, at most

	// The fuzz campaign on every core, against one worker (2 cores).
	fuzzSpeedUpTarget = 1.7
)

// lockRequests are the rows of the requests an uncontended Lock+Unlock
// sends: a create, a get (a GetW on its own node), a listing and a delete.
var lockRequests = []string{"Create", "Get", "Children", "Delete"}

// writeWorkloads are the workloads that write.
var writeWorkloads = []string{"Create", "Set", "Delete", "Multi", "CreateDelete"}

// checkTargets says, for every target the rows can tell, whether it is met.
func checkTargets(rows []row) []string {
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.workload] = r
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var out []string
	if r, ok := byName["Get"]; ok && r.fake != nil {
		ns := r.fake.values["ns/op"]
		out = append(out, fmt.Sprintf("Get under %s on the fake: %s, %s", formatNs(getTarget), formatNs(ns), verdict(ns < getTarget)))
	}
	if r, ok := byName["CreateDelete"]; ok && r.fake != nil {
		ns := r.fake.values["ns/op"]
		out = append(out, fmt.Sprintf("Create+Delete under %s on the fake: %s, %s", formatNs(createDeleteTarget), formatNs(ns), verdict(ns < createDeleteTarget)))
	}
	lowest, lowestName := math.Inf(1), ""
	for _, w := range writeWorkloads {
		r, ok := byName[w]
		if !ok || r.fake == nil || r.real == nil || r.fake.values["ns/op"] <= 0 {
			continue
		}
		if ratio := r.real.values["ns/op"] / r.fake.values["ns/op"]; ratio < lowest {
			lowest, lowestName = ratio, label(w)
		}
	}
	if lowestName != "" {
		out = append(out, fmt.Sprintf("every write at least %s faster on the fake than on the ensemble: the slowest is %s at %s, %s",
			formatRatio(writeRatioTarget), lowestName, formatRatio(lowest), verdict(lowest >= writeRatioTarget)))
	}
	out = append(out, lockTargets(byName, verdict)...)
	for _, r := range rows {
		workers, ok := strings.CutPrefix(r.workload, fuzzWorkload+"/workers=")
		if !ok || workers == "1" || r.fake == nil {
			continue
		}
		if speedUp, ok := r.fake.values["speed-up"]; ok {
			out = append(out, fmt.Sprintf("a fuzz campaign on %s workers at least %s the cases per second of 1 worker: %s, %s",
				workers, formatRatio(fuzzSpeedUpTarget), formatRatio(speedUp), verdict(speedUp >= fuzzSpeedUpTarget)))
		}
	}
	one, okOne := byName["Reads/goroutines=1"]
	many, okMany := byName["Reads/goroutines=16"]
	if okOne && okMany && one.fake != nil && many.fake != nil && many.fake.values["ns/op"] > 0 {
		// ns/op is wall time per request over all goroutines, so the
		// throughput ratio is its inverse.
		speedup := one.fake.values["ns/op"] / many.fake.values["ns/op"]
		out = append(out, fmt.Sprintf("reads from 16 goroutines past 1 goroutine's throughput on the fake: %s of it, %s",
			formatRatio(speedup), verdict(speedup > 1)))
	}
	return out
}

// lockTargets says, for each of recipe.Mutex's targets the rows can tell,
// whether it is met.
func lockTargets(byName map[string]row, verdict func(bool) string) []string {
	fakeNs := func(workload string) (float64, bool) {
		r, ok := byName[workload]
		if !ok || r.fake == nil {
			return 0, false
		}
		ns, ok := r.fake.values["ns/op"]
		return ns, ok && ns > 0
	}
	var out []string
	lock, okLock := fakeNs("LockUncontended")
	requests, okRequests := 0.0, okLock
	for _, w := range lockRequests {
		ns, ok := fakeNs(w)
		requests += ns
		okRequests = okRequests && ok
	}
	if okRequests {
		ratio := lock / requests
		out = append(out, fmt.Sprintf("Lock + Unlock, uncontended, within %s its requests on the fake (create + get + children + delete: %s): %s, %s, %s",
			formatRatio(lockRequestsTarget), formatNs(requests), formatNs(lock), formatRatio(ratio), verdict(ratio <= lockRequestsTarget)))
	}
	one, okOne := fakeNs("LockHandoff/waiters=1")
	many, okMany := fakeNs("LockHandoff/waiters=1000")
	if okOne && okMany {
		ratio := many / one
		out = append(out, fmt.Sprintf("lock handoff with 1,000 waiters within %s the handoff with 1 on the fake: %s and %s, %s, %s",
			formatRatio(lockHandoffTarget), formatNs(many), formatNs(one), formatRatio(ratio), verdict(ratio <= lockHandoffTarget)))
	}
	if r, ok := byName["LockUncontended"]; ok && r.fake != nil {
		if allocs, ok := r.fake.values["allocs/op"]; ok {
			out = append(out, fmt.Sprintf("at most %d allocations per uncontended Lock + Unlock on the fake: %s, %s",
				lockAllocsTarget, formatNumber(allocs), verdict(allocs <= lockAllocsTarget)))
		}
	}
	return out
}
