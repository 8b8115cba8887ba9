// Package fakelog checks histories recorded against the in-memory ZooKeeper
// (zkfake) with the fake's own event log as ground truth, and records such
// histories.
//
// Two pieces work together:
//
//   - [GroundTruth] reads a fake server's event log ([zkfake.Server.Log])
//     and settles the operations whose outcome their client never learned
//     — a lost request, a lost reply, a call cut off by a partition — and
//     the session expiries a history observed: applied (at the instant the
//     server applied it, with the answer it gave), never applied, or
//     undetermined when the log cannot tell. Settled histories check in
//     milliseconds where unsettled ones may not finish at all.
//   - [Record] runs a few clients, each in its own session, doing random
//     znode operations (creates, sequential and ephemeral ones included,
//     versioned sets and deletes, gets, exists, children, syncs) on a few
//     paths under a base znode, records them with a
//     [linearizability.Recorder], and injects partitions, session expiries
//     and crashes through [zktest.Faults]. It runs against anything that hands out
//     a [zktest.Conn]: the fake, or a real ensemble.
//
// Settling is what makes fake-mode checks fast: a 1,000-op history with 23
// unknown outcomes took 15.3 s to check unsettled and 10 ms settled
// (go test ./linearizability/fakelog -run '^$' -bench CheckRecorded).
//
// In fake mode, run [Record] inside a testing/synctest bubble, so that
// session timeouts and reconnect rounds pass in virtual time; with
// [Config.Lockstep] it is also deterministic: the same seed gives the same
// history. Check the history outside the bubble: porcupine's timeout is a
// timer, and virtual time does not advance while the checker computes.
package fakelog
