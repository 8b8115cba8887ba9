package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/zksim/zksim/fuzz"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Leaser is a counting semaphore as its clients use it; RecipeSemaphore
// makes one of recipe.Semaphore. Acquire waits for a lease, TryAcquire
// takes one only if one is free; a lease gives itself back with Release.
type Leaser interface {
	Acquire(ctx context.Context) (Lease, error)
	TryAcquire(ctx context.Context) (Lease, bool, error)
}

// Lease is a lease a Leaser handed out: Node names it (its node), and Held
// says whether it holds. A Lease that can be released within a deadline
// (ReleaseContext) is released so when the move draws one; one with a
// lost-lease signal (Lost, a LossReporter) is held to Held by the check.
type Lease interface {
	Release() error
	Node() string
	Held() bool
}

// NewLeaser makes the Leaser one process uses, on its Conn, for the
// semaphore at path with max leases.
type NewLeaser func(conn zktest.Conn, path string, max int) Leaser

// RecipeSemaphore is the NewLeaser of recipe.Semaphore.
func RecipeSemaphore(conn zktest.Conn, path string, max int) Leaser {
	return recipeSemaphore{recipe.NewSemaphore(conn, path, max)}
}

type recipeSemaphore struct{ s *recipe.Semaphore }

func (s recipeSemaphore) Acquire(ctx context.Context) (Lease, error) {
	l, err := s.s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return recipeLease{l}, nil
}

func (s recipeSemaphore) TryAcquire(ctx context.Context) (Lease, bool, error) {
	l, ok, err := s.s.TryAcquire(ctx)
	if !ok || err != nil {
		return nil, ok, err
	}
	return recipeLease{l}, true, nil
}

type recipeLease struct{ *recipe.Lease }

func (l recipeLease) Held() bool { return l.State() == recipe.MutexHeld }

// The semaphore's directory in every case: the Recipe's Path holds it and
// its acquirers' lock beside it (recipe.Semaphore's "<path>-__lock__"), so
// that the herd detector sees the waiters queued on that lock too.
const (
	semaphoreDir  = "/semaphores"
	semaphoreName = "imports"
	// semaphoreMax is N: with 2 to 8 clients, there are often more who
	// want a lease than there are leases.
	semaphoreMax = 2
)

// Semaphore is the Target of a counting semaphore of two leases, described
// as a Recipe: each client Acquires or TryAcquires a lease, one at a time,
// and Releases it. The model is linearizability's semaphore model: never
// more than N leases held at once, a session's expiry ending its leases.
// (A TryAcquire that finds none free claims nothing: recipe.Semaphore's
// leaves a freed lease to the acquirers queued for one.) The check
// holds a lease to its session; the herd rule holds a release to waking
// only a waiter it unblocks.
func Semaphore(newLeaser NewLeaser) fuzz.Target {
	return fuzz.Recipe[*semClient]{
		Name: "semaphore",
		Path: semaphoreDir,
		New: func(_ context.Context, client fuzz.Client, dir string) *semClient {
			path := dir + "/" + semaphoreName
			return &semClient{sem: newLeaser(client.Conn, path, semaphoreMax), path: path}
		},
		Ops: []fuzz.Op[*semClient]{
			{Name: "Acquire", Enabled: (*semClient).free, Call: func(c *semClient, ctx context.Context, call *fuzz.Call) error { return c.acquire(ctx, call, false) }},
			{Name: "TryAcquire", Enabled: (*semClient).free, Call: func(c *semClient, ctx context.Context, call *fuzz.Call) error { return c.acquire(ctx, call, true) }},
			{Name: "Release", Enabled: (*semClient).holding, Releases: true, Call: (*semClient).release},
		},
		Stop: func(c *semClient, ctx context.Context, call *fuzz.Call) error {
			if !c.holding() {
				return nil
			}
			return c.release(ctx, call)
		},
		Model: linearizability.SemaphoreModel(),
		Check: (*semClient).check,
	}
}

