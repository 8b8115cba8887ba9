package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/linearizability"
)

// python-zk/kazoo#177: kazoo's Queue (kazoo/recipe/queue.py) as pull
// request #177 first had it (commit dca0c88, on kazoo 1.3.1), over kazoo
// 1.3.1's client. The pull request made Queue.get keep the listing it got
// and take its children one by one; its first commit popped the child
// off the kept list before reading it, and a retried _inner_get skipped
// it. Its second commit (b1462ef, "Fixed _children race in
// Queue._inner_get()") pops the child only once it is read and deleted;
// both were merged together (d777b68, kazoo 2.0), so no release had the
// bug. No issue was filed: the pull request is the record.

func kazoo177() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#177",
		Title:  "Queue.get() no longer does get_children() and sorted() on every call",
		Recipe: "Queue, kazoo's distributed queue (kazoo.recipe.queue, pull request #177's first commit, on kazoo 1.3.1)",
		Mechanism: "Queue._inner_get pops the first child off the listing it keeps before it reads and deletes it, and Queue.get runs _inner_get under the client's KazooRetry. " +
			"A connection loss in the read or the delete makes the retry take the next child: the first one is skipped, still in the queue, and taken later out of order, or, when the lost reply was the delete's, deleted and never handed to anyone.",
		Schedule:  "a consumer's get lists two items or more, and its request to read or delete the first is lost with the connection; the retry, once the client has reconnected, reads and deletes the second",
		Symptom:   "get returns the second item while the first is still in the queue, or the first item is gone and no consumer ever got it",
		Fixed:     "fixed before the merge: b1462ef, the pull request's second commit (merged in d777b68, kazoo 2.0, 2014-04-22), pops the child only once it was read and deleted. That fix left a retry of a deleted child for ever, which kazoo 2.3.0 fixed (57f64c0, pull request #359, 2015): the kept listing is dropped on NoNode",
		Detectors: []fuzz.Detector{fuzz.Model},
		// The lost request in the story: the campaign draws no other
		// fault, and the port, with one consumer, gives the model
		// nothing else to find under it.
		Mark:   "never reaches the server",
		Target: PlainQueue(newKazooQueue177),
		// The bug needs a connection loss in a get, which a lost
		// request makes. A partition makes it too, but fails puts that
		// applied (their outcome unknown, the model may place them after
		// the takes, which hides the skip) and fails every retry until it
		// heals, which empties the kept listing. Without a sync, a
		// listing from a lagging follower, where a lost reply may take
		// the client, may miss an item: a sound queue's model finding
		// too. The Queue sorts the names as text, which the sequence
		// wrap breaks, and takes any child for an item.
		Options: []fuzz.Option{
			fuzz.WithoutFaults(allFaultsBut(fuzz.LostRequest)...),
			fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(),
		},
	}
}

// FIFOQueue is a distributed queue as its clients use it: Put adds an
// item at the tail; Get takes the head, or reports ok false when the
// queue is empty, without waiting.
type FIFOQueue interface {
	Put(value []byte) error
	Get() (value []byte, ok bool, err error)
}

// NewFIFOQueue makes the FIFOQueue one process uses, on its connection,
// for the queue at path.
type NewFIFOQueue func(client fuzz.Client, path string) FIFOQueue

// PlainQueue is the Target of a FIFO queue, described as a Recipe:
// client 0 is the queue's one consumer, and Gets items; the others
// produce, and Put items of their own (distinct in the whole case). The model is
// linearizability's queue model: every item put is taken at most once, in
// the order of the puts; a put or a get that failed has an unknown outcome
// (a get may have deleted the head). With one consumer, an item taken out
// of order cannot hide behind another consumer's take that overlaps it.
func PlainQueue(newQueue NewFIFOQueue) fuzz.Target { return fifoQueue(newQueue, 1) }

// SharedQueue is PlainQueue with two consumers, clients 0 and 1, which
// compete for the head.
func SharedQueue(newQueue NewFIFOQueue) fuzz.Target { return fifoQueue(newQueue, 2) }

