package fuzz_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// pinger reads a node in a retry-forever loop, as a library whose
// documented policy retries a lost connection without end (kazoo's
// KazooRetry(max_tries=-1)); it stops at its library's own close.
type pinger struct {
	conn   zktest.Conn
	closed atomic.Bool
}

func (p *pinger) ping(ctx context.Context, _ *fuzz.Call) error {
	for {
		if p.closed.Load() {
			return errors.New("the client is closed")
		}
		_, _, err := p.conn.Exists("/pings")
		if err == nil || !recipe.IsConnectionLoss(err) {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closable is a pinger whose library has a close of its own.
type closable struct{ *pinger }

func (c closable) CloseClient() { c.closed.Store(true) }

func pingRecipe[C any](wrap func(*pinger) C, ping func(C, context.Context, *fuzz.Call) error) fuzz.Recipe[C] {
	return fuzz.Recipe[C]{
		Name: "pings",
		Path: "/pings",
		New: func(_ context.Context, client fuzz.Client, _ string) C {
			return wrap(&pinger{conn: client.Conn})
		},
		Ops: []fuzz.Op[C]{{Name: "Ping", Call: ping}},
	}
}

// TestClientCloserTellsTheLibrary holds the closed-Conn rule to what it is
// for: a retry-forever loop on a closed Conn is a liveness finding when
// nothing told its code of the close, and none when the process closed
// its library's client first (fuzz.ClientCloser), as a program closes
// kazoo's or Curator's.
func TestClientCloserTellsTheLibrary(t *testing.T) {
	t.Parallel()
	opts := []fuzz.Option{fuzz.WithoutFaults(slices.DeleteFunc(fuzz.AllFaults(), func(f fuzz.Fault) bool { return f == fuzz.Close })...)}
	closedLoop := func(f *fuzz.Finding) bool {
		return f.Detector == fuzz.Liveness && strings.Contains(f.Summary, "after closing it")
	}
	plain := pingRecipe(func(p *pinger) *pinger { return p }, (*pinger).ping)
	if f, _ := fuzz.Survey(t, plain, opts, 300, 1, closedLoop); f == nil {
		t.Fatal("a retry-forever loop on a closed Conn, told nothing, gave no liveness finding in 300 cases")
	}
	told := pingRecipe(func(p *pinger) closable { return closable{p} }, func(c closable, ctx context.Context, call *fuzz.Call) error {
		return c.ping(ctx, call)
	})
	if f, _ := fuzz.Survey(t, told, opts, 300, 1, nil); f != nil {
		t.Fatalf("a loop whose library was told of the close: %s: %s\n%s", f.Detector, f.Summary, f.Story)
	}
}
