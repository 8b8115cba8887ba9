package fuzz_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
)

// counter is a counter kept in a znode's data, incremented by reading it
// and writing it back: with cas, a write that names the version it read,
// retried when another came first; without, a plain write, which loses a
// concurrent increment.
type counter struct {
	conn zktest.Conn
	node string
	cas  bool
}

func (c *counter) add(ctx context.Context, call *fuzz.Call) error {
	for {
		data, st, err := c.conn.Get(c.node)
		if errors.Is(err, zk.ErrNoNode) {
			if err = makeAll(c.conn, c.node, []byte("0")); err == nil {
				continue
			}
		}
		if err != nil {
			return err
		}
		n, _ := strconv.ParseInt(string(data), 10, 64)
		version := int32(-1)
		if c.cas {
			version = st.Version
		}
		_, err = c.conn.Set(c.node, []byte(strconv.FormatInt(n+1, 10)), version)
		switch {
		case err == nil:
			call.Record(linearizability.CounterInput{Counter: c.node, Add: 1}, struct{}{})
			return nil
		case !errors.Is(err, zk.ErrBadVersion):
			// A lost connection: the write may have applied.
			call.RecordUnknown(linearizability.CounterInput{Counter: c.node, Add: 1})
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// makeAll makes p and its ancestors, p with data, as far as they are not
// there yet.
func makeAll(conn zktest.Conn, p string, data []byte) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		d := []byte(nil)
		if i == len(p) {
			d = data
		}
		if _, err := conn.Create(p[:i], d, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// counterRecipe describes the counter, its value read by the harness
// itself (Recipe.Read) for the counter model.
func counterRecipe(cas bool) fuzz.Recipe[*counter] {
	return fuzz.Recipe[*counter]{
		Name: "counter",
		Path: "/counters",
		New: func(_ context.Context, client fuzz.Client, dir string) *counter {
			return &counter{conn: client.Conn, node: dir + "/hits", cas: cas}
		},
		Ops: []fuzz.Op[*counter]{{Name: "Add", Call: (*counter).add}},
		Read: func(read zktest.Conn, call *fuzz.Call) error {
			data, _, err := read.Get("/counters/hits")
			if errors.Is(err, zk.ErrNoNode) {
				data, err = []byte("0"), nil
			}
			if err != nil {
				return err
			}
			n, _ := strconv.ParseInt(string(data), 10, 64)
			call.Record(linearizability.CounterInput{Counter: "/counters/hits", Read: true}, linearizability.CounterOutput{Value: n})
			return nil
		},
		Model: linearizability.CounterModel(),
	}
}

// TestRecipeReadFindsALostUpdate holds Recipe.Read to its purpose: the
// increments alone are always legal, and only the harness's reads show
// that a plain write lost one; the counter that writes by version is
// clean.
func TestRecipeReadFindsALostUpdate(t *testing.T) {
	t.Parallel()
	f, cases := fuzz.Survey(t, counterRecipe(false), []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...)}, 500, 1, nil)
	if f == nil || f.Detector != fuzz.Model || !strings.Contains(f.Story, "the harness reads the shared state") {
		t.Fatalf("the plain write's lost update: %v, want a model finding from the harness's reads", f)
	}
	t.Logf("found after %d cases: %s", cases, f.Summary)
	if f, _ := fuzz.Survey(t, counterRecipe(true), nil, 300, 1, nil); f != nil {
		t.Fatalf("the counter that writes by version: %s\n%s", f.Summary, f.Story)
	}
}

// rendezvous is a call that returns once two clients are in it: each
// makes a node, and waits until the directory holds two.
type rendezvous struct {
	conn zktest.Conn
	dir  string
	deaf bool // its wait does not hear ctx
}

func (r *rendezvous) meet(ctx context.Context, _ *fuzz.Call) error {
	if err := makeAll(r.conn, r.dir, nil); err != nil {
		return err
	}
	me, err := r.conn.Create(r.dir+"/m-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	defer r.conn.Delete(me, -1)
	for {
		children, _, ch, err := r.conn.ChildrenW(r.dir)
		if err != nil || len(children) >= 2 {
			return err
		}
		done := ctx.Done()
		if r.deaf {
			done = nil
		}
		select {
		case <-ch:
		case <-done:
			return ctx.Err()
		}
	}
}

func rendezvousRecipe(joint, deaf bool) fuzz.Recipe[*rendezvous] {
	return fuzz.Recipe[*rendezvous]{
		Name: "rendezvous",
		New: func(_ context.Context, client fuzz.Client, dir string) *rendezvous {
			return &rendezvous{conn: client.Conn, dir: dir, deaf: deaf}
		},
		Ops: []fuzz.Op[*rendezvous]{{Name: "Meet", Joint: joint, Call: (*rendezvous).meet}},
	}
}

// TestJointCallsEndWithTheCase holds Op.Joint to its purpose: a call that
// waits for another client's is left waiting once the others stop, a
// liveness finding unless the harness knows it is joint and cancels it;
// and one that does not return once cancelled is stuck all the same.
func TestJointCallsEndWithTheCase(t *testing.T) {
	t.Parallel()
	opts := []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutDetectors(fuzz.Herd)}
	f, _ := fuzz.Survey(t, rendezvousRecipe(false, false), opts, 200, 1, nil)
	if f == nil || f.Detector != fuzz.Liveness {
		t.Fatalf("a rendezvous not marked joint: %v, want a liveness finding", f)
	}
	if f, _ := fuzz.Survey(t, rendezvousRecipe(true, false), opts, 200, 1, nil); f != nil {
		t.Fatalf("a joint rendezvous: %s\n%s", f.Summary, f.Story)
	}
	if f, _ := fuzz.Survey(t, rendezvousRecipe(true, true), opts, 200, 1, nil); f == nil || f.Detector != fuzz.Liveness {
		t.Fatalf("a joint rendezvous deaf to its ctx: %v, want a liveness finding", f)
	}
}

// TestRecipeFinal holds Recipe.Final to reporting what it finds wrong
// with the settled state: each increment that returns also leaves a
// marker node, and Final wants the counter to hold as many as there are
// markers, which the plain write's lost update breaks.
func TestRecipeFinal(t *testing.T) {
	r := counterRecipe(false)
	r.Read, r.Model = nil, porcupine.Model{}
	r.Ops[0].Call = func(c *counter, ctx context.Context, call *fuzz.Call) error {
		if err := c.add(ctx, call); err != nil {
			return err
		}
		_, err := c.conn.Create("/counters/adds/a-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNoNode) {
			err = makeAll(c.conn, "/counters/adds", nil)
		}
		return err
	}
	r.Final = func(read zktest.Conn) string {
		data, _, err := read.Get("/counters/hits")
		markers, _, err2 := read.Children("/counters/adds")
		if err != nil || err2 != nil {
			return ""
		}
		if got := string(data); got != strconv.Itoa(len(markers)) {
			return "the counter holds " + got + " after " + strconv.Itoa(len(markers)) + " increments"
		}
		return ""
	}
	f, _ := fuzz.Survey(t, r, []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...)}, 500, 1, nil)
	if f == nil || f.Detector != fuzz.Convergence || !strings.Contains(f.Summary, "increments") {
		t.Fatalf("a lost increment: %v, want Final's convergence finding", f)
	}
}

// TestOnlyFindings holds fuzz.OnlyFindings to passing over what it does
// not accept, as if the case had found nothing.
func TestOnlyFindings(t *testing.T) {
	t.Parallel()
	target := rendezvousRecipe(false, false)
	opts := []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutDetectors(fuzz.Herd)}
	none := append(opts, fuzz.OnlyFindings(func(f *fuzz.Finding) bool { return f.Detector != fuzz.Liveness }))
	if f, _ := fuzz.Survey(t, target, none, 200, 1, nil); f != nil {
		t.Fatalf("found, though passed over: %s", f.Summary)
	}
	if f, _ := fuzz.Survey(t, target, opts, 200, 1, nil); f == nil {
		t.Fatal("without OnlyFindings: nothing found")
	}
}
