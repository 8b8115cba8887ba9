//go:build race

package recipe

// raceEnabled: the race detector slows the byte-level checks about
// tenfold, so TestNameReaderDigits draws fewer random names under it; the
// long tier (make test-long) runs without it and draws them all.
const raceEnabled = true
