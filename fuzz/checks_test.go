package fuzz

import (
	"strings"
	"testing"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// heldInDoubt is recipe.Mutex saying Held while its hold is suspended.
type heldInDoubt struct{ recipeMutex }

func (h heldInDoubt) State() recipe.MutexState {
	if st := h.recipeMutex.State(); st != recipe.MutexSuspended {
		return st
	}
	return recipe.MutexHeld
}

// A lock that says Held while its connection has been down for longer than
// its session timeout is found by the in-doubt check.
func TestHeldInDoubtIsFound(t *testing.T) {
	t.Parallel()
	target := Lock(func(conn zktest.Conn, path string) Locker {
		return heldInDoubt{RecipeMutex(conn, path).(recipeMutex)}
	})
	f, _ := Survey(t, target, nil, 300, 1, func(f *Finding) bool { return strings.Contains(f.Summary, "connection has been down") })
	if f == nil {
		t.Fatal("not found in 300 cases")
	}
	if f.Detector != StateReport {
		t.Fatalf("found by %s, want %s: %s", f.Detector, StateReport, f.Summary)
	}
	t.Logf("%s: %s", f.Detector, f.Summary)
}
