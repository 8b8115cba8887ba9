package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// firstBackoff and maxBackoff bound the pause between attempts while the
	// connection is down. go-zookeeper queues a request made while it is
	// reconnecting, so the pause only keeps a closed connection from spinning.
	firstBackoff = 10 * time.Millisecond
	maxBackoff   = 500 * time.Millisecond
)

// IsConnectionLoss reports whether err is go-zookeeper's sign of a lost
// connection — zk.ErrConnectionClosed or zk.ErrNoServer — after which the
// request may or may not have been applied: its outcome is unknown, and only
// the server can tell. zk.ErrClosing (the Conn was closed by its owner) is
// final and is not a connection loss.
func IsConnectionLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// retryLoss runs op until it returns anything but a connection loss, ctx is
// done, or connection losses have gone on for longer than limit (if limit is
// positive). op must be safe to repeat after a loss; callers that create or
// delete check the outcome themselves. A Conn that turns out to be closed
// (see closeEvidence) ends the retries at once with errConnClosed.
func (m *Mutex) retryLoss(ctx context.Context, limit time.Duration, op func() error) error {
	return retryWhile(ctx, m.conn, &m.closed, limit, IsConnectionLoss, op)
}

// retryWhile is retryLoss for any Conn: it runs op until op returns an error
// that transient does not accept (or nil), ctx is done, or transient errors
// have gone on for longer than limit (if limit is positive). closed records
// that the Conn is known to be closed (see closeEvidence); once it is, retryWhile
// returns errConnClosed at once. The Mutex retries only connection loss; the
// election's reads retry an expired session too, since go-zookeeper carries
// on with a new one and a read is simply repeated there.
func retryWhile(ctx context.Context, conn Conn, closed *atomic.Bool, limit time.Duration, transient func(error) bool, op func() error) error {
	var lossSince time.Time
	backoff := firstBackoff
	var evidence closeEvidence
	for {
		if closed.Load() {
			return errConnClosed
		}
		err := op()
		if !transient(err) && !errors.Is(err, zk.ErrClosing) {
			return err
		}
		if evidence.failed(err, closed); closed.Load() {
			return errConnClosed
		}
		now := time.Now()
		if lossSince.IsZero() {
			lossSince = now
		}
		if limit > 0 && now.Sub(lossSince) >= limit {
			return err
		}
		if ctxErr := pause(ctx, backoff); ctxErr != nil {
			return fmt.Errorf("%w (while the connection was lost: %w)", ctxErr, err)
		}
		evidence.paused(conn, closed)
		backoff = min(2*backoff, maxBackoff)
	}
}

// errConnClosed is what the Mutex's calls return once it knows its Conn was
// closed: nothing sent on that Conn can succeed any more.
var errConnClosed = fmt.Errorf("recipe: the Conn was closed: %w", zk.ErrClosing)

// pause waits for d or until ctx is done, whichever comes first.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
	// Both may be ready at once: ctx wins, whichever select picked.
	return ctx.Err()
}

// callBounded runs op but stops waiting for it when ctx is done, returning
// ctx's error and abandoned = true. A go-zookeeper request made while the
// client cannot reach a server waits in its queue until a connection comes
// back or the client has tried every server once (then it fails with
// zk.ErrNoServer: about a second against a partitioned loopback ensemble,
// as long as the connect timeouts allow when a server accepts but does not
// answer); callBounded keeps such a wait within the caller's bound. The
// abandoned request stays with the client, which may still send it: its
// goroutine ends, and its result is dropped, when the client answers or
// fails it.
func callBounded(ctx context.Context, op func() error) (err error, abandoned bool) {
	if ctx.Done() == nil {
		return op(), false
	}
	if err := ctx.Err(); err != nil {
		return err, false
	}
	result := make(chan error, 1)
	go func() {
		growStack()
		result <- op()
	}()
	return awaitBounded(ctx, result)
}

// deleteBounded is callBounded(ctx, func() error { return conn.Delete(node,
// -1) }), in fewer allocations: every release of a lock runs it. Unless
// reuse is nil, the result comes on *reuse, a channel of the caller's
// that no abandoned Delete can still answer on (made if nil, and dropped
// when this Delete is abandoned), in place of a new one. A Delete
// abandoned when ctx ended returns ctx's error and the channel its answer
// will come on: whether it deleted the node is known only then.
func deleteBounded(ctx context.Context, conn Conn, node string, reuse *chan error) (err error, abandoned <-chan error) {
	if ctx.Done() == nil {
		return conn.Delete(node, -1), nil
	}
	if err := ctx.Err(); err != nil {
		return err, nil
	}
	var result chan error
	switch {
	case reuse == nil:
		result = make(chan error, 1)
	case *reuse == nil:
		*reuse = make(chan error, 1)
		result = *reuse
	default:
		result = *reuse
	}
	go sendDelete(conn, node, result)
	err, gaveUp := awaitBounded(ctx, result)
	if !gaveUp {
		return err, nil
	}
	if reuse != nil {
		*reuse = nil // the abandoned Delete answers on it later
	}
	return err, result
}

func sendDelete(conn Conn, node string, result chan<- error) {
	growStack()
	result <- conn.Delete(node, -1)
}

// awaitBounded waits for the result of callBounded's goroutine, or for ctx
// to be done.
func awaitBounded(ctx context.Context, result <-chan error) (err error, abandoned bool) {
	select {
	case err := <-result:
		return err, false
	case <-ctx.Done():
		// Both may be ready at once: the answer wins, whichever select
		// picked.
		select {
		case err := <-result:
			return err, false
		default:
			return ctx.Err(), true
		}
	}
}

// requestStack is the stack that growStack gives a goroutine: enough for a
// request to the fake, the deepest Conn the recipes are run on, with room
// to spare. A request to go-zookeeper's client needs far less.
const requestStack = 8 << 10

// growStack grows the calling goroutine's stack to requestStack while the
// goroutine is still shallow. A goroutine starts with a small stack and
// grows it by copying it to a larger one, which walks every frame on it:
// callBounded's goroutine, made for every request it bounds (every
// Unlock's Delete), used to grow it deep inside a request to the fake, and
// that was more than a quarter of the CPU an uncontended Lock and Unlock
// took on the fake. Growing it here copies two frames once: a frame of
// half requestStack makes the runtime grow the stack to requestStack in
// one step.
//
//go:noinline
func growStack() {
	var frame [requestStack / 2]byte
	keep(frame[:])
}

// keep keeps the frame of growStack from being optimized away.
//
//go:noinline
func keep([]byte) {}
