package recipe

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Observe returns a channel that receives the election's leader: first the
// current one (the zero Leader when there is none), then one value per
// change of leader — a different Node, or the zero Leader when the seat
// falls vacant. A change of the leader's data alone is no change. The
// channel is closed when ctx is done, when the Conn is closed, or when a
// request fails in a way retrying cannot fix (an invalid path, a missing
// permission; Leader then reports the error).
//
// The channel is unbuffered and Observe does not look while a value waits
// to be received: a reader that falls behind gets the leader as it is when
// it reads, not every leader in between (as with etcd's Observe, the
// values are the leader's states, not a log). The leader reported may be a
// moment ahead of the candidate's own Campaign (see CurrentLeader).
//
// Observe is herd-free in spirit: while there is a leader it watches only
// the leader's node (a GetW), so that only its departure (or a change of
// its data) wakes the observer, not candidates joining or leaving the
// line; only while there is none does it watch the directory's children
// (a ChildrenW). Should a candidate arrive between the plain listing that
// found none and the watched one, the children watch is the one waited
// on until it fires. It holds one watch at a time. A directory that does
// not exist is created, with its parents, persistently as Campaign would,
// so that there is something to watch.
//
// Connection loss is retried with a backoff of at most half a second, for
// as long as ctx lasts; the watch survives a reconnection with the same
// session. When the session expires go-zookeeper ends every watch
// (EventNotWatching) and carries on with a new session, on which Observe
// syncs and reads again. (A new session is served by a member that has
// applied its createSession, and so all the old one saw — unless the
// ensemble runs local sessions, localSessionsEnabled, which are no
// transactions: then the member may be behind, and the sync makes up for
// it.) The goroutine behind the channel ends once
// ctx is done, even while a value waits to be received or a request waits
// for a reconnection. The last watch it set stays on the server until it fires
// or the session ends: go-zookeeper v1.0.4 cannot remove a watch.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader)
	go e.observe(ctx, ch)
	return ch
}

// observe is Observe's goroutine.
func (e *Election) observe(ctx context.Context, ch chan<- Leader) {
	defer close(ch)
	var last Leader
	sent := false
	// synced is set once a look has synced; syncedIn is the session the
	// last look began in.
	synced := false
	var syncedIn int64
	backoff := firstBackoff
	var evidence closeEvidence
	for {
		if ctx.Err() != nil || e.m.closed.Load() {
			return
		}
		var v view
		session := e.conn.SessionID()
		err, abandoned := callBounded(ctx, func() (err error) {
			// The first look syncs, and so does the first in a new
			// session. A later look in the same session follows an
			// event the client has seen, and the client never reads
			// from a member behind what it has seen in its session;
			// but go-zookeeper forgets what it has seen when its session
			// expires, and with local sessions its new session may read
			// from a member that has not applied the departure of a
			// leader already told.
			v, err = e.look(ctx, !synced || session != syncedIn)
			return err
		})
		if abandoned {
			return // ctx is done; the request's goroutine ends when the client answers
		}
		if err != nil {
			if !readLoss(err) && !errors.Is(err, zk.ErrClosing) {
				return // nothing retrying could fix, or ctx is done
			}
			if evidence.failed(err, &e.m.closed); e.m.closed.Load() {
				return
			}
			if pause(ctx, backoff) != nil {
				return
			}
			evidence.paused(e.conn, &e.m.closed)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		synced, syncedIn, backoff, evidence = true, session, firstBackoff, closeEvidence{}
		if v.known && (!sent || v.leader.Node != last.Node) {
			select {
			case ch <- v.leader:
				last, sent = v.leader, true
			case <-ctx.Done():
				return
			}
		}
		select {
		case ev := <-v.watch:
			if ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrClosing) {
				e.m.closed.Store(true)
				return
			}
			// The leader's node went or changed, the line changed, or the
			// session expired: look again.
		case <-ctx.Done():
			return
		}
	}
}

// view is what one look at the election found: the leader (zero when
// none) and the one watch armed, to wait on. known is false when the
// leader could not be told — the first candidate of a watched listing was
// gone before it could be read — and the watch, which that departure
// fires, must be waited on before looking again.
type view struct {
	leader Leader
	known  bool
	watch  <-chan zk.Event
}

// look reads the leader and arms one watch: on the leader's node, or, when
// there is none, on the directory's children. It creates the directory if
// it is missing.
func (e *Election) look(ctx context.Context, sync bool) (view, error) {
	conn, dir, nodeName := e.conn, e.m.dir, e.m.cfg.nodeName
	if sync {
		if _, err := conn.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return view{}, err
		}
	}
	for {
		children, _, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			if err := e.m.makeParents(ctx); err != nil {
				return view{}, err
			}
			continue
		}
		if err != nil {
			return view{}, err
		}
		queue := queueOrderIn(children, nodeName)
		if len(queue) == 0 {
			return e.lookVacant(ctx)
		}
		node := joinPath(dir, queue[0].name)
		data, stat, watch, err := conn.GetW(node)
		if errors.Is(err, zk.ErrNoNode) {
			// Gone since the listing, and GetW left no watch: list again.
			continue
		}
		if err != nil {
			return view{}, err
		}
		return view{leader: leaderOf(node, data, stat), known: true, watch: watch}, nil
	}
}

// lookVacant watches the children of a directory that a plain listing
// found without candidates. If one has come meanwhile, the children watch
// is armed all the same: it is the one to wait on, and it fires when that
// candidate, now the leader, goes.
func (e *Election) lookVacant(ctx context.Context) (view, error) {
	conn, dir := e.conn, e.m.dir
	for {
		children, _, watch, err := conn.ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			// Deleted since the listing (ChildrenW on a missing node sets
			// no watch): make it again.
			if err := e.m.makeParents(ctx); err != nil {
				return view{}, err
			}
			continue
		}
		if err != nil {
			return view{}, err
		}
		queue := queueOrderIn(children, e.m.cfg.nodeName)
		if len(queue) == 0 {
			return view{known: true, watch: watch}, nil
		}
		node := joinPath(dir, queue[0].name)
		data, stat, err := conn.Get(node)
		if errors.Is(err, zk.ErrNoNode) {
			return view{watch: watch}, nil
		}
		if err != nil {
			return view{}, err
		}
		return view{leader: leaderOf(node, data, stat), known: true, watch: watch}, nil
	}
}
