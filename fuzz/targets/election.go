package targets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zksim/zksim/fuzz"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Elector is a leader election as the election's clients use it;
// *recipe.Election is one. Campaign waits until elected; Token is the
// fencing token of the leadership held (0 for none); IsLeader is false
// once leadership is lost, and while it is in doubt; Leader reads who
// leads now; Observe streams the changes of leader.
type Elector interface {
	Campaign(ctx context.Context) error
	Resign() error
	Token() int64
	IsLeader() bool
	Leader(ctx context.Context) (recipe.Leader, error)
	Observe(ctx context.Context) <-chan recipe.Leader
}

// ContextResigner is an Elector whose resignation can be bounded by a
// context, as recipe.Election's ResignContext: a Resign the harness draws
// with a deadline uses it.
type ContextResigner interface {
	ResignContext(ctx context.Context) error
}

// LossReporter is an Elector with a lost-leadership signal, as
// recipe.Election's Lost: closed once the leadership is lost, and,
// without a leadership, closed already. A candidate's check holds it to
// IsLeader: a leader that says it leads has not lost.
type LossReporter interface {
	Lost() <-chan struct{}
}

// NewElector makes the Elector one process uses, on its Conn, for the
// election whose nodes live under path.
type NewElector func(conn zktest.Conn, path string) Elector

// RecipeElection is the NewElector of recipe.Election.
func RecipeElection(conn zktest.Conn, path string) Elector {
	return recipe.NewElection(conn, path, nil)
}

// electionPath is the election's directory in every case.
const electionPath = "/elections/leader"

// Election is the Target of a leader election, described as a Recipe (its
// source is the example of a description to follow). Client 0 observes:
// it follows Observe's stream and reads its latest value. The others are
// candidates: they Campaign; once elected they write to the fenced
// resource with their token, and Resign; any of them may read Leader.
//
// The model is linearizability's election model: at most one leader at a
// time, its session's expiry ending its leadership; tokens that grow with
// every new leader; a fenced resource that refuses a superseded leader's
// writes; a session's observations never going back to an older epoch.
// The candidates' Check holds a leader to its word: once its session has
// expired and its client has a new one, it must no longer say it leads
// (StateReport), nor while its leadership is in doubt; the observer's
// stream must never go back to an older leader. The observer's Settled
// holds its stream to the server: once everything has settled, the last
// leader it heard of is the leader (Convergence).
func Election(newElector NewElector) fuzz.Target {
	return fuzz.Recipe[*electionClient]{
		Name: "election",
		Path: electionPath,
		New: func(ctx context.Context, client fuzz.Client, path string) *electionClient {
			c := &electionClient{elector: newElector(client.Conn, path), path: path, observer: client.N == 0}
			if c.observer {
				c.follow(ctx)
			}
			return c
		},
		Ops: []fuzz.Op[*electionClient]{
			{Name: "Campaign", Enabled: (*electionClient).canCampaign, Call: (*electionClient).campaign},
			{Name: "Write", Enabled: (*electionClient).isLeading, Call: (*electionClient).write},
			{Name: "Resign", Enabled: (*electionClient).isLeading, Releases: true, Call: (*electionClient).resign},
			{Name: "Leader", Enabled: (*electionClient).isCandidate, Call: (*electionClient).readLeader},
			{Name: "Observed", Enabled: (*electionClient).isObserver, Call: (*electionClient).observed},
		},
		Stop:    (*electionClient).stop,
		Model:   linearizability.ElectionModel(),
		Check:   (*electionClient).check,
		Settled: (*electionClient).settled,
	}
}

// electionClient is one process of the election's Recipe.
type electionClient struct {
	elector  Elector
	path     string
	observer bool

	// A candidate's leadership as its calls told it: elected (Campaign
	// returned nil) and not resigned since, in session with token.
	leading bool
	session int64
	token   int64
	down    fuzz.StepDown

	// mu guards leading and session, which Check reads too (see
	// semClient.mu), and the observer's stream: the last leader it heard
	// of, the newest token it told of, and the first time it went back to
	// an older one.
	mu       sync.Mutex
	latest   recipe.Leader
	heard    bool
	newest   int64
	wentBack string
}

func (c *electionClient) isCandidate() bool { return !c.observer }
func (c *electionClient) isObserver() bool  { return c.observer }
func (c *electionClient) isLeading() bool   { return c.leading }
func (c *electionClient) canCampaign() bool { return !c.observer && !c.leading }

// follow keeps the latest value of Observe's stream, for as long as the
// process lives.
func (c *electionClient) follow(ctx context.Context) {
	stream := c.elector.Observe(ctx)
	go func() {
		for l := range stream {
			c.mu.Lock()
			c.latest, c.heard = l, true
			if l.Token != 0 && l.Token < c.newest && c.wentBack == "" {
				c.wentBack = fmt.Sprintf("its Observe stream went back from token %d to an older leader, %s", c.newest, describeLeader(l))
			}
			c.newest = max(c.newest, l.Token)
			c.mu.Unlock()
		}
	}()
}

func (c *electionClient) input(op linearizability.ElectionOp, session, token int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: op, Election: c.path, Session: session, Token: token}
}

