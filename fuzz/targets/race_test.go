//go:build race

package targets

// raceEnabled: the race detector slows a case about tenfold, so the
// campaigns that measure how soon mutants are found try fewer seeds under
// it; `make test` runs them in full without it as well.
const raceEnabled = true
