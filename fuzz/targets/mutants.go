package targets

import (
	"slices"
	"time"

	"github.com/zksim/zksim/fuzz"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Mutant is a deliberately broken recipe — a lock, an election, a
// read/write lock or a semaphore: the campaign must find each one, with
// the detector named.
type Mutant struct {
	// Name selects the mutant in cmd/zkfuzz (-recipe=NAME).
	Name string
	// Bug says what is wrong with it.
	Bug string
	// Detector is what finds it.
	Detector fuzz.Detector
	// Target is the broken recipe, to fuzz.
	Target fuzz.Target
	// Options are what a campaign needs to see the bug rather than
	// another one the mutant also has.
	Options []fuzz.Option
	// Also lists the detectors its mistake trips too, in some cases
	// before Detector does: a queue ordered wrongly deadlocks as often as
	// it lets two in.
	Also []fuzz.Detector
	// Recipe names the kind of recipe it breaks: "mutex", "election",
	// "rwmutex" or "semaphore".
	Recipe string
}

// Mutants returns the built-in broken locks, then the broken elections,
// read/write locks and semaphores.
// Each lock is a small lock written the way people write them, with one
// classic mistake; the queue lock they share is otherwise sound (a test
// holds it to the same campaign as recipe.Mutex). Each election breaks
// recipe.Election, or an election on the queue lock, in one way.
func Mutants() []Mutant {
	queue := func(v variant) fuzz.Target {
		return fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker { return &QueueLock{conn: conn, dir: path, v: v} })
	}
	locks := []Mutant{
		{"herd", "waits on the whole children list (a child watch on the lock's directory), so every release wakes every waiter", fuzz.Herd, queue(watchChildren), nil, nil, "mutex"},
		// A Lock given up leaves its watch on the directory, which
		// nothing ever fires: a leak.
		{"wrong-watch", "watches the lock directory's data instead of the node just ahead, and children coming and going never change it", fuzz.Liveness, queue(watchDirectory), nil, []fuzz.Detector{fuzz.Leak}, "mutex"},
		{"no-relist", "takes the deletion of the node ahead as the lock without listing again, though that node may have been a waiter that left", fuzz.MutualExclusion, queue(noRelist), nil, nil, "mutex"},
		// With more than one waiter, two of them can end up behind the
		// same node, as names sort by GUID: a herd, which two clients
		// avoid.
		{"whole-name-order", "orders the protected names by the whole name, whose random GUID comes first, instead of by the sequence number", fuzz.MutualExclusion, queue(wholeNameOrder), []fuzz.Option{fuzz.WithClients(2)}, nil, "mutex"},
		// With more than one waiter, every waiter watches the one node and
		// a release wakes them all: a herd, which two clients avoid.
		{"check-then-create", "checks that a plain (persistent) node is missing, then creates it: a crashed holder's node stays for ever", fuzz.Liveness, fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker {
			return &nodeLock{conn: conn, dir: path, flags: 0, wait: true}
		}), []fuzz.Option{fuzz.WithClients(2)}, nil, "mutex"},
		{"timed-wait", "waits for the node ahead with a timeout, and reports the lock acquired when the wait times out", fuzz.MutualExclusion, queue(timedWait), nil, nil, "mutex"},
		{"wrong-unlock", "Unlock deletes the first node in the queue, assuming it is its own, which after a session expiry is another client's", fuzz.MutualExclusion, queue(deleteFirst), nil, nil, "mutex"},
		{"plain-retry", "creates a plain (unprotected) sequential node and retries the create after a lost reply, leaving the first node waiting for nobody", fuzz.Liveness, queue(plainRetry), nil, nil, "mutex"},
		// The spin lock also deletes its node of a fixed name without a
		// version: an Unlock queued while its client is cut off goes out
		// on the session that replaced the expired one (go-zookeeper sends
		// what is queued once it has a session again) and deletes the
		// next holder's node.
		{"spin", "a polling spin lock: tries to create the lock node, and on failure sleeps and tries again", fuzz.Polling, fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker {
			return &nodeLock{conn: conn, dir: path, flags: zk.FlagEphemeral}
		}), nil, []fuzz.Detector{fuzz.MutualExclusion}, "mutex"},
		// The six that follow are recipe.Mutex's own old defects, each
		// put back into the queue lock.
		{"reenter-failed-unlock", "an Unlock that cannot confirm its Delete keeps the hold, and the next Lock re-enters it at once; the Delete still queued in the client applies later and the next waiter takes the lock too", fuzz.MutualExclusion, queue(reenterFailedUnlock), nil, nil, "mutex"},
		{"sequence-wrap", "reads the last ten characters of a name as the sequence number, so past the counter's int32 wrap (\"-2147483647\") the newest contender sorts first", fuzz.MutualExclusion, queue(lastTenDigits), nil, []fuzz.Detector{fuzz.Liveness, fuzz.Leak}, "mutex"},
		{"closed-retry", "takes zk.ErrConnectionClosed from a closed Conn for a connection loss, and retries for 15s before it gives up", fuzz.Liveness, queue(retryClosed), nil, nil, "mutex"},
		{"forget-guid", "after a create whose reply was lost, takes one listing without its GUID to mean the create never applied, and queues with a new GUID; the first node shows up later, owned by the live session, and blocks the queue", fuzz.Liveness, queue(forgetGUID), nil, nil, "mutex"},
		// Long schedules: the outage must last over a minute, the
		// session survive it, and a release or a Lock fail meanwhile.
		{"reaper-gives-up", "the background deletion of a node whose Unlock or Lock failed stops after a minute, reasoning that the session has expired by then; it has not while the ensemble has no quorum, nor when the session timeout is longer, and the node blocks the queue once the session resumes", fuzz.Liveness, queue(reaperGivesUp), []fuzz.Option{fuzz.WithSteps(200)}, nil, "mutex"},
		{"unlock-trusts-no-node", "an Unlock whose Delete finds no node calls it a clean release, though another session deleted the node, maybe before Unlock began (its watch event reaching the lock only later), and the next holder may have entered inside the critical section", fuzz.MutualExclusion, queue(noNodeReleased), nil, nil, "mutex"},
		{"listing-order", "names nodes plainly (\"lock-<seq>\") and takes the order ZooKeeper lists them in for the queue's order; ZooKeeper lists children in no particular order", fuzz.MutualExclusion, queue(listingOrder), nil, []fuzz.Detector{fuzz.Liveness, fuzz.Leak, fuzz.Herd}, "mutex"},
	}
	return slices.Concat(locks, electionMutants(), rwMutants(), semaphoreMutants())
}

