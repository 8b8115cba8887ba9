package targets

import (
	"context"
	"path"
	"slices"
	"time"

	"github.com/zksim/zksim/fuzz"
)

// CURATOR-315: Curator's InterProcessSemaphoreV2 as it was in 2.10.0 (and
// 3.1.0): internalAcquire1Lease adds its lease to the acquire's builder as
// soon as the lease's node is created, and when the listing after the
// create no longer holds the node it asks for a retry, which creates a
// second lease: the builder then holds both, and acquire() hands out the
// first.

func curator315() KnownBug {
	return KnownBug{
		Name:   "CURATOR-315",
		Title:  "Reconnect during InterProcessSemaphoreV2.acquire can lead to orphaned node",
		Recipe: "InterProcessSemaphoreV2, Curator's counting semaphore (2.10.0)",
		Mechanism: "internalAcquire1Lease adds the new lease to the acquire's builder right after the create; when the session is lost before the listing that follows, the listing lacks the node, and the acquire retries with a second lease node, leaving the first, dead lease in the builder. " +
			"acquire() returns the first lease of the builder, the dead one: closing it finds no node, and the second lease's node, which nobody holds, lives on with the new session.",
		Schedule:  "the server expires an acquirer's session between its lease's create and the listing of the leases (Curator retries the expired session's call in the next one)",
		Symptom:   "the acquire succeeds, and the lease it returns closes without error, but a lease node stays for as long as the client's session: one lease fewer for everyone, for good",
		Fixed:     "fixed in 2.11.0 and 3.2.0 (613a51be, apache/curator#143): a lease joins the builder only once it is acquired, and is closed on every other return path (which left CURATOR-335's)",
		Detectors: []fuzz.Detector{fuzz.Leak, fuzz.Liveness},
		Mark:      "the tree still holds " + semaphoreDir + "/" + semaphoreName + "/leases/",
		Target:    Semaphore(newCurator2SemaphoreV2(acquire1Lease2100)),
		// The bug needs a session to end under a live process between
		// two of its calls: an expiry, or a partition or a pause that
		// outlasts the session. The faults that end no session (lost
		// requests and replies, late events, outside writes, a quorum
		// loss, which expires nobody, a cancel) or end the process with
		// it (a crash, a close) are left out, so that the window, one
		// step wide, is met within a few hundred cases. A new session on
		// a lagging follower lets a protected create miss its own node
		// and make a second: another way to an orphaned lease, left out
		// too. Lease.close takes a NoNode for a release
		// ("Lease already released"), so a lease gone with its session
		// is released without a word, which the model finds: a trait of
		// every version. A timed acquire of the inner mutex that gives up
		// leaves its getData watch armed (Curator 2.x removes no
		// watcher), so the client's next wait is woken by it too: a herd
		// by the harness's rule. The inner mutex sorts its nodes by the
		// text after "lock-", out of order past the int32 wrap.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.LaggingFollower, fuzz.LostRequest, fuzz.LostReply, fuzz.LateEvent, fuzz.OutsideWrite, fuzz.QuorumLoss, fuzz.Cancel, fuzz.Crash, fuzz.Close), fuzz.WithoutDetectors(fuzz.Model, fuzz.Herd), fuzz.WithoutSequenceWrap()},
	}
}

// acquire1Lease2100 is internalAcquire1Lease in 2.10.0.
func acquire1Lease2100(s *curator2SemaphoreV2, ctx context.Context, builder *[]*curator2Lease, start time.Time, hasWait bool, wait time.Duration) (result curator2AcquireResult, err error) {
	if !s.client.started() {
		return curator2ReturnNull, nil
	}
	ok, err := s.acquireLock(ctx, start, hasWait, wait)
	if err != nil || !ok {
		return curator2ReturnNull, err
	}
	defer func() {
		// finally { lock.release(); }: its exception, if any, replaces
		// the try's outcome.
		if rerr := s.lock.release(ctx); rerr != nil {
			result, err = curator2ReturnNull, rerr
		}
	}()
	p, err := s.client.createProtectedEphemeralSequential(ctx, s.leasesPath+"/lease-", nil)
	if err != nil {
		return curator2ReturnNull, err
	}
	nodeName := path.Base(p)
	// The bug: the lease is the builder's before it is acquired, and
	// stays there when the acquire retries.
	*builder = append(*builder, s.makeLease(p))
	s.mon.enter()
	defer s.mon.exit()
	for {
		children, err := s.leaseChildren(ctx)
		if err != nil {
			return curator2ReturnNull, err
		}
		if !slices.Contains(children, nodeName) {
			// log.error("Sequential path not found: " + path)
			return curator2RetryDueToMissingNode, nil
		}
		if len(children) <= s.maxLeases {
			break
		}
		var werr error
		if hasWait {
			thisWait := getThisWait(start, wait)
			if thisWait <= 0 {
				return curator2ReturnNull, nil
			}
			werr = s.mon.wait(ctx, thisWait)
		} else {
			werr = s.mon.wait(ctx, 0)
		}
		if werr != nil {
			return curator2ReturnNull, werr
		}
	}
	return curator2Continue, nil
}
