package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is Curator's InterProcessMutex over curator2.go's client:
// LockInternals and StandardLockInternalsDriver (curator-recipes 2.10.0,
// whose lock loop 4.x and 5.x keep), Java's monitor as LockInternals uses
// it, and the mutex as a fuzz.Locker.

// curator2Monitor is a Java object's monitor (monitor.go) as
// LockInternals uses it: a watcher's notifyAll is synchronized, so it
// takes the monitor, and cannot slip between a waiter's last read and its
// wait; an interrupted wait throws InterruptedException.
type curator2Monitor struct{ *monitor }

func newCurator2Monitor() *curator2Monitor { return &curator2Monitor{newMonitor()} }

// notifyAll is a synchronized notifyAll().
func (m *curator2Monitor) notifyAll() {
	m.enter()
	defer m.exit()
	m.monitor.notifyAll()
}

// wait is Object.wait(timeout), 0 for no timeout, called holding the
// monitor: it lets the monitor go until notifyAll, the timeout or an
// interrupt, and takes it again.
func (m *curator2Monitor) wait(ctx context.Context, timeout time.Duration) error {
	if err := m.monitor.wait(ctx, timeout); err != nil {
		return errCurator2Interrupted
	}
	return nil
}

// watch is usingWatcher(watcher) on a watch the call set: the watcher
// calls notifyAll on the event, or when the watch ends (go-zookeeper
// closes it on an expiry or a close).
func (m *curator2Monitor) watch(ch <-chan zk.Event) {
	go func() {
		<-ch
		m.notifyAll()
	}()
}

// curator2Mutex is InterProcessMutex (Curator 2.10.0, as on master up to
// 2.11.0) with its LockInternals and StandardLockInternalsDriver: one
// lease of a queue of "_c_<id>-lock-<seq>" nodes under basePath, each
// contender watching the node just ahead (getData with a watcher). One
// thread uses it, so threadData is one LockData.
type curator2Mutex struct {
	client   *curator2Client
	basePath string
	mon      *curator2Monitor // LockInternals' monitor

	lockPath  string // LockData.lockPath, "" without a hold
	lockCount int    // LockData.lockCount
	// existsWatch: before CURATOR-107's fix (2014), the loop watched the
	// node ahead with checkExists, and waited only if it was there.
	existsWatch bool
	// create makes the lock's node: the protected create of the port's
	// version (2.6.0's is curator79.go's).
	create func(ctx context.Context, path string) (string, error)
}

func newCurator2Mutex(client *curator2Client, basePath string) *curator2Mutex {
	m := &curator2Mutex{client: client, basePath: basePath, mon: newCurator2Monitor()}
	m.create = func(ctx context.Context, path string) (string, error) {
		return client.createProtectedEphemeralSequential(ctx, path, nil)
	}
	return m
}

// acquire is acquire() (timed false) or acquire(time, MILLISECONDS):
// InterProcessMutex.internalLock.
func (m *curator2Mutex) acquire(ctx context.Context, timed bool, wait time.Duration) (bool, error) {
	if m.lockPath != "" {
		m.lockCount++ // re-entering
		return true, nil
	}
	lockPath, err := m.attemptLock(ctx, timed, wait)
	if err != nil || lockPath == "" {
		return false, err
	}
	m.lockPath, m.lockCount = lockPath, 1
	return true, nil
}

// release is InterProcessMutex.release: LockData goes whatever the delete
// does (the finally block).
func (m *curator2Mutex) release(ctx context.Context) error {
	if m.lockPath == "" {
		return fmt.Errorf("java.lang.IllegalMonitorStateException: You do not own the lock: %s", m.basePath)
	}
	if m.lockCount--; m.lockCount > 0 {
		return nil
	}
	path := m.lockPath
	m.lockPath = ""
	return m.deleteOurPath(ctx, path)
}

// attemptLock is LockInternals.attemptLock: create, then the lock loop,
// all over again (while the retry policy allows) when the loop finds its
// node gone.
func (m *curator2Mutex) attemptLock(ctx context.Context, timed bool, wait time.Duration) (string, error) {
	start := time.Now()
	for retryCount := 0; ; retryCount++ {
		ourPath, err := m.create(ctx, m.basePath+"/"+curator2LockName)
		var has bool
		if err == nil {
			has, err = m.internalLockLoop(ctx, start, timed, wait, ourPath)
		}
		if errors.Is(err, zk.ErrNoNode) && curator2AllowRetry(ctx, retryCount) {
			continue
		}
		if err != nil || !has {
			return "", err
		}
		return ourPath, nil
	}
}