// MutantByName returns the mutant called name.
func MutantByName(name string) (Mutant, bool) {
	for _, m := range Mutants() {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// variant is the one mistake a QueueLock makes; zero is none.
type variant uint8

const (
	sound variant = iota
	watchChildren
	watchDirectory
	noRelist
	wholeNameOrder
	timedWait
	deleteFirst
	plainRetry
	reenterFailedUnlock
	lastTenDigits
	retryClosed
	forgetGUID
	listingOrder
	reaperGivesUp
	noNodeReleased
	existsLeads
	// The read/write lock's (see rwmutex.go).
	readerWaitsAll
	writerIgnoresReaders
	readersWatchFirstWriter
)

// errLost is what a mutant's Unlock returns when its node was already gone.
var errLost = recipe.ErrLockLost

const (
	mutantBackoff = 10 * time.Millisecond
	// reaperSkew is how much longer than the lock loop's backoff a mutant's
	// background delete sleeps: the loop and the delete fail together at
	// a reconnect round, and on one backoff their next calls would reach
	// the Conn in the Go scheduler's order, and a seed would not replay.
	reaperSkew       = time.Nanosecond
	mutantTimedWait  = time.Second
	mutantSpinPause  = 20 * time.Millisecond
	mutantRetryLimit = 200
	// closedRetryTime is how long the closed-retry mutant retries a closed
	// Conn: recipe.Mutex's retry timeout.
	closedRetryTime = 15 * time.Second
)
