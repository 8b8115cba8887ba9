package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// TestRWMutexFake runs the RWMutex scenarios on the fake, each in a
// synctest bubble: time is virtual, and the bubble fails the test if any
// goroutine is left behind.
func TestRWMutexFake(t *testing.T) {
	runRWMutexScenarios(t, fake.NewTarget())
}