// internalLockLoop is LockInternals.internalLockLoop: list and sort the
// children; hold if among the first maxLeases (one), else watch the node
// maxLeases ahead and wait. Any failure, or the timeout, deletes our node
// (guaranteed).
func (m *curator2Mutex) internalLockLoop(ctx context.Context, start time.Time, timed bool, wait time.Duration, ourPath string) (have bool, err error) {
	doDelete := false
	defer func() {
		if err != nil {
			doDelete = true
		}
		if doDelete {
			if derr := m.deleteOurPath(ctx, ourPath); err == nil {
				err = derr
			}
		}
	}()
	for m.client.started() && !have {
		children, err := m.sortedChildren(ctx)
		if err != nil {
			return false, err
		}
		sequenceNodeName := ourPath[len(m.basePath)+1:]
		ourIndex := slices.Index(children, sequenceNodeName)
		if ourIndex < 0 {
			// StandardLockInternalsDriver.validateOurIndex
			return false, fmt.Errorf("Sequential path not found: %s: %w", sequenceNodeName, zk.ErrNoNode)
		}
		if ourIndex < 1 {
			have = true
			break
		}
		previous := m.basePath + "/" + children[ourIndex-1]
		m.mon.enter()
		// getData rather than exists, "to avoid leaving unneeded
		// watchers"; a NoNode means it was released: try again.
		err = m.client.callWithRetry(ctx, func() error {
			if m.existsWatch {
				there, _, ch, err := m.client.conn.ExistsW(previous)
				if err == nil {
					m.mon.watch(ch)
					if !there {
						err = zk.ErrNoNode
					}
				}
				return err
			}
			_, _, ch, err := m.client.conn.GetW(previous)
			if err == nil {
				m.mon.watch(ch)
			}
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			err = nil
		case err != nil:
		case timed:
			wait -= time.Since(start)
			start = time.Now()
			if wait <= 0 {
				doDelete = true // timed out - delete our node
				m.mon.exit()
				return false, nil
			}
			err = m.mon.wait(ctx, wait)
		default:
			err = m.mon.wait(ctx, 0)
		}
		m.mon.exit()
		if err != nil {
			return false, err
		}
	}
	return have, nil
}

// sortedChildren is LockInternals.getSortedChildren: the children sorted
// by the text after "lock-" (standardFixForSorting), stably.
func (m *curator2Mutex) sortedChildren(ctx context.Context) ([]string, error) {
	var children []string
	err := m.client.callWithRetry(ctx, func() (err error) {
		children, _, err = m.client.conn.Children(m.basePath)
		return err
	})
	if err != nil {
		return nil, err
	}
	fix := func(s string) string {
		if i := strings.LastIndex(s, curator2LockName); i >= 0 {
			return s[i+len(curator2LockName):]
		}
		return s
	}
	sorted := slices.Clone(children)
	slices.SortStableFunc(sorted, func(a, b string) int { return strings.Compare(fix(a), fix(b)) })
	return sorted, nil
}

// deleteOurPath is LockInternals.deleteOurPath: a guaranteed delete, a
// NoNode ignored ("already deleted (possibly expired session, etc.)").
func (m *curator2Mutex) deleteOurPath(ctx context.Context, path string) error {
	if err := m.client.deleteGuaranteed(ctx, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// curatorMutex is InterProcessMutex as a fuzz.Locker: Lock is acquire(),
// or acquire(time, MILLISECONDS) for a call with a deadline (its own
// timeout curator2Margin before the deadline); the call's ctx done is
// Thread.interrupt(), which its waits feel. Unlock is release(), which no
// interrupt reaches here.
type curatorMutex struct{ m *curator2Mutex }

func (l *curatorMutex) Lock(ctx context.Context) error {
	defer l.m.client.watchSession()()
	wait := time.Duration(0)
	d, timed := ctx.Deadline()
	if timed {
		wait = time.Until(d) - curator2Margin
	}
	ok, err := l.m.acquire(ctx, timed, wait)
	switch {
	case err != nil:
		return err
	case !ok && !timed:
		return fmt.Errorf("java.io.IOException: Lost connection while trying to acquire lock: %s", l.m.basePath)
	case !ok:
		return fmt.Errorf("acquire(%v, MILLISECONDS) returned false: not acquired in time", wait.Milliseconds())
	}
	return nil
}

func (l *curatorMutex) Unlock() error {
	defer l.m.client.watchSession()()
	return l.m.release(context.Background())
}
