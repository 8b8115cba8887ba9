package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file is the part of curator-framework that curatorlatch.go's
// LeaderLatch stands on beyond curatorframework.go: the background
// protected create, in the versions before and after CURATOR-498's fix,
// the guaranteed delete in the background, and the retry loop with its
// wait for the connection.

// createProtected is client.create().creatingParentContainersIfNeeded()
// .withProtection().withMode(EPHEMERAL_SEQUENTIAL).inBackground(callback)
// .forPath(path, data): CreateBuilderImpl.pathInBackground, run by
// CuratorFrameworkImpl's background loop (performBackgroundOperation,
// processBackgroundOperation, checkBackgroundRetry) under the retry
// policy, on a goroutine of its own; callback gets the created (or found)
// path on the event thread. Its first try creates; every later one first
// looks for a node of its protected id (findProtectedNodeInForeground),
// and takes the one it finds as the node it created — before 4.2.0
// whatever session made it. While not connected it waits, a second at a
// time, until the connection timeout has passed since the operation
// began, then counts a retry (CURATOR-52). Once the retries are spent it
// looks for its node to delete it (FindAndDeleteProtectedNodeInBackground)
// and calls back with the failure.
func (l *curatorLatch) createProtected(path string, data []byte, callback func(string, error)) {
	f := l.f
	dir, name := path[:strings.LastIndexByte(path, '/')], path[strings.LastIndexByte(path, '/')+1:]
	id := l.protectedID()
	adjusted := dir + "/" + curator2ProtectedPrefix + id + "-" + name
	answer := func(p string, err error) { f.run(func() { callback(p, err) }) }
	go func() {
		begun := time.Now()
		firstTime := true
		var sessionID int64 // ProtectedMode.sessionId
		retries := 0
		// checkBackgroundRetry: the retry policy allows another try
		// (after its sleep), or the operation gives up.
		retry := func(err error) bool {
			if retries < curatorRetries && curatorSleep(f.ctx, time.Second<<retries) {
				retries++
				return true
			}
			if f.ctx.Err() == nil {
				// ErrorCallback.retriesExhausted
				go findAndDeleteProtected(f, dir, id)
				answer("", err)
			}
			return false
		}
		for f.ctx.Err() == nil {
			if f.conn.State() != zk.StateHasSession {
				if time.Since(begun) < curatorConnectionTimeout {
					// sleepAndQueueOperation
					if !curatorSleep(f.ctx, time.Second) {
						return
					}
					continue
				}
				if retry(zk.ErrConnectionClosed) {
					continue
				}
				return
			}
			local := firstTime
			firstTime = false
			if l.v.protectedSession && sessionID == 0 {
				sessionID = f.conn.SessionID() // ProtectedMode.checkSetSessionId
			}
			if !local {
				found, err := l.findProtectedNode(dir, id, &sessionID)
				if err != nil {
					if curator2ShouldRetry(err) && retry(err) {
						continue
					}
					if !curator2ShouldRetry(err) {
						answer("", err)
					}
					return
				}
				if found != "" {
					answer(found, nil)
					return
				}
			}
			p, err := f.conn.Create(adjusted, data, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
			switch {
			case err == nil:
				answer(p, nil)
				return
			case errors.Is(err, zk.ErrNoNode):
				// backgroundCreateParentsThenNode: the parents
				// (ZKPaths.mkdirs with makeLastNode false), then the
				// operation queued again, not counted as a retry, and not
				// its first time any more; a retryable failure of the
				// parents is left to the next try.
				if err := curatorMkdirs(f.conn, dir); err != nil && !curator2ShouldRetry(err) {
					answer("", err)
					return
				}
			case curator2ShouldRetry(err):
				if !retry(err) {
					return
				}
			default:
				answer("", err)
				return
			}
		}
	}()
}

// findProtectedNode is findProtectedNodeInForeground: under the
// foreground RetryLoop, the child of dir whose name begins with the
// protected prefix (a missing dir is no node); from 4.2.0 on
// (ProtectedMode.validateFoundNode), once the session is not the one the
// create began in, a node found is the old session's: it is deleted
// (guaranteed, in the background) and not taken.
func (l *curatorLatch) findProtectedNode(dir, id string, sessionID *int64) (string, error) {
	f := l.f
	var found string
	err := curatorCallWithRetry(f, func() error {
		found = ""
		children, _, err := f.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		found = protectedChild(dir, children, id)
		if l.v.protectedSession {
			if now := f.conn.SessionID(); *sessionID != now {
				// log.info("Session has changed during protected mode
				// with ephemeral. old: {} new: {}")
				if found != "" {
					deleteGuaranteedInBackground(f, found)
					found = ""
				}
				*sessionID = now
			}
		}
		return nil
	})
	return found, err
}

// protectedID is UUID.randomUUID() as the protected prefix uses it, its
// 32 hex digits without the dashes (the form the harness elides from its
// stories), drawn from the session and the process's count so that a
// case replays the same.
func (l *curatorLatch) protectedID() string {
	a := splitmix(uint64(l.f.conn.SessionID()) ^ l.uuids.Add(1)*0x9e3779b97f4a7c15)
	return fmt.Sprintf("%016x%016x", a, splitmix(a))
}

// findAndDeleteProtected is FindAndDeleteProtectedNodeInBackground: the
// children listed in the background, again and again while that fails,
// and the node of the protected id deleted, guaranteed.
func findAndDeleteProtected(f *curatorFramework, dir, id string) {
	for f.ctx.Err() == nil {
		if !curatorBlockUntilConnected(f) {
			return
		}
		children, _, err := f.conn.Children(dir)
		if err == nil {
			prefix := curator2ProtectedPrefix + id + "-"
			if i := slices.IndexFunc(children, func(n string) bool { return strings.HasPrefix(n, prefix) }); i >= 0 {
				deleteGuaranteedInBackground(f, dir+"/"+children[i])
			}
			return
		}
		if !curator2ShouldRetry(err) || !curatorSleep(f.ctx, time.Second) {
			return
		}
	}
}

// deleteGuaranteedInBackground is client.delete().guaranteed()
// .inBackground().forPath(path): the delete under the framework's retry
// loop and, when that gives up with a retryable failure, again
// (FailedDeleteManager), until it goes through or finds the node gone,
// for as long as the process lives.
func deleteGuaranteedInBackground(f *curatorFramework, path string) {
	f.background(func() error { return f.conn.Delete(path, -1) }, func(err error) {
		if err != nil && curator2ShouldRetry(err) && f.ctx.Err() == nil {
			deleteGuaranteedInBackground(f, path)
		}
	})
}

// curatorCallWithRetry is RetryLoop.callWithRetry with the framework's
// policy: each try waits for the connection first, for up to the
// connection timeout; a retryable failure is tried again after the
// policy's sleep, while it allows.
func curatorCallWithRetry(f *curatorFramework, op func() error) error {
	for n := 0; ; n++ {
		if !curatorBlockUntilConnected(f) {
			return zk.ErrConnectionClosed
		}
		err := op()
		if err == nil || !curator2ShouldRetry(err) || n == curatorRetries || !curatorSleep(f.ctx, time.Second<<n) {
			return err
		}
	}
}

// curatorBlockUntilConnected is internalBlockUntilConnectedOrTimedOut: it
// returns once the Conn has a session or the connection timeout has
// passed; false once the process has ended.
func curatorBlockUntilConnected(f *curatorFramework) bool {
	for wait := curatorConnectionTimeout; f.conn.State() != zk.StateHasSession && wait > 0; wait -= curatorPoll {
		if !curatorSleep(f.ctx, curatorPoll) {
			return false
		}
	}
	return f.ctx.Err() == nil
}

// curatorSleep sleeps for d, and reports false if the process ended
// first.
func curatorSleep(ctx context.Context, d time.Duration) bool { return curator2Sleep(ctx, d) == nil }

// curatorMkdirs is ZKPaths.mkdirs for a node in dir: each missing
// ancestor and dir itself, persistent (see the file's comment), a
// NodeExists taken for success.
func curatorMkdirs(conn zktest.Conn, dir string) error {
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		ok, _, err := conn.Exists(p)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := conn.Create(p, nil, 0, zktest.OpenACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
