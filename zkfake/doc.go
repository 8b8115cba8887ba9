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
// Faults come on demand: Server.Expire, Conn.Partition and Conn.Heal,
// Server.LoseReplies and Server.LoseRandomReplies, Conn.Crash, Conn.Pause
// and Conn.Resume, and, with WithEnsemble, lagging followers
// (Server.SetLagging). Each shows the client what go-zookeeper shows it: the
// same session events, errors, re-armed watches and new session ids.
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
