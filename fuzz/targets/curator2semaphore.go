package targets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file is Curator 2.x's InterProcessSemaphoreV2 (curator-recipes,
// locks/InterProcessSemaphoreV2.java) but for internalAcquire1Lease, the
// method its bugs CURATOR-315 and CURATOR-335 live in, which each entry's
// file has as it was when it had its bug (curator315.go, curator335.go):
// the rest of the class is the same in both versions. Left out: the
// SharedCountReader, node data, getParticipantNodes.

// curator2AcquireResult is InternalAcquireResult.
type curator2AcquireResult int

const (
	curator2Continue curator2AcquireResult = iota
	curator2ReturnNull
	curator2RetryDueToMissingNode
)

// curator2Acquire1 is a version of internalAcquire1Lease.
type curator2Acquire1 func(s *curator2SemaphoreV2, ctx context.Context, builder *[]*curator2Lease, start time.Time, hasWait bool, wait time.Duration) (curator2AcquireResult, error)

// curator2SemaphoreV2 is InterProcessSemaphoreV2: an InterProcessMutex on
// "<path>/locks" that acquirers take in turn, and the leases, protected
// ephemeral sequential nodes "_c_<id>-lease-<seq>" under "<path>/leases";
// an acquirer holding the mutex creates its lease node and waits, with a
// watch on the leases' children, until at most maxLeases are there.
type curator2SemaphoreV2 struct {
	client     *curator2Client
	lock       *curator2Mutex
	leasesPath string
	maxLeases  int
	mon        *curator2Monitor // the semaphore's own monitor
	acquire1   curator2Acquire1
}

// newCurator2SemaphoreV2 returns the NewLeaser of InterProcessSemaphoreV2
// with the given internalAcquire1Lease, for the Semaphore target.
func newCurator2SemaphoreV2(acquire1 curator2Acquire1) NewLeaser {
	return func(conn zktest.Conn, path string, max int) Leaser {
		c := newCurator2Client(conn)
		return &curator2SemaphoreV2{
			client:     c,
			lock:       newCurator2Mutex(c, path+"/locks"),
			leasesPath: path + "/leases",
			maxLeases:  max,
			mon:        newCurator2Monitor(),
			acquire1:   acquire1,
		}
	}
}

// curator2Margin is how much sooner than the call's deadline a timed
// acquire gives up: the deadline is acquire(time, unit)'s time, and the
// semaphore's own timeout must come first, not an interrupt.
const curator2Margin = 10 * time.Millisecond

// Acquire is acquire(), or, for a call with a deadline,
// acquire(time, MILLISECONDS): the first of the leases acquire(qty, ...)
// returns (leases.iterator().next()).
func (s *curator2SemaphoreV2) Acquire(ctx context.Context) (Lease, error) {
	wait := time.Duration(0)
	d, timed := ctx.Deadline()
	if timed {
		wait = time.Until(d) - curator2Margin
	}
	leases, err := s.acquire(ctx, timed, wait)
	switch {
	case err != nil:
		return nil, err
	case leases == nil:
		return nil, fmt.Errorf("acquire(%v, MILLISECONDS) returned null: no lease in time", wait.Milliseconds())
	}
	return leases[0], nil
}

// TryAcquire is acquire(0, MILLISECONDS): a lease if one is free now
// (InterProcessSemaphoreV2 has no tryAcquire).
func (s *curator2SemaphoreV2) TryAcquire(ctx context.Context) (Lease, bool, error) {
	leases, err := s.acquire(ctx, true, 0)
	if err != nil || leases == nil {
		return nil, false, err
	}
	return leases[0], true, nil
}

// acquire is acquire(1, time, unit): internalAcquire1Lease until it
// continues, gives up, or finds its node missing more often than the
// retry policy allows; the leases gathered so far are returned to the
// semaphore unless it succeeds (the finally block).
func (s *curator2SemaphoreV2) acquire(ctx context.Context, hasWait bool, wait time.Duration) (leases []*curator2Lease, err error) {
	start := time.Now()
	var builder []*curator2Lease
	success := false
	defer func() {
		if !success {
			s.returnAll(ctx, builder)
		}
	}()
	for retryCount := 0; ; {
		result, err := s.acquire1(s, ctx, &builder, start, hasWait, wait)
		if err != nil {
			return nil, err
		}
		switch result {
		case curator2Continue:
			success = true
			return builder, nil
		case curator2ReturnNull:
			return nil, nil
		}
		// RETRY_DUE_TO_MISSING_NODE: "this can happen when the session
		// expires, etc. So, if the retry allows, just try it all again"
		if !curator2AllowRetry(ctx, retryCount) {
			return nil, fmt.Errorf("Sequential path not found - possible session loss: %w", zk.ErrNoNode)
		}
		retryCount++
	}
}

// getThisWait is getThisWaitMs.
func getThisWait(start time.Time, wait time.Duration) time.Duration {
	return wait - time.Since(start)
}

// acquireLock takes the semaphore's mutex, with or without a wait; false
// if the wait ran out.
func (s *curator2SemaphoreV2) acquireLock(ctx context.Context, start time.Time, hasWait bool, wait time.Duration) (bool, error) {
	if hasWait {
		return s.lock.acquire(ctx, true, getThisWait(start, wait))
	}
	return s.lock.acquire(ctx, false, 0)
}

// leaseChildren is client.getChildren().usingWatcher(watcher)
// .forPath(leasesPath); the watcher is notifyFromWatcher.
func (s *curator2SemaphoreV2) leaseChildren(ctx context.Context) ([]string, error) {
	var children []string
	err := s.client.callWithRetry(ctx, func() error {
		names, _, ch, err := s.client.conn.ChildrenW(s.leasesPath)
		if err == nil {
			children = names
			s.mon.watch(ch)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("getChildren %s: %w", s.leasesPath, err)
	}
	return children, nil
}

// returnAll and returnLease close leases quietly (CloseableUtils.closeQuietly).
func (s *curator2SemaphoreV2) returnAll(ctx context.Context, leases []*curator2Lease) {
	for _, l := range leases {
		s.returnLease(ctx, l)
	}
}

func (s *curator2SemaphoreV2) returnLease(ctx context.Context, l *curator2Lease) {
	_ = l.close(ctx)
}

// curator2Lease is the Lease makeLease returns: its node's path, closed by
// a guaranteed delete.
type curator2Lease struct {
	client *curator2Client
	path   string
}

func (s *curator2SemaphoreV2) makeLease(path string) *curator2Lease {
	return &curator2Lease{client: s.client, path: path}
}

// close is Lease.close(): a guaranteed delete; a NoNode is only logged
// ("Lease already released"), anything else thrown as an IOException.
func (l *curator2Lease) close(ctx context.Context) error {
	err := l.client.deleteGuaranteed(ctx, l.path)
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return fmt.Errorf("java.io.IOException: %w", err)
}

// Release is close().
func (l *curator2Lease) Release() error { return l.close(context.Background()) }

// Node is the lease's node (Lease.getNodeName, since CURATOR-279).
func (l *curator2Lease) Node() string { return l.path }

// Held is false: a Curator Lease says nothing of whether it still holds
// (it has no such method), so it claims nothing the check could hold it
// to.
func (l *curator2Lease) Held() bool { return false }
