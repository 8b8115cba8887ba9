//go:build long

package targets

// longTier: built with -tags long (`make test-long`), the tests that
// measure the harness's reach repeat over every mutant and more seeds;
// see tier_fast_test.go.
const longTier = true
