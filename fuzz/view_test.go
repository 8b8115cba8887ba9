package fuzz_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// looker reads a node at each call, and counts, in its Check, the views
// that told it its process was frozen.
type looker struct {
	conn   zktest.Conn
	paused *atomic.Int64
}

func lookRecipe(paused *atomic.Int64) fuzz.Recipe[*looker] {
	return fuzz.Recipe[*looker]{
		Name: "looks",
		Path: "/looks",
		New: func(_ context.Context, client fuzz.Client, _ string) *looker {
			return &looker{conn: client.Conn, paused: paused}
		},
		Ops: []fuzz.Op[*looker]{{Name: "Look", Call: func(l *looker, _ context.Context, _ *fuzz.Call) error {
			_, _, err := l.conn.Exists("/looks")
			return err
		}}},
		Check: func(l *looker, v fuzz.View) string {
			if v.Paused {
				l.paused.Add(1)
				if v.Reachable {
					return "a frozen process's view says it reaches the server"
				}
			}
			return ""
		},
	}
}

// TestViewTellsAFrozenProcess holds View.Paused to the schedule: checks
// see it while a Pause holds the process, and never in a campaign that
// draws no pause.
func TestViewTellsAFrozenProcess(t *testing.T) {
	t.Parallel()
	var paused atomic.Int64
	onlyPauses := fuzz.WithoutFaults(slices.DeleteFunc(fuzz.AllFaults(), func(f fuzz.Fault) bool { return f == fuzz.Pause })...)
	if f, _ := fuzz.Survey(t, lookRecipe(&paused), []fuzz.Option{onlyPauses}, 100, 1, nil); f != nil {
		t.Fatalf("%s: %s\n%s", f.Detector, f.Summary, f.Story)
	}
	if paused.Load() == 0 {
		t.Fatal("no check saw a frozen process in 100 cases that draw pauses")
	}
	paused.Store(0)
	if f, _ := fuzz.Survey(t, lookRecipe(&paused), []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...)}, 100, 1, nil); f != nil {
		t.Fatalf("%s: %s\n%s", f.Detector, f.Summary, f.Story)
	}
	if n := paused.Load(); n != 0 {
		t.Fatalf("%d checks saw a frozen process in cases that draw no pause", n)
	}
}
