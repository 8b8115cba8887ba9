package targets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
)

// CURATOR-233: Curator's DistributedDoubleBarrier (curator-recipes,
// barriers/DistributedDoubleBarrier.java, as in Curator 5.x before
// apache/curator#1291), ported for its enter and leave. Leave's loop
// breaks as soon as one child is left that is not its own: it returns,
// saying everyone has left, while that member is still in the barrier.

func curator233() KnownBug {
	return KnownBug{
		Name:   "CURATOR-233",
		Title:  "Bug in double barrier",
		Recipe: "DistributedDoubleBarrier, Curator's double barrier (curator-recipes 5.x)",
		Mechanism: "DistributedDoubleBarrier.leave deletes its own node, and then loops while children remain; but when a single child remains it breaks out, whoever that child is, as it did once its own node was the last. " +
			"A member whose node sorts last watches its own node, deletes it, wakes on that deletion, finds the other member's node alone, and returns from leave while the other member has not left.",
		Schedule:  "no fault: two members enter, and both call leave; the one whose node's UUID sorts last returns at once",
		Symptom:   "leave returns, saying all members have left, while another member is still in the barrier",
		Fixed:     "not fixed: CURATOR-233 was closed in 2022 as a duplicate of CURATOR-536, whose fix (Curator 4.3.0) made leave give up when its time runs out; its proposed fix, apache/curator#99, said leave \"would sometimes return true, even though not all clients had left the barrier\", and was closed unmerged. DistributedDoubleBarrier has the same loop today",
		Detectors: []fuzz.Detector{fuzz.Model},
		Target:    DoubleBarrier(newCuratorDoubleBarrier),
		// The double barrier's leave protocol wakes every member still
		// in the barrier each time one leaves, by design (ZooKeeper's own
		// recipe does the same): the herd rule, which holds a queue to
		// waking only whom a release unblocks, does not apply.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutDetectors(fuzz.Herd)},
	}
}

// barrierMembers is the double barrier's memberQty in the catalogue's
// campaigns: with 2 to 8 clients, often more than enough.
const barrierMembers = 2

// Barrier is a double barrier as its clients use it: Enter blocks until
// enough members have entered, Leave until all members have left; each
// reports false when its time (ctx's deadline) ran out first.
type Barrier interface {
	Enter(ctx context.Context) (bool, error)
	Leave(ctx context.Context) (bool, error)
}

// NewBarrier makes the Barrier one process uses, on its Conn, for the
// double barrier at path with members members.
type NewBarrier func(conn zktest.Conn, events <-chan zk.Event, path string, members int) Barrier

// DoubleBarrier is the Target of a double barrier of two members,
// described as a Recipe: each process enters once and leaves once, both
// joint calls (fuzz.Op.Joint). Enter records the session's arrival and,
// if it went through, its pass; Leave its departure and, if it returned
// saying all had left, that. The model is linearizability's barrier
// model: nobody passes before two members arrived, and no Leave returns
// before every member that arrived has left or expired.
func DoubleBarrier(newBarrier NewBarrier) fuzz.Target {
	return fuzz.Recipe[*barrierClient]{
		Name: "double-barrier",
		Path: "/barriers/double",
		New: func(_ context.Context, client fuzz.Client, dir string) *barrierClient {
			return &barrierClient{b: newBarrier(client.Conn, client.Events, dir, barrierMembers), dir: dir}
		},
		Ops: []fuzz.Op[*barrierClient]{
			{Name: "Enter", Joint: true, Enabled: func(c *barrierClient) bool { return !c.entered }, Call: (*barrierClient).enter},
			{Name: "Leave", Joint: true, Enabled: func(c *barrierClient) bool { return c.entered && !c.left }, Call: (*barrierClient).leave},
		},
		Stop: func(c *barrierClient, ctx context.Context, call *fuzz.Call) error {
			if !c.entered || c.left {
				return nil
			}
			return c.leave(ctx, call)
		},
		Model: linearizability.BarrierModel(),
	}
}