// fifoQueue is the Recipe of a FIFO queue whose first consumers clients
// consume and the others produce.
func fifoQueue(newQueue NewFIFOQueue, consumers int) fuzz.Target {
	return fuzz.Recipe[*fifoClient]{
		Name: "queue",
		Path: "/queues/plain",
		New: func(_ context.Context, client fuzz.Client, dir string) *fifoClient {
			return &fifoClient{q: newQueue(client, dir), dir: dir, n: client.N}
		},
		Ops: []fuzz.Op[*fifoClient]{
			{Name: "Put", Enabled: func(c *fifoClient) bool { return c.n >= consumers }, Call: (*fifoClient).put},
			{Name: "Get", Enabled: func(c *fifoClient) bool { return c.n < consumers }, Call: (*fifoClient).get},
		},
		Model: linearizability.QueueModel(),
	}
}

// fifoClient is one process of the queue's Recipe.
type fifoClient struct {
	q    FIFOQueue
	dir  string
	n    int
	puts int
}

func (c *fifoClient) put(_ context.Context, call *fuzz.Call) error {
	c.puts++
	// Distinct across the processes that take the client's place too.
	item := fmt.Sprintf("c%d-%x-%d", c.n, call.Session(), c.puts)
	err := c.q.Put([]byte(item))
	in := linearizability.QueueInput{Queue: c.dir, Put: true, Item: item}
	if err != nil {
		call.RecordUnknown(in)
		return err
	}
	// An output, though the model ignores a put's: a nil one would
	// read as an outcome nobody learned.
	call.Record(in, linearizability.QueueOutput{})
	return nil
}

func (c *fifoClient) get(_ context.Context, call *fuzz.Call) error {
	value, ok, err := c.q.Get()
	in := linearizability.QueueInput{Queue: c.dir}
	if err != nil {
		call.RecordUnknown(in)
		return err
	}
	call.Record(in, linearizability.QueueOutput{Item: string(value), Empty: !ok})
	return nil
}

// kazooQueue177 is Queue (pull request #177's first commit, on kazoo
// 1.3.1) with its one priority, 100. kazoo's nested client.retry calls
// share one KazooRetry, whose reset by the inner call restarts the
// outer's backoff: the port gives each its own, which sleeps longer
// between a get's retries, and retries as often.
type kazooQueue177 struct {
	client      *kazooClient
	path        string
	ensuredPath bool
	children    []string
}

func newKazooQueue177(client fuzz.Client, p string) FIFOQueue {
	c := newKazooClient(client.Conn, true)
	c.failWhileConnecting = true
	return &kazooQueue177{client: c, path: p}
}

// ensurePaths is BaseQueue._ensure_paths (not retried).
func (q *kazooQueue177) ensurePaths() error {
	if !q.ensuredPath {
		if err := q.client.ensurePath(q.path); err != nil {
			return err
		}
		q.ensuredPath = true
	}
	return nil
}

// Put is put(value, priority=100): one create, not retried.
func (q *kazooQueue177) Put(value []byte) error {
	if err := q.ensurePaths(); err != nil {
		return err
	}
	_, err := q.client.create(fmt.Sprintf("%s/entry-%03d-", q.path, 100), value, false, true)
	return err
}

// Get is get(): _inner_get under client.retry.
func (q *kazooQueue177) Get() ([]byte, bool, error) { return q.get(q.innerGet) }

// get is Queue.get with innerGet for its version's _inner_get.
func (q *kazooQueue177) get(innerGet func() ([]byte, bool, error)) ([]byte, bool, error) {
	if err := q.ensurePaths(); err != nil {
		return nil, false, err
	}
	var data []byte
	var ok bool
	err := commandRetry(q.client).call(func() (err error) {
		data, ok, err = innerGet()
		return err
	})
	return data, ok, err
}

// innerGet is _inner_get.
func (q *kazooQueue177) innerGet() ([]byte, bool, error) {
	if len(q.children) == 0 {
		err := commandRetry(q.client).call(func() (err error) {
			q.children, err = q.client.getChildren(q.path)
			return err
		})
		if err != nil {
			return nil, false, err
		}
		slices.Sort(q.children)
	}
	if len(q.children) == 0 {
		return nil, false, nil
	}
	// The bug: the child leaves the kept listing before it is taken.
	name := q.children[0]
	q.children = q.children[1:]
	data, err := q.client.get(q.path+"/"+name, nil)
	if errors.Is(err, zk.ErrNoNode) {
		// The first node has vanished meanwhile: try another one.
		return nil, false, errForceRetry
	}
	if err != nil {
		return nil, false, err
	}
	err = q.client.delete(q.path + "/" + name)
	if errors.Is(err, zk.ErrNoNode) {
		// Another consumer took it meanwhile.
		return nil, false, errForceRetry
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}
