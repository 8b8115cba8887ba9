// Package zkfake is an in-memory ZooKeeper 3.8 for tests: a znode tree with
// sessions, ephemeral, sequential, container and TTL nodes, one-shot
// watches, multi, ACLs and stat fields that follow the real server, behind a
// Conn with exactly the method set of go-zookeeper's *zk.Conn (v1.0.4) and
// its own types and error values.
//
// Beside that method set a Conn has extras: ZooKeeper 3.8's requests that
// go-zookeeper cannot send — persistent and recursive watches (AddWatch),
// RemoveWatches, CheckWatches, MultiRead, GetEphemerals,
// GetAllChildrenNumber, WhoAmI and Create2 — with the server's semantics
// and errors, quirks included, and ErrNoWatcher for the error go-zookeeper
// has no value for. The served fake (zkfake/wire) answers them from the
// same core.
//
// A test makes a Server, connects sessions to it, and hands the Conns to
// the code under test where production hands it the *zk.Conn from
// zk.Connect. Run inside a testing/synctest bubble, the fake's timers —
// session expiry, reconnect rounds, TTL and container reaping — run on
// virtual time, so a 30-second session timeout passes at once.
//
// # Faults
//
// Faults come on demand, and each shows the client what go-zookeeper shows
// it: the same session events, errors, re-armed watches and new session
// ids.
//
//   - Session expiry, server side: Server.Expire(sessionID). Ephemerals
//     go, watchers are told; the client sees StateExpired, its watches end
//     with zk.ErrSessionExpired, and the same *Conn carries on with a new
//     session id.
//   - Partition: Conn.Partition and Conn.Heal. Nothing happens until two
//     thirds of the timeout (go-zookeeper's read deadline), then
//     StateDisconnected; in-flight calls fail with zk.ErrConnectionClosed,
//     queued ones with zk.ErrNoServer each second. Healed within the
//     timeout the session resumes and missed watch events fire
//     (setWatches); healed later it has expired.
//   - Lost request or reply: Server.LoseReplies(ReplyLoss{Op, PathPrefix,
//     SessionID, Nth, Applied, StopMembers}) and
//     Server.LoseRandomReplies(rate). The call fails with
//     zk.ErrConnectionClosed; with Applied the write happened anyway (a
//     "ghost" node), and StopMembers takes members down with the reply
//     (the quorum lost as the write commits).
//   - Client crash: Conn.Crash. Blocked and later calls return
//     zk.ErrConnectionClosed, so the client's goroutines end; the server
//     expires the session after the timeout.
//   - Process pause: Conn.Pause and Conn.Resume. Nothing happens while
//     paused (no pings, no timers); the server expires the session, and on
//     resume the client learns it.
//   - Lagging followers: WithEnsemble(3), WithMember(i),
//     Server.SetLagging(i, true), Server.CatchUp(i). Reads from a lagging
//     member are stale and its watches fire late, but never older than the
//     last reply the session read (its own writes included, unless their
//     reply was lost) nor than the session's creation (a member answers a
//     new session once it has applied its createSession, even after an
//     expiry made the client forget every zxid); Sync catches it up.
//   - Member stopped and started: Server.StopMember(i),
//     Server.StartMember(i) (with WithEnsemble). The member's clients
//     reconnect to another member with their sessions (those connected
//     WithMember(i) wait for it); without a majority nobody is served (a
//     client back from a pause or a partition dials again; a new one gets
//     its session once the quorum is back) and no session expires.
//   - Reconnect onto another member: Conn.ReconnectTo(i) (with
//     WithEnsemble). The client's next reconnect, whatever causes it, goes
//     to member i, which first catches up with the last zxid the client
//     read, as a server refuses a client that has seen more than it has; a
//     write whose reply was lost is not among them, so it may be missing
//     there until the member catches up.
//
// With WithSeed(n) every choice the server draws (session ids,
// protected-create GUIDs, random losses, and with WithShuffledChildren the
// order of every listing) is seeded, and under synctest the same scenario
// gives the same event log (Server.Log) byte for byte, also when the
// client draws the GUIDs in its node names from crypto/rand: listings are
// shuffled, and an ended session's ephemerals deleted, in the order the
// nodes were made, and re-armed watches go by their paths with the GUIDs
// left out. Programs that cannot run in a bubble can use
// WithManualClock(start) and Server.FastForward(d).
//
// To look inside: Server.Dump, Server.Sessions, Server.Ephemerals,
// Server.WatchCount, Server.TotalWatches, Server.DeliveredEvents and
// Server.Log.
//
// To reach a state a real server takes too long to reach,
// Server.SetSequence(path, n) makes the next sequential child of path take
// the number n. ZooKeeper's counter is a signed 32-bit integer printed as
// %010d, so SetSequence(dir, math.MaxInt32-1) and three creates give
// x2147483646, x2147483647 and x-2147483648, which sorts first.
// WithSequenceStart(n) starts the counter of every node created afterwards
// at n, for a recipe whose directories a test cannot name in advance.
//
// # ZooKeeper 3.8's requests go-zookeeper cannot send
//
// The extras answer with ZooKeeper 3.8.0's semantics and errors: AddWatch
// (persistent and recursive watches, on a channel that delivers every event
// in order), RemoveWatches and CheckWatches (ErrNoWatcher; removed
// watches' channels end with the DataWatchRemoved, ChildWatchRemoved or
// PersistentWatchRemoved event the Java client raises itself), MultiRead,
// GetEphemerals, GetAllChildrenNumber, WhoAmI and Create2 (the stat with
// the create). Code that takes a *zk.Conn cannot call them; a test that
// holds the *Conn can, and zkfake/wire serves them to any client. The
// server's surprises are kept, each checked against a real ensemble by the
// conformance suite's ops and persistent scenarios: CheckWatches finds any
// session's watch on the path, not only the caller's; a GetW on a path
// watched persistently makes the data half of that watch one-shot again; a
// reconnect re-arms persistent watches without telling what changed
// meanwhile.
//
// Code that takes a *zk.Conn itself — go-zookeeper's own zk.Lock, and much
// production code — cannot be handed a *Conn; wire.ServePipe serves the
// fake to the real client over in-memory pipes instead (see zkfake/wire).
//
// # ZooKeeper's own nodes
//
// The tree starts as a 3.8 server's does: /, /zookeeper, /zookeeper/quota
// and /zookeeper/config, with empty (not nil) data. A server made
// WithEnsemble or WithQuorum holds in /zookeeper/config the configuration
// text its members would (the server lines and "version=0" of a static
// zoo.cfg, reconfigEnabled=false), with the stat and ACL the real members
// give it; a standalone server leaves it empty, as ZooKeeper's does.
// WithQuorum (with ParseZooCfg) models a particular ensemble's lines;
// WithEnsemble alone lists the fake's own address (WithAddr) as every
// member's client address, so that a client that reconnects to what it
// reads there (Curator's EnsembleTracker) stays with the fake (quorum.go).
//
// # Design
//
// The design follows etcd's raft: the tree, the session table and the watch
// table are plain data changed by pure functions (state.go, tree.go,
// watch.go); Server and Conn add locking, timers, channels and blocking on
// top. A Conn is four files: the connection's state machine (conn.go),
// go-zookeeper's client-side behaviour (client.go), the *zk.Conn method
// set (api.go) and the extras (extras.go). Server.Log is the ground truth of what happened, in order:
// every request with its zxid, every session change, every watch delivered
// and every fault injected. With WithSeed, the same scenario gives the same
// log byte for byte.
//
// The conformance suite (zkfake/zktest) runs the same scenarios against the
// fake (zkfake/zktest/fake) and against a real ensemble
// (zkfake/zktest/ensemble). This package imports neither: a program that
// uses the fake links no test machinery.
package zkfake