// barrierClient is one process of the double barrier's Recipe.
type barrierClient struct {
	b             Barrier
	dir           string
	entered, left bool
}

func (c *barrierClient) record(call *fuzz.Call, op linearizability.BarrierOp, known bool) {
	in := linearizability.BarrierInput{Op: op, Barrier: c.dir, Size: barrierMembers, Session: call.Session()}
	if known {
		call.Record(in, struct{}{})
	} else {
		call.RecordUnknown(in)
	}
}

func (c *barrierClient) enter(ctx context.Context, call *fuzz.Call) error {
	c.entered = true
	passed, err := c.b.Enter(ctx)
	// Its node may have been made even when Enter failed.
	c.record(call, linearizability.BarrierArrive, err == nil)
	if err == nil && passed {
		c.record(call, linearizability.BarrierPass, true)
	}
	return err
}

func (c *barrierClient) leave(ctx context.Context, call *fuzz.Call) error {
	c.left = true
	allLeft, err := c.b.Leave(ctx)
	c.record(call, linearizability.BarrierDepart, err == nil)
	if err == nil && allLeft {
		c.record(call, linearizability.BarrierLeft, true)
	}
	return err
}

// curatorDoubleBarrier is DistributedDoubleBarrier: its synchronized
// methods hold mon. Java's exceptions are Go errors (zk.ErrNoNode for
// NoNodeException, and so on). Curator's RetryLoop around each call is
// left out: the campaign draws no fault.
type curatorDoubleBarrier struct {
	conn        zktest.Conn
	barrierPath string
	memberQty   int
	ourPath     string
	readyPath   string
	mon         *monitor

	hasBeenNotified bool
	connectionLost  bool
}

func newCuratorDoubleBarrier(conn zktest.Conn, events <-chan zk.Event, barrierPath string, memberQty int) Barrier {
	b := &curatorDoubleBarrier{conn: conn, barrierPath: barrierPath, memberQty: memberQty, readyPath: barrierPath + "/ready", mon: newMonitor()}
	// The watcher hears the connection's state too, as a Java Watcher
	// does: ZooKeeper hands every registered watcher the None events.
	go func() {
		for ev := range events {
			if ev.Type == zk.EventSession && (ev.State == zk.StateDisconnected || ev.State == zk.StateHasSession || ev.State == zk.StateExpired) {
				b.process(ev.State)
			}
		}
	}()
	return b
}

// process is the watcher: it notes whether the connection is lost, and
// notifies the waiters, asynchronously (Curator's runSafe).
func (b *curatorDoubleBarrier) process(state zk.State) {
	b.mon.enter()
	b.connectionLost = state != zk.StateHasSession
	b.mon.exit()
	go func() {
		b.mon.enter()
		defer b.mon.exit()
		b.hasBeenNotified = true
		b.mon.notifyAll()
	}()
}

// watch hands a watch's event to the watcher.
func (b *curatorDoubleBarrier) watch(ch <-chan zk.Event) {
	go func() {
		if _, ok := <-ch; ok {
			b.process(zk.StateHasSession)
		}
	}()
}

// Enter is enter(maxWait), maxWait being what is left of ctx's deadline
// (enter() without one). Curator's constructor names its node with a
// random UUID; it is drawn here, at the first Enter, from the session, so
// that a case replays the same.
func (b *curatorDoubleBarrier) Enter(ctx context.Context) (bool, error) {
	start := time.Now()
	deadline, hasMaxWait := ctx.Deadline()
	a := splitmix(uint64(b.conn.SessionID()))
	b.ourPath = path.Join(b.barrierPath, fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, splitmix(a)>>48, splitmix(a)&0xffffffffffff))

	readyPathExists, _, ch, err := b.conn.ExistsW(b.readyPath)
	if err != nil {
		return false, err
	}
	b.watch(ch)
	// creatingParentContainersIfNeeded
	if err := b.createParents(); err != nil {
		return false, err
	}
	if _, err := b.conn.Create(b.ourPath, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return false, err
	}
	result := readyPathExists
	if !result {
		if result, err = b.internalEnter(ctx, start, hasMaxWait, deadline.Sub(start)); err != nil {
			return false, err
		}
	}
	b.mon.enter()
	lost := b.connectionLost
	b.mon.exit()
	if lost {
		return false, zk.ErrConnectionClosed // KeeperException.ConnectionLossException
	}
	return result, nil
}

