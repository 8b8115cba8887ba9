package linearizability_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain pins rapid's seed for this package's property tests unless
// -rapid.seed or RAPID_SEED chooses one: a test that draws a new seed on
// every run can fail one run in many and pass the next. -rapid.seed=0
// draws a random one, which rapid prints on a failure.
func TestMain(m *testing.M) {
	flag.Parse()
	_, chosen := os.LookupEnv("RAPID_SEED")
	flag.Visit(func(f *flag.Flag) { chosen = chosen || f.Name == "rapid.seed" })
	if !chosen {
		if err := flag.Set("rapid.seed", "1"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
