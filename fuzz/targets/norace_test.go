//go:build !race

package targets

// raceEnabled: see race_test.go.
const raceEnabled = false
