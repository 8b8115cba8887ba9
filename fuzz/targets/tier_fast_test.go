//go:build !long

package targets

// longTier is false in the fast tier — plain `go test` and `make test`:
// every detector and every mutant is still exercised, with one fixed seed
// and small budgets; what the long tier (-tags long, `make test-long`)
// adds is repetition: more seeds, every mutant in every test.
const longTier = false
