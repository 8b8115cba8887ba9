package linearizability_test

import (
	"os"
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
)

func TestCheckTimeoutIsUnknown(t *testing.T) {
	// Eighteen writes with unknown outcomes in a hundred operations: the
	// full check takes about a third of a second, far beyond the timeout.
	h, initial := simulateZnodes(1, 100, 20)
	res, err := linearizability.CheckZnodes(h, time.Millisecond, initial...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != linearizability.Unknown {
		t.Fatalf("got %v, want Unknown: the check cannot finish in 1ms", res)
	}
	// A report of an undecided check still shows what was explored.
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Fatalf("report %s: %v", path, err)
	}
}
