package linearizability_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zksim/zksim/linearizability"
)

// A model of the test's own, as a fuzz harness's user would write one:
// sessions join a registry, and a read asks whether a session is in it.
// A session's expiry takes it out. The state is a bit set of sessions
// (below 64), so porcupine's default == compares states.
type (
	join  struct{ session int64 }
	alive struct{ session int64 } // output: bool, whether the session is registered
)

var registryModel = porcupine.Model{
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		live := state.(uint64)
		switch in := input.(type) {
		case linearizability.SessionExpiry:
			return true, live &^ (1 << in.Session)
		case join:
			return true, live | 1<<in.session
		case alive:
			return output.(bool) == (live&(1<<in.session) != 0), live
		}
		return false, live
	},
	DescribeOperation: func(input, output any) string {
		switch in := input.(type) {
		case join:
			return fmt.Sprintf("0x%x joins", in.session)
		case alive:
			return fmt.Sprintf("0x%x alive? %v", in.session, output)
		}
		return fmt.Sprint(input)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("live %b", state) },
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		h    *builder
		want linearizability.Outcome
	}{
		{"joined, then alive", new(builder).
			op(0, 0, 10, join{1}, true).
			op(1, 20, 30, alive{1}, true),
			linearizability.Ok},
		{"alive without joining", new(builder).
			op(1, 20, 30, alive{1}, true),
			linearizability.Illegal},
		{"alive after the session expired", new(builder).
			op(0, 0, 10, join{1}, true).
			expire(1, 15, 15). // an expiry's nil output leaves its bounds alone
			op(1, 20, 30, alive{1}, true),
			linearizability.Illegal},
		{"expiry concurrent with the read", new(builder).
			op(0, 0, 10, join{1}, true).
			expire(1, 15, 40).
			op(1, 20, 30, alive{1}, true),
			linearizability.Ok},
		{"a join nobody saw return may have happened", new(builder).
			op(0, 0, 10, join{1}, nil).
			op(1, 20, 30, alive{1}, true),
			linearizability.Ok},
		{"or not yet", new(builder).
			op(0, 0, 10, join{1}, nil).
			op(1, 20, 30, alive{1}, false),
			linearizability.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := linearizability.Check(tt.h.h, registryModel, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, res, tt.want)
		})
	}
}

func TestCheckReport(t *testing.T) {
	h := new(builder).
		op(0, 0, 10, join{1}, true).
		expire(1, 15, 15).
		op(1, 20, 30, alive{1}, true)
	h.h.Operations[2].Tag = "read-7"
	h.h.Faults = []linearizability.Fault{{Kind: linearizability.FaultExpiry, ClientID: -1, Detail: "session 1 timed out", Start: 15, End: 15}}
	res, err := linearizability.Check(h.h, registryModel, 10*time.Second)
	if err != nil || res.Outcome != linearizability.Illegal {
		t.Fatalf("got %v, %v; want Illegal", res, err)
	}
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"session 1 timed out", // the fault
		"0x1 alive? true",     // the model's descriptions
		"session 0x1 expired", // the expiry, by its String
		"live 10",             // states
		"tag read-7",          // the operation's tag
		"check: Illegal",      // the outcome
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report does not contain %q", want)
		}
	}
}

func TestCheckCatchesAPanickingModel(t *testing.T) {
	// A model that knows nothing of session expiries.
	m := registryModel
	step := m.Step
	m.Step = func(state, input, output any) (bool, any) {
		_ = input.(alive) // panics on an expiry, or a join
		return step(state, input, output)
	}
	h := new(builder).
		expire(1, 15, 15).
		op(1, 20, 30, alive{1}, false)
	_, err := linearizability.Check(h.h, m, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "SessionExpiry") {
		t.Fatalf("got error %v, want one naming the input the step panicked on", err)
	}
}

func TestCheckNeedsAModel(t *testing.T) {
	h := new(builder).op(1, 20, 30, alive{1}, false)
	for name, m := range map[string]porcupine.Model{
		"no Init": {Step: registryModel.Step},
		"no Step": {Init: registryModel.Init},
	} {
		if _, err := linearizability.Check(h.h, m, time.Second); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}
