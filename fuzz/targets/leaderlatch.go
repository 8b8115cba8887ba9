package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/linearizability"
)

// latchElectionPath is the latch's directory in every case.
const latchElectionPath = "/elections/latch"

// latchTarget is the Target of Curator's LeaderLatch (curatorlatch.go) in
// version v, described as a Recipe after Election's (election.go). Each
// client is a process with a CuratorFramework of its own
// (curatorframework.go, with ConnectionStateManager's injected session
// expiration, which Curator has from 3.0 on), and a LeaderLatch at a
// time. A client Campaigns: start() on a new latch if it has none started,
// then await(), or await(timeout) for a call with a deadline; a latch
// whose await timed out goes on campaigning, and the next Campaign awaits
// it again. Elected, the client Writes to the fenced resource with its
// token, the sequence number of its latch node (CURATOR-537 made the path
// the documented token), or Closes its latch, resigning. Stop closes it.
//
// The model is linearizability's election model. A latch's leadership
// comes and goes on its own, not only through calls: the latch gives it
// up on SUSPENDED and takes it again on RECONNECTED if its node is still
// first (Election's recipe does the same), and before 5.4.0 it deletes its
// node on RECONNECTED and makes a new one, its session alive. So a term
// of leadership is recorded as the latch tells it: elected when Campaign
// returns (Campaign, with the token); ended at some instant after that, or
// never, as the latch may end it unasked (an unknown Resign of the same
// session, recorded with the Campaign); and held, without a break, at each
// Write that finds the latch still leading through the same node in the
// session it was elected in, the client connected in it (a LeaderWrite
// without a token: an act legal only while the session leads), besides
// the fenced write itself. A term is the latch's leadership through one
// node in one session: through the same node it may pause (the latch says
// it does not lead while its connection is down) and resume in the same
// session; once the latch leads through another node, or in another
// session, the term is over, and the next Campaign (which returns at once
// if the latch leads) records a new one. Two latches that lead at once,
// their sessions alive, are then illegal, and so is a term handed a token
// not newer than an earlier term's: the same node leading again in a new
// session.
//
// The check (StateReport) holds a leader to its node: see check.
func latchTarget(v curatorLatchVersion) fuzz.Target {
	return fuzz.Recipe[*latchClient]{
		Name: "leader-latch",
		Path: latchElectionPath,
		New: func(ctx context.Context, client fuzz.Client, path string) *latchClient {
			return &latchClient{
				f:        newCuratorFrameworkInjecting(ctx, client.Conn, client.Events, v.handling),
				v:        v,
				path:     path,
				id:       fmt.Sprintf("client-%d", client.N),
				owners:   map[string]int64{},
				had:      map[nodeInSession]bool{},
				sessions: map[int64]bool{},
			}
		},
		Ops: []fuzz.Op[*latchClient]{
			{Name: "Campaign", Enabled: func(c *latchClient) bool { return !c.leading }, Call: (*latchClient).campaign},
			{Name: "Write", Enabled: func(c *latchClient) bool { return c.leading }, Call: (*latchClient).write},
			{Name: "Close", Enabled: func(c *latchClient) bool { return c.leading }, Releases: true, Call: (*latchClient).close},
		},
		Stop: func(c *latchClient, ctx context.Context, call *fuzz.Call) error {
			if !c.started() {
				return nil
			}
			return c.close(ctx, call)
		},
		Model:      linearizability.ElectionModel(),
		Check:      (*latchClient).check,
		CheckReads: true,
	}
}

// latchClient is one process of the latch's Recipe.
type latchClient struct {
	f        *curatorFramework
	v        curatorLatchVersion
	path, id string
	// latch is the process's LeaderLatch, nil before its first Campaign;
	// a closed one is replaced at the next Campaign.
	latch *curatorLatch
	// changes counts what its LeaderLatchListener heard (isLeader and
	// notLeader); uuids, the protected ids its latches drew.
	changes atomic.Int64
	uuids   atomic.Uint64

	// leading: a term of leadership the client recorded, as its latch
	// told it, that the client does not know is over.
	leading bool
	term    latchTerm

	// What the check saw: the owners of the nodes the latch had, read
	// while they were there; the nodes the latch had in each of the
	// client's sessions; and the client's sessions.
	owners   map[string]int64
	had      map[nodeInSession]bool
	sessions map[int64]bool
}

