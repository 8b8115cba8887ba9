package targets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// CURATOR-79: Curator's InterProcessMutex as it was in 2.6.0, whose
// protected create (CreateBuilderImpl.protectedPathInForeground) cleaned
// up after a ConnectionLossException alone. ZooKeeper's client waits for
// a reply in Object.wait (ClientCnxn.submitRequest), which an interrupt
// ends with an InterruptedException while the request, already queued,
// goes to the server all the same: the node is made, nobody knows its
// name, and nothing deletes it.
//
// The port is curator2mutex.go's InterProcessMutex (LockInternals'
// attemptLock and internalLockLoop, the guaranteed delete and release are
// the same in 2.6.0 as in 2.10.0) with the create path of 2.6.0 in this
// file: creatingParentsIfNeeded().withProtection(), RetryLoop.
// callWithRetry and RetryNTimes' sleeper as 2.6.0 had them, and the
// ZooKeeper calls of that path interruptible as Java's are. Left out:
// revocation (checkRevocableWatcher), lock node data, namespaces.

func curator79() KnownBug {
	return KnownBug{
		Name:   "CURATOR-79",
		Title:  "InterProcessMutex doesn't clean up after interrupt",
		Recipe: "InterProcessMutex, Curator's lock (2.6.0)",
		Mechanism: "attemptLock creates its protected ephemeral sequential node, and ZooKeeper's client waits for the reply in an interruptible wait; an interrupt there throws InterruptedException although the create, already sent, is applied. " +
			"protectedPathInForeground looks for the protected node to delete only after a ConnectionLossException, so the node stays, alive with the session, ahead of every later contender, the same client's too.",
		Schedule:  "a client's Lock is interrupted (cancelled, or its deadline passes) while its create waits for the server's reply, and the create is then applied",
		Symptom:   "acquire throws InterruptedException; the next acquire on the lock, in any client, waits for ever behind the orphaned node, until the interrupted client's session ends",
		Fixed:     "fixed in 2.7.0 (5398b72f and c92ffee9, apache/curator#35): protectedPathInForeground deletes the protected node in the background after any exception but a KeeperException other than ConnectionLoss",
		Detectors: []fuzz.Detector{fuzz.Liveness, fuzz.Leak},
		Mark:      "(ClientCnxn.submitRequest)",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			return newCurator79Mutex(newCurator2Mutex(newCurator2Client(conn), dir))
		}),
		// The bug needs an interrupt and nothing else: a Cancel, or a
		// drawn deadline, which every campaign draws. The other faults
		// lead to InterProcessMutex's other orphans and double holds
		// first (a protected create's retry that takes a node of the
		// session Curator gave up, CURATOR-498; the same node listed by
		// the lock loop, CURATOR-604), so they are left out. Past the int32 wrap the
		// queue, sorted by the text after "lock-", is out of order (two
		// holders), so the counter starts at zero; a child the lock did
		// not make sorts into its queue, so none is drawn. A timed
		// acquire that gives up
		// leaves its getData watch armed (Curator 2.x removes no
		// watcher), which wakes the client's next wait: a herd by the
		// harness's rule, not this bug.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.Cancel)...), fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(),
			fuzz.WithoutDetectors(fuzz.Herd)},
	}
}

// newCurator79Mutex is 2.6.0's InterProcessMutex as a fuzz.Locker:
// curator2mutex.go's mutex with the create path of 2.6.0 (create26).
func newCurator79Mutex(m *curator2Mutex) fuzz.Locker {
	m.create = func(ctx context.Context, path string) (string, error) { return create26(ctx, m.client, path) }
	return &curatorMutex{m: m}
}

