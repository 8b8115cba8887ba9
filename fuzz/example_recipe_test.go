package fuzz_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// firstToCreate is a leader election as a first try often looks: whoever
// creates the leader node leads, and the others wait for it to go. It has
// a bug the harness finds within a few cases: once a create applied
// without the campaign hearing of it (its reply lost, or the campaign
// failed right after it), the next try finds the node it made itself, and
// waits for it to go — for ever.
type firstToCreate struct {
	conn    zktest.Conn
	dir     string
	session int64 // the session and token it leads with
	token   int64
}

func (e *firstToCreate) Campaign(ctx context.Context) error {
	node := e.dir + "/leader"
	for losses := 0; ; {
		_, err := e.conn.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil:
			_, st, err := e.conn.Exists(node)
			if err != nil {
				return err
			}
			e.session, e.token = st.EphemeralOwner, st.Czxid
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if _, err := e.conn.Create(e.dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		case errors.Is(err, zk.ErrNodeExists):
			exists, _, watch, err := e.conn.ExistsW(node)
			if err != nil {
				return err
			}
			if exists {
				select {
				case <-watch:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		case !recipe.IsConnectionLoss(err) || losses == 10:
			return err
		default:
			// The connection was lost: try again, a little later.
			losses++
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// Resign deletes the leader node if it is still this session's.
func (e *firstToCreate) Resign() error {
	node := e.dir + "/leader"
	_, st, err := e.conn.Exists(node)
	if err != nil || st == nil || st.EphemeralOwner != e.session {
		return err
	}
	return e.conn.Delete(node, st.Version)
}

// firstToCreateRecipe describes firstToCreate to the harness: candidates
// Campaign and Resign, and record what they did for linearizability's
// election model, which knows at most one leader at a time, with tokens
// that grow.
func firstToCreateRecipe() fuzz.Recipe[*firstToCreate] {
	in := func(op linearizability.ElectionOp, session, token int64) linearizability.ElectionInput {
		return linearizability.ElectionInput{Op: op, Election: "/first-to-create", Session: session, Token: token}
	}
	resign := func(e *firstToCreate, _ context.Context, call *fuzz.Call) error {
		e.token = 0
		// Recorded first: a crash in the middle leaves it open.
		call.Record(in(linearizability.Resign, e.session, 0), linearizability.ElectionUnknown{})
		return e.Resign()
	}
	return fuzz.Recipe[*firstToCreate]{
		Name: "first-to-create election",
		Path: "/first-to-create",
		New: func(_ context.Context, client fuzz.Client, path string) *firstToCreate {
			return &firstToCreate{conn: client.Conn, dir: path}
		},
		Ops: []fuzz.Op[*firstToCreate]{{
			Name:    "Campaign",
			Enabled: func(e *firstToCreate) bool { return e.token == 0 },
			Call: func(e *firstToCreate, ctx context.Context, call *fuzz.Call) error {
				// In any session it had but the one it leads in, it may
				// have led for a while, and stopped.
				var err error
				call.Sessions(func(session int64, last bool) {
					if !last || err != nil {
						call.Record(in(linearizability.Campaign, session, 0), linearizability.ElectionUnknown{})
						call.Record(in(linearizability.Resign, session, 0), linearizability.ElectionUnknown{})
					}
				})
				if err = e.Campaign(ctx); err == nil {
					call.Record(in(linearizability.Campaign, e.session, 0), linearizability.ElectionOutput{OK: true, Token: e.token})
				}
				return err
			},
		}, {
			Name:    "Resign",
			Enabled: func(e *firstToCreate) bool { return e.token != 0 },
			Call:    resign,
		}},
		// When the case winds down, a leader resigns.
		Stop: func(e *firstToCreate, ctx context.Context, call *fuzz.Call) error {
			if e.token == 0 {
				return nil
			}
			return resign(e, ctx, call)
		},
		Model: linearizability.ElectionModel(),
	}
}

// A recipe of your own, fuzzed from a test: describe the handle each
// simulated client makes, the calls a client makes in its loop (each
// recording what it did for the model), and the model its history must
// satisfy. On a finding the test fails with the shrunk story, and rapid
// saves a fail file under testdata/rapid that every later `go test`
// replays first.
func ExampleRecipe() {
	testMyElection := func(t *testing.T) {
		fuzz.Check(t, firstToCreateRecipe(), fuzz.WithClients(3))
	}
	_ = testMyElection // func TestMyElection(t *testing.T) { testMyElection(t) }
}

func init() {
	// The fail-and-replay test runs it as it runs the mutants. It has a
	// second bug, which the model finds: a campaign whose session expired
	// between its create and the Exists after it takes the node another
	// session made meanwhile for its own, and claims to lead.
	exampleTargets["first-to-create"] = targets.Mutant{Name: "first-to-create", Detector: fuzz.Liveness, Target: firstToCreateRecipe(), Recipe: "example", Also: []fuzz.Detector{fuzz.Model}}
}