// nodeInSession is a node the latch had while its client was in session.
type nodeInSession struct {
	node    string
	session int64
}

// latchTerm is a term of leadership: the session it was elected in, the
// node it leads through and its token, and the count of the listener's
// calls when it began.
type latchTerm struct {
	session int64
	node    string
	token   int64
	changes int64
}

func (c *latchClient) started() bool {
	return c.latch != nil && c.latch.state.Load() == latchStarted
}

func (c *latchClient) input(op linearizability.ElectionOp, session, token int64) linearizability.ElectionInput {
	return linearizability.ElectionInput{Op: op, Election: c.path, Session: session, Token: token}
}

// campaign starts a latch, if the client has none started, and awaits its
// leadership. Elected, it records a term.
func (c *latchClient) campaign(ctx context.Context, call *fuzz.Call) error {
	if !c.started() {
		c.latch = newCuratorLatch(c.f, c.v, c.path, c.id, func(bool) { c.changes.Add(1) }, &c.uuids)
		if err := c.latch.start(); err != nil {
			return err
		}
	}
	var err error
	if d, timed := ctx.Deadline(); timed {
		var elected bool
		elected, err = c.latch.awaitTimeout(ctx, time.Until(d)-curator2Margin)
		if err == nil && !elected {
			err = errors.New("await(timeout) returned false: not elected in time")
		}
	} else {
		err = c.latch.await(ctx)
	}
	if err != nil {
		return err
	}
	session := call.Session()
	node := c.latch.leaderNode()
	c.leading = true
	c.term = latchTerm{session: session, node: node, token: latchToken(node), changes: c.changes.Load()}
	call.Record(c.input(linearizability.Campaign, session, 0), linearizability.ElectionOutput{OK: true, Token: c.term.token})
	call.RecordUnknown(c.input(linearizability.Resign, session, 0))
	return nil
}

// termState is where a recorded term stands, as the client sees its latch.
type termState int

const (
	// termHeld: the latch leads through the term's node, and has
	// without a break, or again in the same session.
	termHeld termState = iota
	// termInDoubt: it does not lead now, but its node is the term's, in
	// the same session: it may lead through it again.
	termInDoubt
	// termOver: the latch is closed, leads through another node or in
	// another session, or has another node.
	termOver
)

func (c *latchClient) termState() termState {
	l := c.latch
	if l.state.Load() != latchStarted {
		return termOver
	}
	sameSession := c.f.conn.SessionID() == c.term.session
	if l.leads() {
		if l.leaderNode() == c.term.node && (c.changes.Load() == c.term.changes || sameSession) {
			return termHeld
		}
		return termOver
	}
	if l.path(&l.ourPath) == c.term.node && sameSession {
		return termInDoubt
	}
	return termOver
}

// write is the leader's work: held to the term's session leading now (a
// LeaderWrite without a token, if the client is connected in that
// session), and its write to the fenced resource with the term's token.
// A latch that does not lead through the term's node now skips it.
func (c *latchClient) write(_ context.Context, call *fuzz.Call) error {
	switch c.termState() {
	case termOver:
		c.leading = false
		return fmt.Errorf("its latch no longer leads through %s, in session %#x, as it did when elected", fuzz.StableName(c.term.node), c.term.session)
	case termInDoubt:
		return errors.New("its latch does not lead now (hasLeadership is false), and skips its write")
	}
	if c.f.conn.State() == zk.StateHasSession && c.f.conn.SessionID() == c.term.session {
		call.Record(c.input(linearizability.LeaderWrite, c.term.session, 0), linearizability.ElectionOutput{OK: true})
	}
	accepted := call.Fence(c.term.token)
	call.Record(c.input(linearizability.LeaderWrite, c.term.session, c.term.token), linearizability.ElectionOutput{OK: accepted})
	return nil
}

// close closes the latch: a leader resigns, a candidate leaves. The term's
// end was recorded with it (it is over by now, or never was).
func (c *latchClient) close(_ context.Context, _ *fuzz.Call) error {
	c.leading = false
	return c.latch.close()
}

