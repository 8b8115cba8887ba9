// Package pinned gives the test binaries of the fuzz packages one TestMain:
// rapid's seed pinned unless the command line or the environment chose
// one, and the long tier's count of cases.
package pinned

import (
	"flag"
	"os"
	"testing"
)

// Seed is rapid's seed for every campaign the tests run unless
// -rapid.seed (or RAPID_SEED) says otherwise: a test that draws a new seed
// each run can fail one run in many and pass the next, and a failure must
// be one command away from its replay. `go test ./fuzz -rapid.seed=0`
// draws a random seed, which rapid prints on a failure.
const Seed = "1"

// LongTierChecks is rapid's count of cases for a campaign in the long
// tier, unless -rapid.checks (or RAPID_CHECKS) says otherwise; the fast
// tier keeps rapid's 100.
const LongTierChecks = "1000"

// Main runs the tests with rapid's seed pinned, and in the long tier
// (longTier, the -tags long build) its count of cases raised.
func Main(m *testing.M, longTier bool) {
	flag.Parse()
	defaultRapidFlag("rapid.seed", "RAPID_SEED", Seed)
	if longTier {
		defaultRapidFlag("rapid.checks", "RAPID_CHECKS", LongTierChecks)
	}
	os.Exit(m.Run())
}

// defaultRapidFlag sets one of rapid's flags to value unless the command
// line or the environment (env) chose it.
func defaultRapidFlag(name, env, value string) {
	if _, ok := os.LookupEnv(env); ok {
		return
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if !set {
		if err := flag.Set(name, value); err != nil {
			panic(err)
		}
	}
}
