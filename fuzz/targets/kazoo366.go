package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// python-zk/kazoo#366: kazoo's LockingQueue (kazoo/recipe/queue.py, kazoo
// 2.5.0, before commit 7a8167d of 2.6.0), ported for put, get, consume
// and release. A consumer gets an entry by creating an ephemeral node of
// its id under taken/, and only then reads the entry.

func kazoo366() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#366",
		Title:  "LockingQueue bug",
		Recipe: "LockingQueue, kazoo's queue whose consumers lock an entry before they consume it (kazoo 2.5.0)",
		Mechanism: "LockingQueue's get lists the entries and the taken ones, and takes the first entry free by creating taken/<entry>, then reads the entry; if the entry is gone by then, it returns nothing. " +
			"An entry consumed by another consumer between the listing and the create (its entry and its taken node both deleted) lets the create succeed, and the taken node it made stays, for as long as the consumer's session.",
		Schedule:  "no fault: two consumers list the same free entry; one takes and consumes it before the other creates its taken node",
		Symptom:   "taken nodes of entries that no longer exist pile up under taken/, one per lost race, until their consumers' sessions end",
		Fixed:     "fixed in kazoo 2.6.0 (commit 7a8167d, 2018): _take deletes the taken node when the entry is gone",
		Detectors: []fuzz.Detector{fuzz.Leak},
		Mark:      "/taken/",
		Target:    LockingQueue(newKazooLockingQueue),
		// Every waiting consumer watches the entries' children, and
		// wakes at every put, by design: no herd of a lock's waiters.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutDetectors(fuzz.Herd)},
	}
}

// QueueConsumer is a locking queue as its clients use it: Put adds an
// entry; Get waits for one, locks it and returns its value (ctx ending
// the wait); Consume deletes the entry got, and Release unlocks it for
// others.
type QueueConsumer interface {
	Put(value []byte) error
	Get(ctx context.Context) ([]byte, error)
	Consume() (bool, error)
	Release() (bool, error)
}

// NewQueueConsumer makes the QueueConsumer one process uses, on its
// connection, for the queue at path.
type NewQueueConsumer func(client fuzz.Client, path string) QueueConsumer

// LockingQueue is the Target of a locking queue, described as a Recipe:
// each client Puts entries, Gets one (a joint call: it waits for
// another's Put), and Consumes or Releases the one it holds; Stop
// releases it. The leak check holds the queue to its taken nodes: once
// every client has stopped, none may remain.
func LockingQueue(newQueue NewQueueConsumer) fuzz.Target {
	return fuzz.Recipe[*queueClient]{
		Name: "locking-queue",
		Path: "/queues/jobs",
		New: func(_ context.Context, client fuzz.Client, dir string) *queueClient {
			return &queueClient{q: newQueue(client, dir), n: client.N}
		},
		Ops: []fuzz.Op[*queueClient]{
			{Name: "Put", Call: (*queueClient).put},
			{Name: "Get", Joint: true, Enabled: func(c *queueClient) bool { return !c.holding }, Call: (*queueClient).get},
			{Name: "Consume", Enabled: func(c *queueClient) bool { return c.holding }, Releases: true, Call: (*queueClient).consume},
			{Name: "Release", Enabled: func(c *queueClient) bool { return c.holding }, Releases: true, Call: (*queueClient).release},
		},
		Stop: func(c *queueClient, ctx context.Context, call *fuzz.Call) error {
			if !c.holding {
				return nil
			}
			return c.release(ctx, call)
		},
	}
}

// queueClient is one process of the locking queue's Recipe.
type queueClient struct {
	q       QueueConsumer
	n, puts int
	holding bool
}

func (c *queueClient) put(context.Context, *fuzz.Call) error {
	c.puts++
	return c.q.Put(fmt.Appendf(nil, "job %d of client %d", c.puts, c.n))
}

func (c *queueClient) get(ctx context.Context, _ *fuzz.Call) error {
	_, err := c.q.Get(ctx)
	c.holding = err == nil
	return err
}

func (c *queueClient) consume(context.Context, *fuzz.Call) error {
	_, err := c.q.Consume()
	c.holding = false
	return err
}

func (c *queueClient) release(context.Context, *fuzz.Call) error {
	_, err := c.q.Release()
	c.holding = false
	return err
}

// kazooLockingQueue is LockingQueue (kazoo 2.5.0) on the kazoo client.
type kazooLockingQueue struct {
	client                              *kazooClient
	path, entriesPath, lockPath, prefix string
	id                                  []byte
	ensured                             bool
	processing                          *lockedEntry
}

// lockedEntry is processing_element: the entry's name and value.
type lockedEntry struct {
	id    string
	value []byte
}

func newKazooLockingQueue(client fuzz.Client, p string) QueueConsumer {
	c := newKazooClient(client.Conn, false)
	return &kazooLockingQueue{client: c, path: p, entriesPath: p + "/entries", lockPath: p + "/taken", prefix: "entry-",
		id: []byte(c.newPrefix())}
}

