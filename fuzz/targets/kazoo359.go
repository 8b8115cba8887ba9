package targets

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// python-zk/kazoo#359: kazoo's Queue as kazoo 2.0 to 2.2.1 had it (with
// b1462ef, the fix of kazoo177.go's bug, and before 57f64c0 of 2.3.0):
// _inner_get keeps the listing it got, reads and deletes its first child,
// and pops it only once taken.

func kazoo359() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#359",
		Title:  "Fixed Queue to clear children before retry",
		Recipe: "Queue, kazoo's distributed queue (kazoo.recipe.queue, kazoo 2.0 to 2.2.1)",
		Mechanism: "Queue._inner_get takes the first child of the listing it keeps; when another consumer took that child first, its get or its delete fails with NoNode, and _inner_get raises ForceRetryError for the client's KazooRetry, without dropping the listing. " +
			"The retry takes the same child again, fails the same way, and so on for ever, its backoff growing: the queue's other items wait while the consumer asks for an item that is gone.",
		Schedule:  "no fault: two consumers list the same items, and one takes the head while the other is about to",
		Symptom:   "Queue.get never returns, and keeps asking ZooKeeper for the same deleted node, with the queue full of other items",
		Fixed:     "fixed in kazoo 2.3.0 by this pull request (commit 57f64c0, 2015), which answers issue #352: the kept listing is dropped on NoNode, so the retry lists the queue again",
		Detectors: []fuzz.Detector{fuzz.Polling, fuzz.Liveness},
		Target:    SharedQueue(newKazooQueue22),
		// The bug needs no fault. The Queue sorts the names as text,
		// which the sequence wrap breaks, and takes any child for an item.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...), fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren()},
	}
}

// kazooQueue22 is Queue as kazoo 2.0 to 2.2.1 had it, on the port of
// kazoo177.go (its client, its paths and Put).
type kazooQueue22 struct{ *kazooQueue177 }

func newKazooQueue22(client fuzz.Client, p string) FIFOQueue {
	return kazooQueue22{newKazooQueue177(client, p).(*kazooQueue177)}
}

// Get is get(): kazoo 2.0's _inner_get under client.retry.
func (q kazooQueue22) Get() ([]byte, bool, error) { return q.get(q.innerGet) }

// innerGet is _inner_get of kazoo 2.0: the child is popped only once it
// is read and deleted, and a NoNode keeps the listing.
func (q kazooQueue22) innerGet() ([]byte, bool, error) {
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
	name := q.children[0]
	data, err := q.client.get(q.path+"/"+name, nil)
	if errors.Is(err, zk.ErrNoNode) {
		// "the first node has vanished in the meantime, try to get
		// another one" — with the same listing.
		return nil, false, fmt.Errorf("%w: %s vanished", errForceRetry, name)
	}
	if err != nil {
		return nil, false, err
	}
	if err := q.client.delete(q.path + "/" + name); errors.Is(err, zk.ErrNoNode) {
		// "someone else has removed the node in the meantime"
		return nil, false, fmt.Errorf("%w: %s removed by another", errForceRetry, name)
	} else if err != nil {
		return nil, false, err
	}
	q.children = q.children[1:]
	return data, true, nil
}
