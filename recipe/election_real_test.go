package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestElectionReal runs the Election scenarios against the real ensemble
// named in ZK_SERVERS (skipped when it is unset; `make test-ensemble` sets
// it).
func TestElectionReal(t *testing.T) {
	runElectionScenarios(t, ensemble.NewTarget(ensemble.Servers(t)))
}
