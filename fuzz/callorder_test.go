package fuzz_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// racer is a recipe whose one op makes a node from one goroutine and asks
// whether it exists from another, at once, and notes which of the two the
// server answered first.
type racer struct {
	client fuzz.Client
	dir    string
	n      int
}

// Counts over a campaign: ops whose exists the server answered before the
// create, and after.
var racerExistsFirst, racerCreateFirst atomic.Int64

func (r *racer) race(_ context.Context, _ *fuzz.Call) error {
	if makeAll(r.client.Conn, r.dir, nil) != nil {
		return nil
	}
	r.n++
	node := fmt.Sprintf("%s/c%d-%d", r.dir, r.client.N, r.n)
	var wg sync.WaitGroup
	var created, found bool
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, err := r.client.Conn.Create(node, nil, zk.FlagEphemeral, zktest.OpenACL)
		created = err == nil
	}()
	go func() {
		defer wg.Done()
		ok, _, err := r.client.Conn.Exists(node)
		found = err == nil && ok
	}()
	wg.Wait()
	if created {
		_ = r.client.Conn.Delete(node, -1)
	}
	switch {
	case !created:
	case found:
		racerCreateFirst.Add(1)
	default:
		racerExistsFirst.Add(1)
	}
	return nil
}

// TestAClientsCallsReachTheServerInEitherOrder holds the harness to
// drawing which of a client's calls goes first when two of its goroutines
// call the server at once: the order of the method names (create before
// exists) would otherwise decide it in every case, and a recipe wrong only
// in the other order would never be found.
func TestAClientsCallsReachTheServerInEitherOrder(t *testing.T) {
	t.Parallel()
	racerExistsFirst.Store(0)
	racerCreateFirst.Store(0)
	r := fuzz.Recipe[*racer]{
		Name: "racer",
		New: func(_ context.Context, client fuzz.Client, dir string) *racer {
			return &racer{client: client, dir: dir}
		},
		Ops: []fuzz.Op[*racer]{{Name: "Race", Call: (*racer).race}},
	}
	opts := []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutDetectors(fuzz.Polling, fuzz.Herd)}
	if f, _ := fuzz.Survey(t, r, opts, 100, 1, nil); f != nil {
		t.Fatalf("racer: %s\n%s", f.Summary, f.Story)
	}
	existsFirst, createFirst := racerExistsFirst.Load(), racerCreateFirst.Load()
	if existsFirst == 0 || createFirst == 0 {
		t.Fatalf("the server answered the exists first in %d ops and the create first in %d: the harness sent a client's calls in one order only", existsFirst, createFirst)
	}
	t.Logf("of a client's two calls made at once, the exists went first in %d ops, the create in %d", existsFirst, createFirst)
}
