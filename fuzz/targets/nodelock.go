package targets

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// nodeLock is a lock on one node of a fixed name, "lock" in the lock's
// directory. With wait set it checks the node is missing (watching it if
// not) and then creates it; otherwise it tries to create it and, if it
// exists, sleeps and tries again.
type nodeLock struct {
	conn    zktest.Conn
	dir     string
	flags   int32
	wait    bool
	holding bool
	token   int64
	session int64
}

func (l *nodeLock) Token() int64 {
	if !l.holding {
		return 0
	}
	return l.token
}

func (l *nodeLock) Lock(ctx context.Context) error {
	if l.holding {
		return nil
	}
	node := l.dir + "/lock"
	for tries := 0; ; tries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.wait {
			ok, _, watch, err := l.conn.ExistsW(node)
			switch {
			case err == nil && ok:
				select {
				case <-watch:
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			case err != nil && (!recipe.IsConnectionLoss(err) || closedConn(l.conn, err)):
				return err
			case err != nil:
				if err := pause(ctx, mutantBackoff); err != nil {
					return err
				}
				continue
			}
		}
		_, err := l.conn.Create(node, nil, l.flags, zktest.OpenACL)
		switch {
		case closedConn(l.conn, err):
			return zk.ErrClosing
		case err == nil:
			var st *zk.Stat
			var ok bool
			if err := retry(ctx, func() (err error) { ok, st, err = l.conn.Exists(node); return err }); err != nil {
				return err
			}
			if !ok {
				continue // gone with an expired session: try again
			}
			l.token, l.session = st.Czxid, st.EphemeralOwner
			if l.flags == 0 {
				l.session = l.conn.SessionID()
			}
			l.holding = true
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := makeDir(ctx, l.conn, l.dir); err != nil {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNodeExists):
			if !l.wait {
				if err := pause(ctx, mutantSpinPause); err != nil {
					return err
				}
			}
			continue
		case recipe.IsConnectionLoss(err), errors.Is(err, zk.ErrSessionExpired):
			if tries >= mutantRetryLimit {
				return err
			}
			if err := pause(ctx, mutantBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func (l *nodeLock) Unlock() error {
	if !l.holding {
		return zk.ErrNotLocked
	}
	l.holding, l.token = false, 0
	return deleteNode(l.conn, l.dir+"/lock", l.session)
}

// deleteNode deletes a lock node of session through lost replies. A node
// that is gone after a Delete whose reply was lost was deleted by that
// Delete, unless the session changed meanwhile (it expired, and took the
// node with it); one that is gone at the first try was lost before.
func deleteNode(conn zktest.Conn, path string, session int64) error {
	var doubt deleteDoubt
	return deleteNodeBounded(context.Background(), conn, path, session, &doubt)
}

// deleteNodeBounded is deleteNode, giving up when ctx ends: a Delete held
// up by a partition is left to the client, which may still send it.
// *doubt keeps what the release's Deletes may have done, for the next call
// for the same release.
func deleteNodeBounded(ctx context.Context, conn zktest.Conn, path string, session int64, doubt *deleteDoubt) error {
	for tries := 0; ; tries++ {
		if err := ctx.Err(); err != nil {
			return err // no Delete sent: nothing to doubt
		}
		answer := make(chan error, 1)
		go func() { answer <- conn.Delete(path, -1) }()
		var err error
		select {
		case err = <-answer:
		case <-ctx.Done():
			doubt.open = append(doubt.open, answer)
			return ctx.Err()
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if doubt.mayHaveDeleted() && conn.SessionID() == session {
				return nil
			}
			return errLost
		case errors.Is(err, zk.ErrSessionExpired):
			return errLost
		case closedConn(conn, err):
			return errLost // the node goes with the closed session
		case recipe.IsConnectionLoss(err) && tries < mutantRetryLimit:
			doubt.lost = true
			time.Sleep(mutantBackoff)
		default:
			return err
		}
	}
}

// deleteDoubt is what a release knows of its own Deletes: one of them was
// lost on the way (it may have applied), and those abandoned before their
// answer came, whose answers are read when they come.
type deleteDoubt struct {
	lost bool
	open []chan error
}

// mayHaveDeleted reports whether a Delete of the release deleted the node
// or may have.
func (d *deleteDoubt) mayHaveDeleted() bool {
	open := d.open[:0]
	for _, answer := range d.open {
		select {
		case err := <-answer:
			d.lost = d.lost || err == nil || recipe.IsConnectionLoss(err)
		default:
			open = append(open, answer)
		}
	}
	d.open = open
	return d.lost || len(d.open) > 0
}

// makeDir creates dir and its ancestors as persistent nodes, through
// connection loss, but not on a closed Conn.
func makeDir(ctx context.Context, conn zktest.Conn, dir string) error {
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		err := retryOpen(ctx, conn, func() error {
			_, err := conn.Create(p, nil, 0, zktest.OpenACL)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// retryFor runs op through connection loss for as long as limit.
func retryFor(ctx context.Context, limit time.Duration, op func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := op()
		if !recipe.IsConnectionLoss(err) || !time.Now().Before(deadline) {
			return err
		}
		if err := pause(ctx, mutantBackoff); err != nil {
			return err
		}
	}
}

// retry runs op until it returns anything but a connection loss.
func retry(ctx context.Context, op func() error) error {
	for tries := 0; ; tries++ {
		err := op()
		if !recipe.IsConnectionLoss(err) || tries >= mutantRetryLimit {
			return err
		}
		if err := pause(ctx, mutantBackoff); err != nil {
			return err
		}
	}
}

// pause waits for d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
