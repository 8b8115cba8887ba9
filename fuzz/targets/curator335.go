package targets

import (
	"context"
	"path"
	"slices"
	"time"

	"github.com/zksim/zksim/fuzz"
)

// CURATOR-335: Curator's InterProcessSemaphoreV2 as it was on master from
// CURATOR-315's fix (613a51be, 2016-04-11) to this bug's (8dc0283e,
// 2016-06-02), at 5584a61c: the fix of CURATOR-315 keeps a lease out of
// the acquire's builder until it is acquired, and returns it on every
// return path but one, an exception from the getChildren that follows the
// create. Both fixes went out together in 2.11.0 and 3.2.0: the bug was in
// no release, found by Cam McKenzie's stress test before one.

func curator335() KnownBug {
	return KnownBug{
		Name:   "CURATOR-335",
		Title:  "InterProcessSemaphoreV2 can deadlock under network stress",
		Recipe: "InterProcessSemaphoreV2, Curator's counting semaphore (master at 5584a61c, 2016-06-01, between 2.10.0 and 2.11.0)",
		Mechanism: "internalAcquire1Lease creates its protected lease node and then lists the leases; when that getChildren throws (the connection lost for longer than the retry policy retries, or an interrupt while it retries), the exception leaves the method without returning the lease, which no builder holds yet. " +
			"The node lives on with the session, counted as a lease nobody will ever close: each such orphan takes one of the semaphore's leases for good.",
		Schedule:  "an acquirer's listing after its lease's create fails while the session lives on: its connection is lost (a lost request, a partition) and either the retries run out or the thread is interrupted while it retries (the shrunk story's way: the case's wind-down cancels the Acquire during the retry's sleep)",
		Symptom:   "Acquire fails once; the lease node stays, ephemeral, as long as the session; once as many orphans as leases are left, every acquire waits for ever",
		Fixed:     "fixed before any release, in 2.11.0 and 3.2.0 (8dc0283e, apache/curator#155): a failed getChildren returns the lease before it rethrows",
		Detectors: []fuzz.Detector{fuzz.Leak, fuzz.Liveness},
		Mark:      "Acquire fails: getChildren " + semaphoreDir + "/" + semaphoreName + "/leases",
		Target:    Semaphore(newCurator2SemaphoreV2(acquire1Lease5584a61c)),
		// The bug needs the connection lost, with the session living
		// on, for longer than the retries last: lost requests,
		// partitions and quorum losses are drawn alone (with every fault
		// drawn, a seed of twenty missed it within 2,000 cases). Among
		// the rest, a cancelled Acquire, or one whose deadline interrupts
		// its wait, leaves its lease behind too, through the same missing
		// return on an InterruptedException (CURATOR-462, fixed in 2.13.0
		// and 4.0.2): calls are not cancelled, and a timed Acquire's own
		// timeout comes before its deadline (curator2Margin). A new
		// session on a lagging follower lets a protected create miss its
		// own node and make a second, and a lost reply whose create a
		// lagging follower has not applied does the same.
		// Lease.close takes a NoNode for a release ("Lease already
		// released"), so a lease gone with its session is released
		// without a word, which the model finds: a trait of every
		// version, not this bug.
		// A timed acquire of the inner mutex that gives up leaves its
		// getData watch armed (Curator 2.x removes no watcher; 3.0's
		// WatcherRemoveCuratorFramework does), so the client's next wait
		// is woken by the old watch too: a herd by the harness's rule.
		// The inner mutex sorts its nodes by the text after "lock-", so
		// past the int32 wrap its queue is out of order (two waiters
		// watch the same node: a herd): a directory near the wrap is
		// left out.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.LostRequest, fuzz.Partition, fuzz.QuorumLoss)...), fuzz.WithoutDetectors(fuzz.Model, fuzz.Herd), fuzz.WithoutSequenceWrap()},
	}
}

// acquire1Lease5584a61c is internalAcquire1Lease at 5584a61c.
func acquire1Lease5584a61c(s *curator2SemaphoreV2, ctx context.Context, builder *[]*curator2Lease, start time.Time, hasWait bool, wait time.Duration) (result curator2AcquireResult, err error) {
	if !s.client.started() {
		return curator2ReturnNull, nil
	}
	ok, err := s.acquireLock(ctx, start, hasWait, wait)
	if err != nil || !ok {
		return curator2ReturnNull, err
	}
	var lease *curator2Lease
	defer func() {
		// finally { lock.release(); }: its exception, if any, replaces
		// the try's outcome.
		if rerr := s.lock.release(ctx); rerr != nil {
			result, err = curator2ReturnNull, rerr
		}
		if err == nil && result == curator2Continue {
			*builder = append(*builder, lease)
		}
	}()
	p, err := s.client.createProtectedEphemeralSequential(ctx, s.leasesPath+"/lease-", nil)
	if err != nil {
		return curator2ReturnNull, err
	}
	nodeName := path.Base(p)
	lease = s.makeLease(p)
	s.mon.enter()
	defer s.mon.exit()
	for {
		// The bug: an exception here leaves with the lease unreturned.
		children, err := s.leaseChildren(ctx)
		if err != nil {
			return curator2ReturnNull, err
		}
		if !slices.Contains(children, nodeName) {
			// log.error("Sequential path not found: " + path)
			s.returnLease(ctx, lease)
			return curator2RetryDueToMissingNode, nil
		}
		if len(children) <= s.maxLeases {
			break
		}
		var werr error
		if hasWait {
			thisWait := getThisWait(start, wait)
			if thisWait <= 0 {
				s.returnLease(ctx, lease)
				return curator2ReturnNull, nil
			}
			werr = s.mon.wait(ctx, thisWait)
		} else {
			werr = s.mon.wait(ctx, 0)
		}
		if werr != nil {
			return curator2ReturnNull, werr // CURATOR-462's path, left out of the campaign
		}
	}
	return curator2Continue, nil
}