// create26 is client.create().creatingParentsIfNeeded().withProtection()
// .withMode(EPHEMERAL_SEQUENTIAL).forPath(path) in 2.6.0:
// protectedPathInForeground over pathInForeground. Every try after the
// first looks for the protected node first
// (findProtectedNodeInForeground).
func create26(ctx context.Context, c *curator2Client, path string) (string, error) {
	dir, name := path[:strings.LastIndexByte(path, '/')], path[strings.LastIndexByte(path, '/')+1:]
	id := curator2UUID()
	adjusted := dir + "/" + curator2ProtectedPrefix + id + "-" + name
	first := true
	var created string
	err := callWithRetry26(ctx, c, func() error {
		created = ""
		if !first {
			found, err := findProtected26(ctx, c, dir, id)
			if err != nil {
				return err
			}
			created = found
		}
		first = false
		if created != "" {
			return nil
		}
		p, err := interruptible(ctx, "create", adjusted, func() (string, error) {
			return c.conn.Create(adjusted, nil, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
		})
		if errors.Is(err, zk.ErrNoNode) {
			if err := mkdirs26(ctx, c, dir); err != nil {
				return err
			}
			p, err = interruptible(ctx, "create", adjusted, func() (string, error) {
				return c.conn.Create(adjusted, nil, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
			})
		}
		created = p
		return err
	})
	// The bug: catch (KeeperException.ConnectionLossException e) alone.
	// An InterruptedException, which may come after the create was
	// applied, passes through with nothing deleted.
	if recipe.IsConnectionLoss(err) {
		go c.findAndDeleteProtectedNode(dir, id)
	}
	return created, err
}

// callWithRetry26 is RetryLoop.callWithRetry in 2.6.0 with RetryNTimes:
// like curator2Client.callWithRetry, but an interrupt during the retry's
// sleep makes allowRetry return false (SleepingRetry re-interrupts the
// thread and says no), so the failure that asked for the retry is thrown,
// not an InterruptedException.
func callWithRetry26(ctx context.Context, c *curator2Client, op func() error) error {
	for retry := 0; ; retry++ {
		if !c.started() {
			return errCurator2NotStarted
		}
		if err := c.blockUntilConnectedOrTimedOut(ctx); err != nil {
			return err
		}
		c.checkTimeouts()
		err := op()
		c.noteFailure(err)
		if err == nil || !curator2ShouldRetry(err) || retry >= curator2Retries || !c.started() {
			return err
		}
		if curator2Sleep(ctx, curator2RetrySleep) != nil {
			return err
		}
	}
}

// findProtected26 is findProtectedNodeInForeground: the child of dir with
// the protected prefix, within the retry loop, a missing dir no node.
func findProtected26(ctx context.Context, c *curator2Client, dir, id string) (string, error) {
	var found string
	err := callWithRetry26(ctx, c, func() error {
		children, err := interruptible(ctx, "getChildren", dir, func() ([]string, error) {
			children, _, err := c.conn.Children(dir)
			return children, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		found = protectedChild(dir, children, id)
		return nil
	})
	return found, err
}

// mkdirs26 is ZKPaths.mkdirs(zk, path, false): dir and each missing
// ancestor, persistent, a NodeExists taken for success, each call
// interruptible.
func mkdirs26(ctx context.Context, c *curator2Client, dir string) error {
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		ok, err := interruptible(ctx, "exists", p, func() (bool, error) {
			ok, _, err := c.conn.Exists(p)
			return ok, err
		})
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		_, err = interruptible(ctx, "create", p, func() (string, error) { return c.conn.Create(p, nil, 0, zktest.OpenACL) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// interruptible is a call of ZooKeeper's Java client as an interrupt
// meets it: ClientCnxn.submitRequest queues the request and then waits
// for its reply in Object.wait, which an interrupt ends with an
// InterruptedException, at once if the thread was interrupted before.
// The request goes on all the same: here the call runs on in its own
// goroutine, and reaches the server when the harness lets it.
func interruptible[T any](ctx context.Context, method, path string, call func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call()
		done <- result{v, err}
	}()
	// An interrupt that came first is felt at once, whether or not the
	// call could have returned too (the select would pick at random).
	if ctx.Err() == nil {
		select {
		case r := <-done:
			return r.v, r.err
		case <-ctx.Done():
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: %s %s interrupted while it waits for its reply (ClientCnxn.submitRequest)", errCurator2Interrupted, method, path)
}
