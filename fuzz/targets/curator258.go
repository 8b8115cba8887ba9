package targets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// CURATOR-258: Curator's PersistentEphemeralNode (curator-recipes,
// nodes/PersistentEphemeralNode.java, Curator 2.9.0, before commit
// cdb3a803 of 2.9.1), ported in its EPHEMERAL mode, the node a group
// member keeps while it runs.

func curator258() KnownBug {
	return KnownBug{
		Name:   "CURATOR-258",
		Title:  "PersistentEphemeralNode stops watching after first WatchedEvent",
		Recipe: "PersistentEphemeralNode, Curator's group-membership node (curator-recipes 2.9.0)",
		Mechanism: "PersistentEphemeralNode's watcher recreates the node on NodeDeleted and ignores every other event, though each event ends the watch. " +
			"A member restarted before its old session expired finds its node still there, sets its data on it, and hears its own NodeDataChanged: the watch is spent, and when the old session expires and the node goes, nothing recreates it.",
		Schedule:  "a member's process crashes and restarts with a new session before the old session expires (a restart quicker than the session timeout); the old session then expires",
		Symptom:   "a running member is missing from the group for good, though its PersistentEphemeralNode is started and connected",
		Fixed:     "fixed in Curator 2.9.1 (commit cdb3a803, merged 2015-10-11): the watcher sets its watch again on NodeDataChanged",
		Detectors: []fuzz.Detector{fuzz.StateReport},
		Mark:      "has been gone for",
		Target:    GroupMembership(newCuratorPEN),
		// The bug needs a crash and nothing else; the other faults only
		// make its schedule rarer.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.Crash)...)},
	}
}

// Member is a group member's node as its process keeps it: Start makes
// it and keeps it there for as long as the member runs, whatever happens
// to the session, and returns once it was first made (or ctx ends); Close
// deletes it.
type Member interface {
	Start(ctx context.Context) error
	Close() error
}

// NewMember makes the Member one process uses, on its connection, for
// the node at path with data.
type NewMember func(ctx context.Context, client fuzz.Client, path string, data []byte) Member

// memberGrace is how long a member's node may be missing, its client
// reaching the server and none of its requests held at the gate, before the
// membership's check says the member is gone: time for a keeper to hear
// the deletion and make the node again.
const memberGrace = 5 * time.Second

// GroupMembership is the Target of a group membership, described as a
// Recipe: each client is a member whose node is
// /groups/members/member-<client>, the same for every process that takes
// its place after a crash, as a service restarted on the same host. A
// client Joins (starts its Member) and stays a member for as long as its
// process runs, as a service in a registry does; its Stop leaves (closes
// it). The check (StateReport), reading the server, holds a member
// that has joined to its node: while it reaches the server, between
// calls, with nothing of its held at the gate, the node may not stay
// missing for memberGrace.
func GroupMembership(newMember NewMember) fuzz.Target {
	return fuzz.Recipe[*memberClient]{
		Name: "group",
		Path: "/groups/members",
		New: func(ctx context.Context, client fuzz.Client, dir string) *memberClient {
			p := fmt.Sprintf("%s/member-%d", dir, client.N)
			return &memberClient{member: newMember(ctx, client, p, []byte(p)), path: p}
		},
		Ops: []fuzz.Op[*memberClient]{
			{Name: "Join", Enabled: func(c *memberClient) bool { return !c.joined }, Call: (*memberClient).join},
		},
		Stop: func(c *memberClient, ctx context.Context, call *fuzz.Call) error {
			if !c.joined {
				return nil
			}
			return c.leave(ctx, call)
		},
		Check:      (*memberClient).check,
		CheckReads: true,
	}
}

// memberClient is one process of the group's Recipe.
type memberClient struct {
	member Member
	path   string
	joined bool
	// missingSince is when the check first saw the node missing, with
	// the member connected; zero while it is there.
	missingSince time.Time
}

func (c *memberClient) join(ctx context.Context, _ *fuzz.Call) error {
	c.joined = true
	return c.member.Start(ctx)
}

func (c *memberClient) leave(_ context.Context, _ *fuzz.Call) error {
	c.joined = false
	return c.member.Close()
}

func (c *memberClient) check(v fuzz.View) string {
	if !c.joined || v.Call != "" || !v.Reachable || v.Gated {
		c.missingSince = time.Time{}
		return ""
	}
	exists, _, err := v.Read.Exists(c.path)
	if err != nil || exists {
		c.missingSince = time.Time{}
		return ""
	}
	now := time.Now()
	if c.missingSince.IsZero() {
		c.missingSince = now
	}
	if gone := now.Sub(c.missingSince); gone > memberGrace {
		return fmt.Sprintf("it is a member, reaching the server, and its node %s has been gone for %v", c.path, gone.Round(time.Millisecond))
	}
	return ""
}

