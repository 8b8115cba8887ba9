// Package linearizability checks recorded histories of ZooKeeper clients
// against sequential models, with porcupine
// (github.com/anishathalye/porcupine) as the checker.
//
// A test records what its clients did with a [Recorder]: every operation's
// call and return instants, the client, the input and the output. An
// operation whose outcome the client never learned (it crashed, or the reply
// was lost) is recorded as unknown: it keeps its call instant and never
// returns, which lets the checker decide whether it took effect. In fake mode
// the server's event log can settle such operations afterwards
// ([Recorder.Settle] with a [GroundTruth]), which keeps checking fast.
//
// Five models are provided:
//
//   - [CheckMutex] checks a lock: Acquire, TryLock and Release by sessions,
//     holds ended by session expiry, and writes to a resource the lock
//     protects, with or without fencing tokens.
//   - [CheckElection] checks a leader election: the leader is a lock
//     holder, and observers read who leads — perhaps stale, never going
//     back within a session, never seeing a leader not yet elected.
//   - [CheckRWMutex] checks a read/write lock: readers share the read
//     side, one writer at a time holds the write side and keeps readers
//     out, and writers' tokens and writes are checked as the lock's.
//   - [CheckSemaphore] checks a counting semaphore: never more than Max
//     leases held at once, each from its acquisition to its release or
//     its session's expiry.
//   - [CheckZnodes] checks create, delete, set, get, exists, children and
//     sync on a small set of znodes, with exactly ZooKeeper's promise:
//     writes are linearizable; a read may be stale, but never older than
//     what its session already wrote or saw, nor than the state when the
//     session's last sync was served.
//
// The models in more detail. CheckMutex's writes make fencing visible: a
// paused holder whose session expired and that writes afterwards is
// illegal unfenced, and legal when its stale token is refused. In
// CheckElection, Campaign, Resign and LeaderWrite are the lock's Acquire,
// Release and Write, so at most one leader at a time and tokens that grow
// with every leader; Observe may read a stale leader, but a session never
// sees an older epoch after a newer one, nor a leader not elected yet.
// CheckRWMutex allows any number of sessions on the read side or one on
// the write side, never both, not even one session on both; a refused
// acquisition claims the lock was taken at some instant of the call.
// CheckSemaphore's TryAcquire answering none free claims all Max were held
// at some instant of the call.
//
// [Check] runs a porcupine model of the caller's own over a history
// ([ElectionModel], [RWMutexModel] and [SemaphoreModel] are the package's,
// and, for recipes beyond the four, [BarrierModel], [QueueModel],
// [CounterModel] and [RegisterModel]), with the faults kept for the
// report. An operation with a nil output has an unknown outcome: it may
// take effect at any instant after its call, or never, and every model
// here accepts it so.
//
// All return a [Result] whose outcome is [Ok], [Illegal] or [Unknown] (the
// check ran out of time). [Result.WriteReport] writes porcupine's HTML
// visualization of the history, annotated with the injected faults.
//
// Timestamps come from the time package by default, so inside a
// testing/synctest bubble they are virtual. Run the checks themselves outside
// the bubble: porcupine's timeout is a timer, and virtual time does not
// advance while the checker computes.
package linearizability
