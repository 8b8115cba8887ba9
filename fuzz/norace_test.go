//go:build !race

package fuzz

// raceEnabled: see race_test.go.
const raceEnabled = false
