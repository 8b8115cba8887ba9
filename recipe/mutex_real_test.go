package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestMutexReal runs the Mutex scenarios against the real ensemble named in
// ZK_SERVERS (skipped when it is unset; `make test-ensemble` sets it).
func TestMutexReal(t *testing.T) {
	runMutexScenarios(t, ensemble.NewTarget(ensemble.Servers(t)))
}