// semClient is one process of the semaphore's Recipe.
type semClient struct {
	sem  Leaser
	path string
	down fuzz.StepDown

	// mu guards lease and session, which the calls write and Check reads:
	// a call may end while time passes (its deadline's timer), after a
	// Check read them, and the race detector sees no order in the bubble's
	// clock.
	mu      sync.Mutex
	lease   Lease // held, as the client's calls told it
	session int64
}

// CloseClient passes the process's close of its client on to the
// semaphore's library, if it has one of its own (fuzz.ClientCloser).
func (c *semClient) CloseClient() {
	if cc, ok := c.sem.(fuzz.ClientCloser); ok {
		cc.CloseClient()
	}
}

func (c *semClient) free() bool    { return !c.holding() }
func (c *semClient) holding() bool { l, _ := c.held(); return l != nil }

// held returns the lease the client holds, nil if none, and its session.
func (c *semClient) held() (Lease, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease, c.session
}

func (c *semClient) input(op linearizability.SemaphoreOp, session int64, lease string) linearizability.SemaphoreInput {
	return linearizability.SemaphoreInput{Op: op, Semaphore: c.path, Max: semaphoreMax, Session: session, Lease: lease}
}

// acquire takes a lease, waiting or trying. A call that failed, or went
// through other sessions first, may have held a lease in them for a while
// (created and counted, then given up or gone with the session), which a
// TryAcquire that found none free may have seen: each session's hold is
// open within the call, its lease unnamed.
func (c *semClient) acquire(ctx context.Context, call *fuzz.Call, try bool) error {
	var err error
	var got bool
	call.Sessions(func(session int64, last bool) {
		if last && err == nil {
			return
		}
		call.Record(c.input(linearizability.LeaseAcquire, session, ""), linearizability.SemaphoreUnknown{})
		call.Record(c.input(linearizability.LeaseRelease, session, ""), linearizability.SemaphoreUnknown{})
	})
	var l Lease
	if try {
		l, got, err = c.sem.TryAcquire(ctx)
	} else {
		l, err = c.sem.Acquire(ctx)
		got = err == nil
	}
	switch {
	case err != nil:
		return err
	case !got:
		// recipe.Semaphore's TryAcquire also leaves a freed lease to the
		// acquirers queued for it: finding none free claims nothing.
		return nil
	}
	session := call.Session()
	c.mu.Lock()
	c.lease, c.session = l, session
	c.mu.Unlock()
	call.Record(c.input(linearizability.LeaseAcquire, session, l.Node()), linearizability.SemaphoreOutput{OK: true})
	return nil
}

// release gives the lease back; it is over for the client whatever
// Release returns.
func (c *semClient) release(ctx context.Context, call *fuzz.Call) error {
	c.mu.Lock()
	l, session := c.lease, c.session
	c.lease = nil
	c.mu.Unlock()
	in := c.input(linearizability.LeaseRelease, session, l.Node())
	call.IfCrashed(func() { call.Record(in, linearizability.SemaphoreUnknown{}) })
	var err error
	if r, ok := l.(interface {
		ReleaseContext(context.Context) error
	}); ok && hasDeadline(ctx) {
		err = r.ReleaseContext(ctx)
	} else {
		err = l.Release()
	}
	if err == nil {
		call.Record(in, linearizability.SemaphoreOutput{OK: true})
	} else {
		call.Record(in, linearizability.SemaphoreUnknown{})
	}
	return err
}

// check holds the lease to its session, and to its own lost-lease signal.
func (c *semClient) check(v fuzz.View) string {
	lease, session := c.held()
	if lease == nil {
		return ""
	}
	if l, ok := lease.(LossReporter); ok && lease.Held() && isClosed(l.Lost()) {
		return fmt.Sprintf("its lease %s says it is held, and that it is lost (Lost is closed)", fuzz.StableName(lease.Node()))
	}
	return c.down.Check(v, session, lease.Held(), fmt.Sprintf("its lease %s still says it is held", fuzz.StableName(lease.Node())))
}

