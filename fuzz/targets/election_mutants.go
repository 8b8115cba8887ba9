package targets

import (
	"context"
	"errors"

	"github.com/zksim/zksim/fuzz"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// electionMutants are the broken elections: two queue-lock elections that
// wait wrongly, and three recipe.Elections that believe what they should
// not.
func electionMutants() []Mutant {
	return []Mutant{
		{"election-herd", "candidates watch the whole directory's children instead of the candidate just ahead, so every change wakes every candidate", fuzz.Herd,
			Election(queueElector(watchChildren)), nil, nil, "election"},
		{"election-exists", "a candidate believes it leads as soon as its node exists, without checking that it is the lowest", fuzz.Model,
			Election(queueElector(existsLeads)), nil, nil, "election"},
		// Its Resign, which takes a leadership found gone for one given
		// up, also claims a leadership the model knows had ended.
		{"election-split-brain", "a leader never learns that its session expired: it goes on saying it leads, and writing with its old token", fuzz.StateReport,
			Election(func(conn zktest.Conn, path string) Elector {
				return &stubbornLeader{Elector: RecipeElection(conn, path)}
			}), nil, []fuzz.Detector{fuzz.Model}, "election"},
		{"election-leads-until-expired", "a leader goes on saying it leads while its connection is down, until it hears that its session expired (Curator's LeaderLatch acting only on LOST, CURATOR-460): with the connection down for longer than the session timeout, another may lead meanwhile", fuzz.StateReport,
			Election(func(conn zktest.Conn, path string) Elector {
				return &untilExpiredLeader{recipe.NewElection(conn, path, nil)}
			}), nil, nil, "election"},
		{"election-stale-observer", "an observer reads the leader once and watches its node, but does not watch again after the first change, so its stream misses every later leader", fuzz.Convergence,
			Election(func(conn zktest.Conn, path string) Elector {
				return &onceObserver{Elector: RecipeElection(conn, path), conn: conn, path: path}
			}), nil, nil, "election"},
	}
}

// queueElector makes an election on the queue lock with variant v: the
// leader holds the lock. Reading and observing the leader are
// recipe.Election's, on the same directory.
func queueElector(v variant) NewElector {
	return func(conn zktest.Conn, path string) Elector {
		return &lockElector{Elector: RecipeElection(conn, path), lock: &QueueLock{conn: conn, dir: path, v: v}}
	}
}

// lockElector campaigns with a queue lock. The lock does not follow its
// hold, so the elector says it leads while the lock holds in the session
// it was taken in (QueueLock.Held).
type lockElector struct {
	Elector
	lock *QueueLock
}

func (e *lockElector) Campaign(ctx context.Context) error { return e.lock.Lock(ctx) }
func (e *lockElector) Resign() error                      { return e.lock.Unlock() }
func (e *lockElector) Token() int64                       { return e.lock.Token() }
func (e *lockElector) IsLeader() bool                     { return e.lock.Held() }

// stubbornLeader remembers being elected until it resigns, whatever its
// session does, and takes a resignation that finds its leadership gone
// for one that worked.
type stubbornLeader struct {
	Elector
	token int64
}

func (e *stubbornLeader) Campaign(ctx context.Context) error {
	err := e.Elector.Campaign(ctx)
	if err == nil {
		e.token = e.Elector.Token()
	}
	return err
}

func (e *stubbornLeader) Resign() error {
	e.token = 0
	if err := e.Elector.Resign(); err != nil && !errors.Is(err, recipe.ErrLockLost) {
		return err
	}
	return nil
}

func (e *stubbornLeader) Token() int64   { return e.token }
func (e *stubbornLeader) IsLeader() bool { return e.token != 0 }

// untilExpiredLeader takes a suspended leadership for a held one: it leads
// until it hears the leadership is lost.
type untilExpiredLeader struct{ *recipe.Election }

func (e untilExpiredLeader) IsLeader() bool {
	st := e.State()
	return st == recipe.MutexHeld || st == recipe.MutexSuspended
}

// onceObserver's stream tells the leader there is, then the one after the
// first change, and nothing more.
type onceObserver struct {
	Elector
	conn zktest.Conn
	path string
}

func (e *onceObserver) Observe(ctx context.Context) <-chan recipe.Leader {
	out := make(chan recipe.Leader)
	go func() {
		defer close(out)
		send := func(l recipe.Leader) bool {
			select {
			case out <- l:
				return true
			case <-ctx.Done():
				return false
			}
		}
		l, err := recipe.CurrentLeader(ctx, e.conn, e.path)
		if err != nil && !errors.Is(err, recipe.ErrNoLeader) || !send(l) {
			return
		}
		var watch <-chan zk.Event
		if l.Node != "" {
			_, _, watch, err = e.conn.GetW(l.Node)
		} else {
			_, _, watch, err = e.conn.ChildrenW(e.path)
		}
		if err != nil {
			return
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return
		}
		if l, err = recipe.CurrentLeader(ctx, e.conn, e.path); err == nil || errors.Is(err, recipe.ErrNoLeader) {
			send(l)
		}
		<-ctx.Done()
	}()
	return out
}