// curatorPEN is PersistentEphemeralNode in Mode.EPHEMERAL. Its state is
// Java's atomics, touched on the event thread and by the member's calls,
// which the harness never runs at once with the event thread's work of
// the same process: the recipe's own concurrency is the event thread's.
type curatorPEN struct {
	f        *curatorFramework
	basePath string
	data     []byte
	nodePath string
	started  bool
	closed   bool
	created  chan struct{} // initialCreateLatch
}

// curatorMember is a group member on Curator: one CuratorFramework for
// the process, and a new PersistentEphemeralNode for each Start, as
// Curator asks (a node once closed cannot start again).
type curatorMember struct {
	f        *curatorFramework
	basePath string
	data     []byte
	node     *curatorPEN
}

func newCuratorPEN(ctx context.Context, client fuzz.Client, basePath string, data []byte) Member {
	return &curatorMember{f: newCuratorFramework(ctx, client.Conn, client.Events), basePath: basePath, data: data}
}

func (m *curatorMember) Start(ctx context.Context) error {
	m.node = &curatorPEN{f: m.f, basePath: m.basePath, data: m.data, created: make(chan struct{})}
	return m.node.start(ctx)
}

func (m *curatorMember) Close() error { return m.node.close() }

// start is start() and waitForInitialCreate until ctx ends.
func (n *curatorPEN) start(ctx context.Context) error {
	done := make(chan struct{})
	n.f.run(func() {
		n.started = true
		n.f.addListener(func(s curatorState) {
			if s == curatorReconnected {
				n.createNode()
			}
		})
		n.createNode()
		close(done)
	})
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-n.created:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *curatorPEN) active() bool { return n.started && !n.closed }

func (n *curatorPEN) initialisationComplete() {
	select {
	case <-n.created:
	default:
		close(n.created)
	}
}

// createNode makes the node in the background; its callback is
// backgroundCallback.
func (n *curatorPEN) createNode() {
	if !n.active() {
		return
	}
	createPath := n.basePath
	if n.nodePath != "" {
		createPath = n.nodePath
	}
	var made string
	n.f.background(func() (err error) {
		made, err = n.createWithParents(createPath)
		return err
	}, func(err error) {
		var p string
		nodeExists := false
		switch {
		case errors.Is(err, zk.ErrNodeExists):
			p, nodeExists = createPath, true
		case err == nil:
			p = made
		case errors.Is(err, zk.ErrNoAuth):
			return
		}
		if p == "" {
			n.createNode()
			return
		}
		n.nodePath = p
		n.watchNode()
		if nodeExists {
			n.f.background(func() error {
				_, err := n.f.conn.Set(n.nodePath, n.data, -1)
				return err
			}, func(err error) {
				if err == nil {
					n.initialisationComplete()
				}
			})
		} else {
			n.initialisationComplete()
		}
	})
}

// createWithParents is create().creatingParentContainersIfNeeded().
func (n *curatorPEN) createWithParents(p string) (string, error) {
	made, err := n.f.conn.Create(p, n.data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoNode) {
		return made, err
	}
	for _, dir := range []string{path.Dir(path.Dir(p)), path.Dir(p)} {
		if _, err := n.f.conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", err
		}
	}
	return n.f.conn.Create(p, n.data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
}

// watchNode is checkExists().usingWatcher(watcher).inBackground(
// checkExistsCallback): a node found missing is made again.
func (n *curatorPEN) watchNode() {
	if !n.active() || n.nodePath == "" {
		return
	}
	p := n.nodePath
	var exists bool
	n.f.background(func() error {
		ok, _, ch, err := n.f.conn.ExistsW(p)
		if err == nil {
			exists = ok
			n.f.watch(ch, n.watcher)
		}
		return err
	}, func(err error) {
		if err == nil && !exists {
			n.createNode()
		}
	})
}

// watcher is the recipe's Watcher as 2.9.0 had it: NodeDeleted makes the
// node again; any other event, its own NodeDataChanged among them, is
// dropped, and with it the watch.
func (n *curatorPEN) watcher(ev zk.Event) {
	if ev.Type == zk.EventNodeDeleted {
		n.createNode()
	}
}

// close is close(): the node is deleted, guaranteed (retried until it
// goes, as Curator's guaranteed delete does in the background).
func (n *curatorPEN) close() error {
	done := make(chan string, 1)
	n.f.run(func() {
		n.closed = true
		p := n.nodePath
		n.nodePath = ""
		done <- p
	})
	var p string
	select {
	case p = <-done:
	case <-n.f.ctx.Done():
	}
	if p == "" {
		return nil
	}
	err := n.f.retry(func() error { return n.f.conn.Delete(p, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
