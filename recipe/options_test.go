package recipe_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
)

// Each option is an option of exactly the constructors the package's
// documentation lists it for.
func TestOptionsApplyWhereDocumented(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		opt                               any
		mutex, election, rwMutex, semaphr bool
	}{
		{"WithACL", recipe.WithACL(zk.WorldACL(zk.PermAll)), true, true, true, true},
		{"WithNodeData", recipe.WithNodeData(nil), true, true, true, true},
		{"WithRetryTimeout", recipe.WithRetryTimeout(0), true, true, true, true},
		{"WithStatePollInterval", recipe.WithStatePollInterval(0), true, true, true, true},
		{"WithWakeHook", recipe.WithWakeHook(nil), true, true, true, true},
		{"WithNodeName", recipe.WithNodeName("lock-"), true, true, false, true},
		{"WithStateListener", recipe.WithStateListener(nil), true, true, true, false},
		{"WithRWNodeNames", recipe.WithRWNodeNames("r", "w"), false, false, true, false},
	} {
		_, mutex := tc.opt.(recipe.MutexOption)
		_, election := tc.opt.(recipe.ElectionOption)
		_, rwMutex := tc.opt.(recipe.RWMutexOption)
		_, semaphr := tc.opt.(recipe.SemaphoreOption)
		got := [4]bool{mutex, election, rwMutex, semaphr}
		if want := [4]bool{tc.mutex, tc.election, tc.rwMutex, tc.semaphr}; got != want {
			t.Errorf("%s is an option of (Mutex, Election, RWMutex, Semaphore) %v, want %v", tc.name, got, want)
		}
	}
}
