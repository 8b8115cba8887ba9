package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zksim/zksim/fuzz"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// RWLocker is a read/write lock as its clients use it: a shared side and
// an exclusive side, each a Locker (a Fencer too, when it hands out
// fencing tokens; a StateReporter, when it says where its hold stands).
// Reads tells a reader's node from a writer's by its name. *recipe.RWMutex
// is one (RecipeRWMutex).
type RWLocker interface {
	ReadLocker() fuzz.Locker
	WriteLocker() fuzz.Locker
	Reads(node string) bool
}

// NewRWLocker makes the RWLocker one process uses, on its Conn, for the
// lock whose nodes live under path.
type NewRWLocker func(conn zktest.Conn, path string) RWLocker

// RecipeRWMutex is the NewRWLocker of recipe.RWMutex.
func RecipeRWMutex(conn zktest.Conn, path string) RWLocker {
	return recipeRW{recipe.NewRWMutex(conn, path)}
}

type recipeRW struct{ *recipe.RWMutex }

func (rw recipeRW) ReadLocker() fuzz.Locker  { return rw.ReadLock() }
func (rw recipeRW) WriteLocker() fuzz.Locker { return rw.WriteLock() }

// rwPath is the read/write lock's directory in every case.
const rwPath = "/locks/rw"

// needlessWait is how long a reader may wait, on nothing of the
// harness's, with no writer ahead of its node, before it is said to wait
// for nothing: a reader that no writer blocks should hold as soon as it
// lists the directory.
const needlessWait = 10 * time.Second

// RWMutex is the Target of a read/write lock, described as a Recipe: each
// client takes the read side (RLock) or the write side (Lock), one at a
// time; a writer writes to the fenced resource with its token; either
// releases. The model is linearizability's read/write lock model: readers
// together or one writer; the writers' tokens grow; a fenced resource
// refuses a superseded writer. The check holds a handle to its session
// (once the session a side was taken in has expired and the client is on
// a new one, the side must stop saying it holds); Stalled holds a reader
// to its queue (it may not wait long, on a watch, with no writer ahead of
// its node: liveness); the herd rule holds each waiter to the node it waits for (a
// writer's release may wake every reader it lets in, but no reader it
// does not).
func RWMutex(newRW NewRWLocker) fuzz.Target {
	return fuzz.Recipe[*rwClient]{
		Name: "read/write lock",
		Path: rwPath,
		New: func(_ context.Context, client fuzz.Client, path string) *rwClient {
			return &rwClient{rw: newRW(client.Conn, path), path: path}
		},
		Ops: []fuzz.Op[*rwClient]{
			{Name: "RLock", Enabled: (*rwClient).free, Call: func(c *rwClient, ctx context.Context, call *fuzz.Call) error { return c.lock(ctx, call, true) }},
			{Name: "Lock", Enabled: (*rwClient).free, Call: func(c *rwClient, ctx context.Context, call *fuzz.Call) error { return c.lock(ctx, call, false) }},
			{Name: "Write", Enabled: (*rwClient).writing, Call: (*rwClient).write},
			{Name: "RUnlock", Enabled: (*rwClient).reading, Releases: true, Call: (*rwClient).unlock},
			{Name: "Unlock", Enabled: (*rwClient).writing, Releases: true, Call: (*rwClient).unlock},
		},
		Stop: func(c *rwClient, ctx context.Context, call *fuzz.Call) error {
			if c.held == nil {
				return nil
			}
			return c.unlock(ctx, call)
		},
		Model:      linearizability.RWMutexModel(),
		Check:      (*rwClient).check,
		Stalled:    (*rwClient).stalled,
		CheckReads: true,
	}
}

// rwClient is one process of the read/write lock's Recipe.
type rwClient struct {
	rw   RWLocker
	path string
	// The side held as the client's calls told it, the session it was
	// taken in and its token.
	held    fuzz.Locker
	read    bool
	session int64
	token   int64
	down    fuzz.StepDown
	// mu guards held and session, which Check reads too (see
	// semClient.mu).
	mu sync.Mutex
}

func (c *rwClient) free() bool    { return c.held == nil }
func (c *rwClient) reading() bool { return c.held != nil && c.read }
func (c *rwClient) writing() bool { return c.held != nil && !c.read }

func (c *rwClient) input(op linearizability.RWMutexOp, session, token int64) linearizability.RWMutexInput {
	return linearizability.RWMutexInput{Op: op, Lock: c.path, Session: session, Token: token}
}