// semaphoreMutants are the broken semaphores: without the acquirers' lock,
// one counts and then creates, the other keeps its node while it waits
// and watches the whole directory.
func semaphoreMutants() []Mutant {
	return []Mutant{
		{"sem-count-then-create", "counts the leases and then creates its own without counting again, so two acquirers that counted the same free lease both hold", fuzz.Model,
			Semaphore(newPlainSemaphore(false)), nil, nil, "semaphore"},
		// A waiter that gives up deletes its node once: when the delete
		// is lost (the quorum gone, say), the node stays (a leak), which
		// some seeds find before the herd.
		{"sem-watch-directory", "a waiter keeps its node and watches the whole directory's children, so every release wakes every waiter", fuzz.Herd,
			Semaphore(newPlainSemaphore(true)), nil, []fuzz.Detector{fuzz.Leak}, "semaphore"},
	}
}

// plainSemaphore is a semaphore without the acquirers' lock, as a first
// try often looks: the mutants' base.
type plainSemaphore struct {
	conn zktest.Conn
	path string
	max  int
	// queue: create a sequential node first and hold while fewer than max
	// are ahead of it, watching the whole directory meanwhile; else count
	// the leases, then create one.
	queue bool
}

func newPlainSemaphore(queue bool) NewLeaser {
	return func(conn zktest.Conn, path string, max int) Leaser {
		return &plainSemaphore{conn: conn, path: path, max: max, queue: queue}
	}
}

// plainLease is a plainSemaphore's lease.
type plainLease struct {
	conn    zktest.Conn
	node    string
	session int64
}

func (l *plainLease) Node() string { return l.node }
func (l *plainLease) Held() bool   { return l.conn.SessionID() == l.session }
func (l *plainLease) Release() error {
	err := l.conn.Delete(l.node, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return errLost
	}
	return err
}

func (s *plainSemaphore) TryAcquire(ctx context.Context) (Lease, bool, error) {
	return s.acquire(ctx, true)
}

func (s *plainSemaphore) Acquire(ctx context.Context) (Lease, error) {
	l, _, err := s.acquire(ctx, false)
	return l, err
}

func (s *plainSemaphore) acquire(ctx context.Context, try bool) (Lease, bool, error) {
	if err := makeDir(ctx, s.conn, s.path); err != nil {
		return nil, false, err
	}
	if s.queue {
		return s.queueFor(ctx, try)
	}
	for {
		children, _, watch, err := s.conn.ChildrenW(s.path)
		if err != nil {
			return nil, false, err
		}
		if len(children) < s.max {
			node, err := s.conn.Create(s.path+"/lease-", nil, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
			if err != nil {
				return nil, false, err
			}
			return &plainLease{conn: s.conn, node: node, session: s.conn.SessionID()}, true, nil
		}
		if try {
			return nil, false, nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// queueFor creates the node first and holds while fewer than max nodes
// are ahead of it.
func (s *plainSemaphore) queueFor(ctx context.Context, try bool) (Lease, bool, error) {
	node, err := s.conn.Create(s.path+"/lease-", nil, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
	if err != nil {
		return nil, false, err
	}
	own := node[strings.LastIndexByte(node, '/')+1:]
	giveUp := func(err error) (Lease, bool, error) {
		_ = s.conn.Delete(node, -1)
		return nil, false, err
	}
	for {
		children, _, watch, err := s.conn.ChildrenW(s.path)
		if err != nil {
			return giveUp(err)
		}
		i := slices.Index(recipe.QueueOrder(children), own)
		if i < 0 {
			return nil, false, errLost // gone with its session
		}
		if i < s.max {
			return &plainLease{conn: s.conn, node: node, session: s.conn.SessionID()}, true, nil
		}
		if try {
			return giveUp(nil)
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return giveUp(ctx.Err())
		}
	}
}
