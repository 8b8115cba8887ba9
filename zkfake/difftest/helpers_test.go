package difftest_test

import (
	"os"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/zksim/zksim/zkfake/difftest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// runFake runs seq on a fresh fake server inside a synctest bubble.
func runFake(t *testing.T, side difftest.Side, seq difftest.Sequence) (*difftest.Transcript, error) {
	t.Helper()
	var tr *difftest.Transcript
	var err error
	synctest.Test(t, func(t *testing.T) {
		tr, err = difftest.Run(side, seq)
	})
	return tr, err
}

// servers returns the real ZooKeeper servers named in ZK_SERVERS, and
// skips the test when it is unset (see ensemble.Servers).
func servers(t *testing.T) []string {
	t.Helper()
	return ensemble.Servers(t)
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}
