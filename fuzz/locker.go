package fuzz

import (
	"context"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file is the lock loop's side of the API: the Locker a user hands
// the harness, and its optional behaviours. A client asks its locker only
// for what the locker offers: the Locker interface stays small, and a lock
// that has no TryLock, say, is simply never asked for one.

// Locker is the lock under test: what a simulated client calls in its loop
// of Lock, critical section, Unlock. Lock must return once ctx is done.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock() error
}

// NewLocker makes the Locker one client uses, on that client's connection,
// for the lock whose nodes live under path. It is called on the client's
// own goroutine, so it may talk to the server, but most lockers (like
// recipe.NewMutex) wait for Lock to do so.
type NewLocker func(conn zktest.Conn, path string) Locker

// Fencer is a Locker that hands out fencing tokens, as recipe.Mutex does.
// When a case checks fencing, a holder writes to the protected resource with
// Token; the resource refuses a token older than the newest it has
// accepted, so a holder whose session expired behind its back cannot
// overwrite a newer holder's work. Token returns 0 when the locker knows it
// does not hold the lock; the client then skips its write.
type Fencer interface {
	Token() int64
}

// TryLocker is a Locker that can take the lock only if it is free now,
// without queueing: TryLock returns false when someone else holds it.
type TryLocker interface {
	TryLock(ctx context.Context) (bool, error)
}

// ContextUnlocker is a Locker whose Unlock can be bounded by a context.
// An UnlockContext that returns an error may have left the release
// pending; the client then either calls it again or, as a careless caller
// would, carries on and calls Lock.
type ContextUnlocker interface {
	UnlockContext(ctx context.Context) error
}

// Reentrant is a Locker whose Lock, on a handle that holds the lock,
// counts up and returns at once, and whose Unlock counts down and releases
// only at zero. Reentrant reports whether it is (a wrapper may forward the
// method of a lock that is not).
type Reentrant interface {
	Reentrant() bool
}

// SharedHandle is a Locker whose one handle goroutines may share, calling
// it at the same time (recipe.Mutex is safe for concurrent use). A client
// of such a lock may call Unlock from two goroutines at once, as a program
// whose deferred Unlock races an explicit one does. SharedHandle reports
// whether it is.
type SharedHandle interface {
	SharedHandle() bool
}

// QueueReader is a Locker that can list the lock's contenders, the holder
// first (recipe.Contenders). A client whose TryLock finds the lock taken
// asks it who is ahead, as a program that logs who holds a lock does.
type QueueReader interface {
	Contenders() ([]string, error)
}

// StateReporter is a Locker that says where its hold stands, as
// recipe.Mutex does: State, and Lost, a channel closed once a hold is lost
// (and, without a hold, closed already). The harness holds what it says to
// what its calls returned and to itself: the StateReport detector.
type StateReporter interface {
	State() recipe.MutexState
	Lost() <-chan struct{}
}
