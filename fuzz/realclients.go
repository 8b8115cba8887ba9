package fuzz

import (
	"errors"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file gives a process either kind of connection: the fake's own
// (zkfake.Conn, in process), or go-zookeeper's real client over a pipe to
// the served fake (WithRealClients), with the gate at the server. The
// harness speaks to both in the one vocabulary they share.

// clientLink is what the harness does to a process's connection: the
// faults zkfake.Conn and wire.Client both offer, in the same words, and
// what it reads of the client's own state.
type clientLink interface {
	SessionID() int64
	State() zk.State
	Member() int
	ReconnectTo(i int)
	Partition()
	Heal()
	Pause()
	Resume()
	Crash()
	Close()
}

// pipeClient is a process on go-zookeeper's own client. Its Close goes in
// the background, as zk.Conn's waits up to a second for a server that
// does not answer, which the harness must not wait for in the middle of a
// step; but it is let run until it waits, so that the closes of several
// clients reach the server in the harness's order.
type pipeClient struct{ *wire.Client }

func (c pipeClient) Close() {
	go c.Client.Close()
	synctest.Wait()
}

// connect gives inc its connection: a real client over the case's pipe,
// whose requests wait at the server for the harness, or the fake's own
// Conn, whose requests wait in the gatedConn that wraps it. conn is what
// the code under test is handed.
func (h *harness) connect(inc *incarnation) (link clientLink, conn zktest.Conn, err error) {
	s := inc.slot
	if h.pipe == nil {
		c, events, err := h.srv.Connect(s.timeout, zkfake.WithEventCallback(inc.noteLink))
		if err != nil {
			return nil, nil, err
		}
		inc.gated, inc.events = newGatedConn(inc, c, newLeash(h.end)), events
		return c, inc.gated, nil
	}
	// What the step let go so far runs first, so that the new client's
	// handshake and session come alone, and at the same point in the
	// server's log, in every run.
	synctest.Wait()
	g := &gatedConn{inc: inc, leash: newLeash(h.end), atServer: true}
	// The callback may run before NewClient returns.
	var client atomic.Pointer[wire.Client]
	heard := func(ev zk.Event) {
		inc.noteLink(ev)
		if c := client.Load(); c != nil && h.sub.realOnly && ev.Type != zk.EventSession && ev.Type != zk.EventNotWatching {
			inc.noteArrived(c.SessionID(), ev.Path)
		}
	}
	c, err := h.pipe.NewClient(s.timeout,
		wire.WithGate(wire.Gate{
			Before: func(r wire.Request) any { return g.before(zktest.Request(r)) },
			After:  func(r wire.Request, b any, reply wire.Reply) { g.after(zktest.Request(r), b, zktest.Reply(reply)) },
		}),
		wire.WithConnOptions(zk.WithEventCallback(heard)))
	if err != nil {
		return nil, nil, err
	}
	client.Store(c)
	g.Conn, g.conn = c.Conn, c.Conn
	inc.gated, inc.events, inc.zk = g, c.Events, c.Conn
	// Its session is made now, before the next process's: the order of
	// session ids is the harness's, as it is in process.
	synctest.Wait()
	if h.sub.realOnly {
		return pipeClient{c}, c.Conn, nil
	}
	// Code written against zktest.Conn gets the *zk.Conn with its watch
	// events handed over by the gate, as in process: which events the
	// code takes, and when, is then the harness's to see and to order.
	// Once its process has closed the Conn, its requests, which never
	// leave go-zookeeper then, wait at the gate on this side instead, so
	// that the harness sees a loop on a closed Conn as it does in process.
	closedGate := func(req zktest.Request) any {
		if inc.closedConn.Load() {
			return g.before(req)
		}
		return nil
	}
	afterClosed := func(req zktest.Request, b any, reply zktest.Reply) {
		switch {
		case b != nil:
			g.after(req, b, reply)
		case recipe.IsConnectionLoss(reply.Err) || errors.Is(reply.Err, zk.ErrSessionExpired):
			inc.failedLocally.Store(time.Now().UnixNano())
		}
	}
	return pipeClient{c}, zktest.Wrap(c.Conn, zktest.Hooks{Before: closedGate, After: afterClosed, Events: g.forward}), nil
}

// noteArrived counts a watch event that reached a real client as taken,
// for code that takes a *zk.Conn itself (LockZK): go-zookeeper hands it to
// the watch's channel at once, and when the code reads that channel the
// harness cannot see, as it sees a gatedConn's hand-over. So the herd and
// poll detectors take an event that reached such a client for one its
// code heeds (zk.Lock waits on every watch it sets).
func (inc *incarnation) noteArrived(session int64, path string) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	inc.taken = append(inc.taken, delivery{session: session, path: path, at: time.Now()})
}