// check holds a leader to its word (StateReport). Under the session error
// policy, its latch does not say it leads in a session the server has
// expired, its process running, while another candidate's node is first
// in line: it keeps its leadership while SUSPENDED on Curator's promise
// that LOST comes first. Its latch does not say it
// leads while its connection has been down for longer than its session
// timeout. And while it says it leads, its client reaching the server
// with nothing of its held at the gate, the node it leads through
// (getLastPathIsLeader) must be the first in line as the server lists it:
// gone, or behind another, it leads no more, and another candidate leads,
// or soon will, its session alive. No grace is given: the check runs with
// the handle quiet, its latch having heard all its client was told, and a
// leader watches nothing, so nothing more will tell it. The finding tells
// whose the node was, as the check saw it while it was there: the
// client's own session's, another client's, or the client's earlier
// session's, which the client gave up (and the server then expired); and
// then whether the latch had that node while its client was in that
// session, or took it as its own only in a later one.
func (c *latchClient) check(v fuzz.View) string {
	if c.latch == nil {
		return ""
	}
	if v.Session != 0 {
		c.sessions[v.Session] = true
	}
	if node := c.latch.path(&c.latch.ourPath); node != "" {
		if v.Session != 0 {
			c.had[nodeInSession{node, v.Session}] = true
		}
		if _, seen := c.owners[node]; !seen {
			if there, st, err := v.Read.Exists(node); err == nil && there {
				c.owners[node] = st.EphemeralOwner
			}
		}
	}
	leads, node := c.latch.leads(), c.latch.leaderNode()
	if leads && c.v.sessionErrorPolicy && !v.Paused && v.Session != 0 && v.Expired(v.Session) {
		if first := c.firstInLine(v); first != "" {
			return fmt.Sprintf("its latch says it leads through %s in session %#x, which the server has expired, while %s is first in line: under SessionConnectionStateErrorPolicy leadership lasts until LOST, and LOST has not come",
				fuzz.StableName(node), v.Session, fuzz.StableName(first))
		}
	}
	if leads && v.Disconnected > v.SessionTimeout {
		return fmt.Sprintf("its latch says it leads through %s though its connection has been down for %v, longer than its session timeout (%v): the server may have expired its session, and another may lead",
			fuzz.StableName(node), v.Disconnected.Round(time.Millisecond), v.SessionTimeout)
	}
	if !leads || node == "" || !v.Reachable || v.Gated {
		return ""
	}
	children, _, err := v.Read.Children(c.path)
	if err != nil {
		return ""
	}
	line := sortLatchChildren(children)
	name := node[strings.LastIndexByte(node, '/')+1:]
	if len(line) > 0 && line[0] == name {
		return ""
	}
	says := fmt.Sprintf("its latch says it leads through %s, in session %#x, reaching the server", fuzz.StableName(node), v.Session)
	if slices.Contains(line, name) {
		return fmt.Sprintf("%s, but the node is not first in line: %s is", says, fuzz.StableName(line[0]))
	}
	first := "no node is"
	if len(line) > 0 {
		first = fuzz.StableName(line[0]) + " is"
	}
	return fmt.Sprintf("%s, but the server has deleted the node (%s first in line): %s", says, first, c.whose(node, v))
}

// firstInLine is the node first in the latch's line, as the server lists
// it now: another candidate's, whose watch has told it that it leads. ""
// when the line is empty, or cannot be listed.
func (c *latchClient) firstInLine(v fuzz.View) string {
	children, _, err := v.Read.Children(c.path)
	if line := sortLatchChildren(children); err == nil && len(line) > 0 {
		return line[0]
	}
	return ""
}

// whose tells whose the latch's node was, as the check saw it while it
// was there.
func (c *latchClient) whose(node string, v fuzz.View) string {
	owner, seen := c.owners[node]
	switch {
	case !seen:
		return "the check did not see its owner while it was there"
	case owner == v.Session:
		return "it was its session's own"
	case !c.sessions[owner]:
		return fmt.Sprintf("it was session %#x's, another client's", owner)
	}
	gone := "which its client gave up"
	if v.Expired(owner) {
		gone += " and the server then expired"
	}
	if c.had[nodeInSession{node, owner}] {
		return fmt.Sprintf("it was made by the client's earlier session %#x, %s; the latch had the node while the client was in that session, and kept it in the next", owner, gone)
	}
	return fmt.Sprintf("it was made by the client's earlier session %#x, %s; the latch never had the node while the client was in that session, and took it as its own in a later one", owner, gone)
}