func (b *curatorDoubleBarrier) createParents() error {
	for _, p := range []string{path.Dir(b.barrierPath), b.barrierPath} {
		if _, err := b.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// internalEnter is the synchronized internalEnter: its loop runs once (do
// { ... } while (false)).
func (b *curatorDoubleBarrier) internalEnter(ctx context.Context, start time.Time, hasMaxWait bool, maxWait time.Duration) (bool, error) {
	b.mon.enter()
	defer b.mon.exit()
	result := true
	children, _, err := b.conn.Children(b.barrierPath)
	if err != nil {
		return false, err
	}
	if len(children) >= b.memberQty {
		if _, err := b.conn.Create(b.readyPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return false, err
		}
		return true, nil
	}
	if hasMaxWait && !b.hasBeenNotified {
		if wait := maxWait - time.Since(start); wait <= 0 {
			result = false
		} else if err := b.mon.wait(ctx, wait); err != nil {
			return false, err
		}
		if !b.hasBeenNotified {
			result = false
		}
	} else if err := b.mon.wait(ctx, 0); err != nil {
		return false, err
	}
	return result, nil
}

// Leave is the synchronized leave(maxWait) and its internalLeave.
func (b *curatorDoubleBarrier) Leave(ctx context.Context) (bool, error) {
	b.mon.enter()
	defer b.mon.exit()
	start := time.Now()
	deadline, hasMaxWait := ctx.Deadline()
	ourPathName := path.Base(b.ourPath)
	ourNodeShouldExist := true
	result := true
	for {
		if b.connectionLost {
			return false, zk.ErrConnectionClosed
		}
		children, _, err := b.conn.Children(b.barrierPath)
		if errors.Is(err, zk.ErrNoNode) {
			children, err = nil, nil
		}
		if err != nil {
			return false, err
		}
		children = slices.DeleteFunc(children, func(name string) bool { return name == "ready" })
		slices.Sort(children)
		if len(children) == 0 {
			break
		}
		ourIndex := slices.Index(children, ourPathName)
		if ourIndex < 0 && ourNodeShouldExist {
			if b.connectionLost {
				break // connection was lost but we've reconnected; our ephemeral node is gone
			}
			return false, fmt.Errorf("IllegalStateException: Our path (%s) is missing", ourPathName)
		}
		if len(children) == 1 {
			if ourNodeShouldExist && children[0] != ourPathName {
				return false, fmt.Errorf("IllegalStateException: Last path (%s) is not ours (%s)", children[0], ourPathName)
			}
			if err := b.checkDeleteOurPath(ourNodeShouldExist); err != nil {
				return false, err
			}
			ourNodeShouldExist = false
			break
		}
		highestNodePath := path.Join(b.barrierPath, children[len(children)-1])
		exists, _, ch, err := b.conn.ExistsW(highestNodePath)
		if err != nil {
			return false, err
		}
		b.watch(ch)
		if err := b.checkDeleteOurPath(ourNodeShouldExist); err != nil {
			return false, err
		}
		ourNodeShouldExist = false
		if exists {
			if hasMaxWait {
				wait := deadline.Sub(start) - time.Since(start)
				if wait <= 0 {
					result = false
					break
				}
				if err := b.mon.wait(ctx, wait); err != nil {
					return false, err
				}
			} else if err := b.mon.wait(ctx, 0); err != nil {
				return false, err
			}
		}
	}
	if err := b.conn.Delete(b.readyPath, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, err
	}
	return result, nil
}

func (b *curatorDoubleBarrier) checkDeleteOurPath(shouldExist bool) error {
	if shouldExist {
		return b.conn.Delete(b.ourPath, -1)
	}
	return nil
}