// campaign campaigns. In every session the client had during the call it
// may have led for a while and stepped down again, with a token of its
// own: its node first in line, then gone with the session, or given up
// with the call — or, in the session it is elected in, a twin of its node
// (a create whose reply was lost, applied after all) first in line until
// it found and deleted it. Readers may have seen any of those leaders, so
// each session's outcome is open within the call.
func (c *electionClient) campaign(ctx context.Context, call *fuzz.Call) error {
	call.Sessions(func(session int64, _ bool) {
		call.Record(c.input(linearizability.Campaign, session, 0), linearizability.ElectionUnknown{})
		call.Record(c.input(linearizability.Resign, session, 0), linearizability.ElectionUnknown{})
	})
	err := c.elector.Campaign(ctx)
	if err == nil {
		session := call.Session()
		c.mu.Lock()
		c.leading, c.session = true, session
		c.mu.Unlock()
		c.token = c.elector.Token()
		call.Record(c.input(linearizability.Campaign, session, 0), linearizability.ElectionOutput{OK: true, Token: c.token})
	}
	return err
}

// write is the leader's write to the fenced resource, with the token the
// elector gives now (a leader that knows it lost has none, and skips).
func (c *electionClient) write(_ context.Context, call *fuzz.Call) error {
	token := c.elector.Token()
	if token == 0 {
		return errors.New("no token: the elector says leadership is lost")
	}
	accepted := call.Fence(token)
	call.Record(c.input(linearizability.LeaderWrite, c.session, token), linearizability.ElectionOutput{OK: accepted})
	return nil
}

// stop resigns, if the client leads.
func (c *electionClient) stop(ctx context.Context, call *fuzz.Call) error {
	if !c.leading {
		return nil
	}
	return c.resign(ctx, call)
}

// resign resigns. Leadership is over for the client whatever Resign
// returns; an error leaves open whether it ended now or earlier.
func (c *electionClient) resign(ctx context.Context, call *fuzz.Call) error {
	c.mu.Lock()
	c.leading = false
	c.mu.Unlock()
	call.IfCrashed(func() { call.Record(c.input(linearizability.Resign, c.session, 0), linearizability.ElectionUnknown{}) })
	var err error
	if r, ok := c.elector.(ContextResigner); ok && hasDeadline(ctx) {
		err = r.ResignContext(ctx)
	} else {
		err = c.elector.Resign()
	}
	if err == nil {
		call.Record(c.input(linearizability.Resign, c.session, 0), linearizability.ElectionOutput{OK: true})
	} else {
		call.Record(c.input(linearizability.Resign, c.session, 0), linearizability.ElectionUnknown{})
	}
	return err
}

func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}

// readLeader reads the leader, as of the call or later.
func (c *electionClient) readLeader(ctx context.Context, call *fuzz.Call) error {
	l, err := c.elector.Leader(ctx)
	if err != nil && !errors.Is(err, recipe.ErrNoLeader) {
		return err
	}
	call.Record(c.input(linearizability.Observe, call.Session(), 0), linearizability.ElectionOutput{Token: l.Token})
	return err
}

// observed reads the latest leader the observer's stream told of.
func (c *electionClient) observed(_ context.Context, call *fuzz.Call) error {
	c.mu.Lock()
	l, heard := c.latest, c.heard
	c.mu.Unlock()
	if !heard {
		return errors.New("the stream has told of no leader yet")
	}
	call.Record(c.input(linearizability.Observe, call.Session(), 0), linearizability.ElectionOutput{Token: l.Token})
	return nil
}

// check holds a candidate to its word: its lost-leadership signal and
// IsLeader agree; it does not say it leads while that is in doubt, its
// connection down for longer than its session timeout; and once the
// session it was elected in has expired and its client is on a new one, it
// stops saying it leads. It holds the observer's stream to never going
// back to an older leader than one it told of, across sessions too.
func (c *electionClient) check(v fuzz.View) string {
	if c.observer {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.wentBack
	}
	if l, ok := c.elector.(LossReporter); ok && c.elector.IsLeader() && isClosed(l.Lost()) {
		return fmt.Sprintf("its elector says it leads (token %d), and that its leadership is lost (Lost is closed)", c.elector.Token())
	}
	if v.Disconnected > v.SessionTimeout && c.elector.IsLeader() {
		return fmt.Sprintf("its elector says it leads (token %d) though its connection has been down for %v, longer than its session timeout (%v): the server may have expired its session, and another may lead",
			c.elector.Token(), v.Disconnected.Round(time.Millisecond), v.SessionTimeout)
	}
	c.mu.Lock()
	leading, session := c.leading, c.session
	c.mu.Unlock()
	if !leading {
		return ""
	}
	return c.down.Check(v, session, c.elector.IsLeader(), fmt.Sprintf("its elector still says it leads (token %d)", c.elector.Token()))
}

// settled holds the observer's stream to the server: the last leader it
// told of is the one there is.
func (c *electionClient) settled(v fuzz.View) string {
	if !c.observer {
		return ""
	}
	now, err := recipe.CurrentLeader(context.Background(), v.Read, c.path)
	if err != nil && !errors.Is(err, recipe.ErrNoLeader) {
		return fmt.Sprintf("reading the leader failed: %v", err)
	}
	c.mu.Lock()
	l := c.latest
	c.mu.Unlock()
	if l.Node == now.Node {
		return ""
	}
	return fmt.Sprintf("the last leader its Observe stream told of is %s, but the leader is %s", describeLeader(l), describeLeader(now))
}

func describeLeader(l recipe.Leader) string {
	if l.Node == "" {
		return "nobody"
	}
	return fmt.Sprintf("%s (token %d)", fuzz.StableName(l.Node), l.Token)
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
