package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestSemaphoreReal runs the Semaphore scenarios against the real ensemble
// named in ZK_SERVERS (skipped when it is unset; `make test-ensemble` sets
// it).
func TestSemaphoreReal(t *testing.T) {
	runSemaphoreScenarios(t, ensemble.NewTarget(ensemble.Servers(t)))
}
