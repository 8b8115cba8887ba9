package difftest_test

import (
	"net"
	"os"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/zksim/zksim/zkfake/difftest"
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
// skips the test when it is unset.
func servers(t *testing.T) []string {
	t.Helper()
	spec := os.Getenv("ZK_SERVERS")
	if spec == "" {
		t.Skip("ZK_SERVERS not set; set it to compare the fake with a real ZooKeeper")
	}
	list := difftest.ParseServers(spec)
	for _, s := range list {
		host, _, err := net.SplitHostPort(s)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("ZK_SERVERS entry %q: only 127.0.0.1:port addresses are allowed", s)
		}
	}
	return list
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