// ensurePaths is BaseQueue._ensure_paths.
func (q *kazooLockingQueue) ensurePaths() error {
	if q.ensured {
		return nil
	}
	for _, p := range []string{q.lockPath, q.entriesPath} {
		if err := q.client.ensurePath(p); err != nil {
			return err
		}
	}
	q.ensured = true
	return nil
}

// Put is put(value, priority=100).
func (q *kazooLockingQueue) Put(value []byte) error {
	if err := q.ensurePaths(); err != nil {
		return err
	}
	_, err := q.client.create(fmt.Sprintf("%s/%s-%03d-", q.entriesPath, q.prefix[:len(q.prefix)-1], 100), value, false, true)
	return err
}

// Get is get(timeout=None), whose wait ends with ctx (a process that
// stops its consumer thread).
func (q *kazooLockingQueue) Get(ctx context.Context) ([]byte, error) {
	if err := q.ensurePaths(); err != nil {
		return nil, err
	}
	if q.processing != nil {
		return q.processing.value, nil
	}
	return q.innerGet(ctx)
}

func (q *kazooLockingQueue) innerGet(ctx context.Context) ([]byte, error) {
	flag := newKazooEvent()
	// lock is the handler's lock_object, held across requests: a
	// channel, so that a watcher waiting for it is durably blocked in a
	// synctest bubble (one waiting on a sync.Mutex is not).
	lock := make(chan struct{}, 1)
	canceled := false
	var value []*lockedEntry
	retry := commandRetry(q.client)
	var checkForUpdates func(ev *zk.Event)
	checkForUpdates = func(ev *zk.Event) {
		if ev != nil && ev.Type != zk.EventNodeChildrenChanged {
			return
		}
		lock <- struct{}{}
		defer func() { <-lock }()
		if canceled || flag.IsSet() {
			return
		}
		watch := func(ev zk.Event) { checkForUpdates(&ev) }
		var values, taken []string
		if err := retry.call(func() (err error) { values, err = q.client.getChildrenW(q.entriesPath, watch); return err }); err != nil {
			return // raised in the watcher's thread: logged
		}
		if err := retry.call(func() (err error) { taken, err = q.client.getChildrenW(q.lockPath, watch); return err }); err != nil {
			return
		}
		if available := filterLocked(values, taken); len(available) > 0 {
			if ret := q.take(available[0]); ret != nil {
				value = append(value, ret)
				flag.Set()
			}
		}
	}
	checkForUpdates(nil)
	flag.WaitContext(ctx, q.client, 0)
	lock <- struct{}{}
	defer func() { <-lock }()
	canceled = true
	if len(value) > 0 {
		q.processing = value[0]
		return value[0].value, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.New("kazoo: LockingQueue.get timed out")
}

// filterLocked is _filter_locked: the entries, sorted, but those taken.
func filterLocked(values, taken []string) []string {
	available := slices.Sorted(slices.Values(values))
	return slices.DeleteFunc(available, func(v string) bool { return slices.Contains(taken, v) })
}

// take is _take as 2.5.0 had it: NoNode from the entry's read returns
// nothing, and leaves the taken node it has just made.
func (q *kazooLockingQueue) take(id string) *lockedEntry {
	if _, err := q.client.create(q.lockPath+"/"+id, q.id, true, false); err != nil {
		return nil // NodeExists: already locked (any other error too, as an exception the watcher logs)
	}
	var value []byte
	err := commandRetry(q.client).call(func() (err error) { value, err = q.client.get(q.entriesPath+"/"+id, nil); return err })
	if err != nil {
		return nil // NoNode: already consumed
	}
	return &lockedEntry{id: id, value: value}
}

// holdsLock is holds_lock.
func (q *kazooLockingQueue) holdsLock() (bool, error) {
	if q.processing == nil {
		return false, nil
	}
	lockPath := q.lockPath + "/" + q.processing.id
	if err := q.client.request(func() error { _, err := q.client.conn.Sync(lockPath); return err }); err != nil {
		return false, err
	}
	var value []byte
	err := commandRetry(q.client).call(func() (err error) { value, err = q.client.get(lockPath, nil); return err })
	return err == nil && bytes.Equal(value, q.id), err
}

// Consume is consume(): the entry and its taken node deleted in one
// transaction.
func (q *kazooLockingQueue) Consume() (bool, error) {
	return q.finish(true)
}

// Release is release(): the taken node deleted.
func (q *kazooLockingQueue) Release() (bool, error) {
	return q.finish(false)
}

func (q *kazooLockingQueue) finish(consume bool) (bool, error) {
	holds, err := q.holdsLock()
	if err != nil || !holds {
		return false, err
	}
	ops := []any{&zk.DeleteRequest{Path: q.lockPath + "/" + q.processing.id, Version: -1}}
	if consume {
		ops = append([]any{&zk.DeleteRequest{Path: q.entriesPath + "/" + q.processing.id, Version: -1}}, ops...)
	}
	err = q.client.request(func() error { _, err := q.client.conn.Multi(ops...); return err })
	if err != nil {
		return false, err
	}
	q.processing = nil
	return true, nil
}