// lock takes a side. A call that failed, or went through other sessions
// first, may have held the side for a while in them, and let it go: no
// claim of the history rests on such a hold (nobody reads who holds, and
// nobody tries), so none is recorded, which spares porcupine their
// orders.
func (c *rwClient) lock(ctx context.Context, call *fuzz.Call, read bool) error {
	acquire, side := linearizability.WriteAcquire, c.rw.WriteLocker()
	if read {
		acquire, side = linearizability.ReadAcquire, c.rw.ReadLocker()
	}
	if err := side.Lock(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.held, c.session = side, call.Session()
	c.mu.Unlock()
	c.read, c.token = read, 0
	if f, ok := side.(fuzz.Fencer); ok {
		c.token = f.Token()
	}
	call.Record(c.input(acquire, c.session, 0), linearizability.RWMutexOutput{OK: true, Token: c.token})
	return nil
}

// write is a writer's write to the fenced resource, with the token its
// side gives now.
func (c *rwClient) write(_ context.Context, call *fuzz.Call) error {
	f, ok := c.held.(fuzz.Fencer)
	if !ok {
		return errors.New("the write side hands out no token")
	}
	token := f.Token()
	if token == 0 {
		return errors.New("no token: the write side says its hold is lost")
	}
	accepted := call.Fence(token)
	call.Record(c.input(linearizability.RWWrite, c.session, token), linearizability.RWMutexOutput{OK: accepted})
	return nil
}

// unlock releases the side held; the hold is over for the client
// whatever Unlock returns.
func (c *rwClient) unlock(ctx context.Context, call *fuzz.Call) error {
	side, release := c.held, linearizability.WriteRelease
	if c.read {
		release = linearizability.ReadRelease
	}
	c.mu.Lock()
	c.held = nil
	c.mu.Unlock()
	call.IfCrashed(func() { call.Record(c.input(release, c.session, 0), linearizability.RWMutexUnknown{}) })
	var err error
	if u, ok := side.(fuzz.ContextUnlocker); ok && hasDeadline(ctx) {
		err = u.UnlockContext(ctx)
	} else {
		err = side.Unlock()
	}
	if err == nil {
		call.Record(c.input(release, c.session, 0), linearizability.RWMutexOutput{OK: true})
	} else {
		call.Record(c.input(release, c.session, 0), linearizability.RWMutexUnknown{})
	}
	return err
}

// check holds the side held to its session.
func (c *rwClient) check(v fuzz.View) string {
	c.mu.Lock()
	held, session := c.held, c.session
	c.mu.Unlock()
	if held == nil {
		return ""
	}
	return c.down.Check(v, session, claimsHold(held), "its lock still says it holds its side")
}

// stalled holds a waiting reader to its queue: it waits only for a writer
// ahead of its node.
func (c *rwClient) stalled(v fuzz.View) string {
	if v.Call != "RLock" || v.Idle < needlessWait {
		return ""
	}
	queue, err := recipe.Contenders(v.Read, c.path)
	if err != nil {
		return ""
	}
	own := v.Nodes()
	for i, name := range queue {
		node := c.path + "/" + name
		if !slices.Contains(own, node) || !c.rw.Reads(node) {
			continue
		}
		for _, ahead := range queue[:i] {
			if !c.rw.Reads(c.path + "/" + ahead) {
				return "" // a writer ahead: it waits as it should
			}
		}
		return fmt.Sprintf("its RLock has waited %v on a watch (and been in the call %v), with no writer ahead of its node %s", v.Idle.Round(time.Millisecond), v.Since.Round(time.Millisecond), fuzz.StableName(node))
	}
	return ""
}

// claimsHold reports whether a side says it holds: as its Held says, for
// a lock that has one; held and connected, for a lock that says where its
// hold stands; or a token, for one that hands them out.
func claimsHold(l fuzz.Locker) bool {
	if h, ok := l.(interface{ Held() bool }); ok {
		return h.Held()
	}
	if sr, ok := l.(fuzz.StateReporter); ok {
		return sr.State() == recipe.MutexHeld
	}
	if f, ok := l.(fuzz.Fencer); ok {
		return f.Token() != 0
	}
	return false
}

// queueRW is a read/write lock of two queue locks on one directory, the
// read/write mutants' base: a reader waits for the nearest writer ahead,
// a writer for the node just ahead.
type queueRW struct{ r, w *QueueLock }

func (q queueRW) ReadLocker() fuzz.Locker  { return q.r }
func (q queueRW) WriteLocker() fuzz.Locker { return q.w }
func (q queueRW) Reads(node string) bool   { return queueReads(node) }

// queueRWLocker makes a queueRW with variant v.
func queueRWLocker(v variant) NewRWLocker {
	return func(conn zktest.Conn, path string) RWLocker {
		return queueRW{r: &QueueLock{conn: conn, dir: path, v: v, read: true}, w: &QueueLock{conn: conn, dir: path, v: v}}
	}
}

// rwMutants are the broken read/write locks, each the queue lock's with
// one mistake.
func rwMutants() []Mutant {
	return []Mutant{
		{"rw-reader-waits-all", "a reader waits for the node just ahead of it even when that is a reader, so readers queue behind readers that hold", fuzz.Liveness,
			RWMutex(queueRWLocker(readerWaitsAll)), nil, nil, "rwmutex"},
		{"rw-writer-ignores-readers", "a writer waits only for the writers ahead of it, and takes the lock while readers hold it", fuzz.Model,
			RWMutex(queueRWLocker(writerIgnoresReaders)), nil, nil, "rwmutex"},
		{"rw-readers-watch-first-writer", "a reader watches the first writer in the queue instead of the nearest one ahead of it, so that writer's release wakes readers still blocked by another", fuzz.Herd,
			RWMutex(queueRWLocker(readersWatchFirstWriter)), nil, nil, "rwmutex"},
	}
}
