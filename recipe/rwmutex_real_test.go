package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestRWMutexReal runs the RWMutex scenarios against the real ensemble
// named in ZK_SERVERS (skipped when it is unset; `make test-ensemble` sets
// it).
func TestRWMutexReal(t *testing.T) {
	runRWMutexScenarios(t, ensemble.NewTarget(ensemble.Servers(t)))
}
