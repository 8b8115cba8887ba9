package fuzz_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// claimant is a process that claims a name of its own in a directory,
// with an ephemeral node, and takes a node already there under that name
// for its own: after a crash, that is its dead process's node, which goes
// when the server expires the dead session (the mistake of CURATOR-498's
// protected create, in its plainest form).
type claimant struct {
	conn zktest.Conn
	node string
	owns bool
}

func (c *claimant) claim(context.Context, *fuzz.Call) error {
	_, err := c.conn.Create(c.node, nil, zk.FlagEphemeral, zktest.OpenACL)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err := c.conn.Create(path.Dir(c.node), nil, 0, zktest.OpenACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		_, err = c.conn.Create(c.node, nil, zk.FlagEphemeral, zktest.OpenACL)
	}
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		c.owns = true
		return nil
	}
	return err
}

// release deletes the claimed node, as the process stops.
func (c *claimant) release(context.Context, *fuzz.Call) error {
	if !c.owns {
		return nil
	}
	c.owns = false
	if err := c.conn.Delete(c.node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// check reports a claim whose node is gone.
func (c *claimant) check(v fuzz.View) string {
	if !c.owns || !v.Reachable || v.Gated {
		return ""
	}
	if there, _, err := v.Read.Exists(c.node); err == nil && !there {
		return fmt.Sprintf("it claims %s, which the server no longer holds", c.node)
	}
	return ""
}

func claimantRecipe() fuzz.Recipe[*claimant] {
	return fuzz.Recipe[*claimant]{
		Name: "claimant",
		Path: "/claims",
		New: func(_ context.Context, client fuzz.Client, dir string) *claimant {
			return &claimant{conn: client.Conn, node: fmt.Sprintf("%s/client-%d", dir, client.N)}
		},
		Ops:        []fuzz.Op[*claimant]{{Name: "Claim", Enabled: func(c *claimant) bool { return !c.owns }, Call: (*claimant).claim}},
		Stop:       (*claimant).release,
		Check:      (*claimant).check,
		CheckReads: true,
	}
}

// TestOrphanedSessionsExpireBeforeTheEnd holds the wind-down to letting
// the sessions no client holds expire before the clients stop: a
// claimant that took its crashed process's node is wrong only once the
// server expires the dead session, which a short schedule ends before.
// The test takes only findings whose story has that phase: after it,
// each claimant releases its claim and stops.
func TestOrphanedSessionsExpireBeforeTheEnd(t *testing.T) {
	t.Parallel()
	const phase = "time passes until the server has expired the sessions no client holds"
	inPhase := func(f *fuzz.Finding) bool {
		return f.Detector == fuzz.StateReport && strings.Contains(f.Story, phase)
	}
	opts := []fuzz.Option{fuzz.WithSteps(10), fuzz.WithoutFaults(slices.DeleteFunc(fuzz.AllFaults(), func(f fuzz.Fault) bool { return f == fuzz.Crash })...)}
	f, cases := fuzz.Survey(t, claimantRecipe(), opts, 2000, 1, inPhase)
	if f == nil {
		t.Fatalf("no claimant of a crashed process's node was caught in the wind-down's wait for the orphaned sessions, in 2,000 cases")
	}
	t.Logf("found after %d cases: %s", cases, f.Summary)
}
