package fakelog_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/linearizability/fakelog"
	"github.com/zksim/zksim/zkfake"
)

var open = zk.WorldACL(zk.PermAll)

// session records the operations of one fake session, as a test's client.
type session struct {
	t    *testing.T
	rec  *linearizability.Recorder
	conn *zkfake.Conn
	n    int
}

// do performs and records one operation; an error that is not ZooKeeper's
// answer leaves its outcome unknown. It returns the operation's tag.
func (s *session) do(in linearizability.ZnodeInput) string {
	s.n++
	tag := string(rune('A' + s.n - 1))
	in.Session = s.conn.SessionID()
	op := s.rec.CallTagged(0, tag, in)
	var out linearizability.ZnodeOutput
	var stat *zk.Stat
	switch in.Op {
	case linearizability.Create:
		out.Path, out.Err = s.conn.Create(in.Path, []byte(in.Data), in.Flags, open)
	case linearizability.Delete:
		out.Err = s.conn.Delete(in.Path, in.Version)
	case linearizability.Set:
		stat, out.Err = s.conn.Set(in.Path, []byte(in.Data), in.Version)
	case linearizability.Get:
		var data []byte
		data, stat, out.Err = s.conn.Get(in.Path)
		out.Data = string(data)
	default:
		s.t.Fatalf("do: %v not supported", in.Op)
	}
	out.Stat = linearizability.StatOf(stat)
	switch {
	case out.Err == nil, errors.Is(out.Err, zk.ErrNoNode), errors.Is(out.Err, zk.ErrBadVersion), errors.Is(out.Err, zk.ErrNodeExists):
		op.Return(out)
	default:
		op.Unknown()
	}
	return tag
}

func create(path, data string) linearizability.ZnodeInput {
	return linearizability.ZnodeInput{Op: linearizability.Create, Path: path, Data: data}
}
func set(path, data string) linearizability.ZnodeInput {
	return linearizability.ZnodeInput{Op: linearizability.Set, Path: path, Data: data, Version: -1}
}
func del(path string) linearizability.ZnodeInput {
	return linearizability.ZnodeInput{Op: linearizability.Delete, Path: path, Version: -1}
}
func get(path string) linearizability.ZnodeInput {
	return linearizability.ZnodeInput{Op: linearizability.Get, Path: path}
}

// fates returns what truth says of each unknown operation of h, by tag.
func fates(h linearizability.History, truth linearizability.GroundTruth) map[string]linearizability.Fate {
	out := make(map[string]linearizability.Fate)
	for _, op := range h.Operations {
		if op.Unknown() && op.Tag != "" {
			out[op.Tag] = truth.Fate(op, time.Time{})
		}
	}
	return out
}

// TestTruthSettlesEachLoss records one session through every way a call can
// leave its outcome unknown on the fake, and checks the fate the log gives
// each.
func TestTruthSettlesEachLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSeed(1))
		defer srv.Close()
		admin, _, _ := srv.Connect(10 * time.Second)
		if _, err := admin.Create("/t", nil, 0, open); err != nil {
			t.Fatal(err)
		}
		conn, _, _ := srv.Connect(10 * time.Second)
		rec := linearizability.NewRecorder(nil)
		s := &session{t: t, rec: rec, conn: conn}

		s.do(create("/t/a", "one"))
		time.Sleep(time.Second)
		// Applied, its reply lost.
		srv.LoseReplies(zkfake.ReplyLoss{Op: "setData", Nth: 1, Applied: true})
		lostSetAt := time.Now()
		lostSet := s.do(set("/t/a", "two"))
		// Lost on the way to the server.
		srv.LoseReplies(zkfake.ReplyLoss{Op: "create", Nth: 1})
		lostCreate := s.do(create("/t/b", "three"))
		time.Sleep(time.Second)
		// The same delete twice in one instant: the first answered, the
		// second applied (failing) with its reply lost.
		srv.LoseReplies(zkfake.ReplyLoss{Op: "delete", Nth: 2, Applied: true})
		s.do(del("/t/a"))
		secondDeleteAt := time.Now()
		secondDelete := s.do(del("/t/a"))
		// Cut off: the call fails without reaching the server.
		conn.Partition()
		time.Sleep(7 * time.Second) // the client notices after 2/3 of 10s
		cutOff := s.do(create("/t/c", "four"))
		conn.Heal()
		time.Sleep(2 * time.Second) // the next reconnect round gets through
		if conn.State() != zk.StateHasSession {
			t.Fatalf("after the heal the client is %v", conn.State())
		}
		// A read whose reply is lost: applied, its answer not in the log.
		srv.LoseReplies(zkfake.ReplyLoss{Op: "getData", Nth: 1, Applied: true})
		lostRead := s.do(get("/t/b"))
		// The server expires the session; the client learns of it at
		// once and carries on with a new one.
		session := conn.SessionID()
		before := time.Now()
		time.Sleep(time.Second)
		expiredAt := time.Now()
		srv.Expire(session)
		time.Sleep(time.Second)
		rec.Observe(linearizability.SessionExpiry{Session: session}, nil, before, time.Now())
		s.do(create("/t/d", "five"))

		h := rec.History()
		truth := fakelog.GroundTruth(srv, h)
		got := fates(h, truth)
		want := map[string]linearizability.Fate{
			lostSet:      {Verdict: linearizability.Applied, At: lostSetAt, Output: linearizability.ZnodeOutput{Stat: linearizability.ZnodeStat{Version: 1}}},
			lostCreate:   {Verdict: linearizability.NotApplied},
			secondDelete: {Verdict: linearizability.Applied, At: secondDeleteAt, Output: linearizability.ZnodeOutput{Err: zk.ErrNoNode}},
			cutOff:       {Verdict: linearizability.NotApplied},
			lostRead:     {Verdict: linearizability.Applied, At: time.Time{}}, // At checked below
		}
		for tag, w := range want {
			g, ok := got[tag]
			if !ok {
				t.Errorf("operation %s is not unknown in the history", tag)
				continue
			}
			if tag == lostRead {
				if g.Verdict != linearizability.Applied || g.Output != nil {
					t.Errorf("lost read: got %+v, want applied with no output", g)
				}
				continue
			}
			if g.Verdict != w.Verdict || !g.At.Equal(w.At) || !sameOutput(g.Output, w.Output) {
				t.Errorf("operation %s: got %+v, want %+v", tag, g, w)
			}
		}
		for _, op := range h.Operations {
			if _, ok := op.Input.(linearizability.SessionExpiry); ok {
				f := truth.Fate(op, before)
				if f.Verdict != linearizability.Applied || !f.At.Equal(expiredAt) {
					t.Errorf("expiry: got %+v, want applied at %v", f, expiredAt)
				}
			}
		}

		settled, err := rec.Settle(truth)
		if err != nil {
			t.Fatal(err)
		}
		res, err := linearizability.CheckZnodes(settled, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != linearizability.Ok || res.UnknownOperations != 0 {
			t.Errorf("settled history: %v, want Ok with nothing unknown", res)
		}
	})
}

func sameOutput(a, b any) bool {
	x, okx := a.(linearizability.ZnodeOutput)
	y, oky := b.(linearizability.ZnodeOutput)
	if !okx || !oky {
		return a == nil && b == nil
	}
	return errors.Is(x.Err, y.Err) && x.Path == y.Path && x.Stat == y.Stat
}

// TestTruthRefusesToGuess: a session sends the same delete twice; the first
// never reaches the server (cut off), the second is applied with its reply
// lost. The log holds one record for two identical requests, and nothing
// tells whose it is: both stay undetermined.
func TestTruthRefusesToGuess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSeed(1))
		defer srv.Close()
		admin, _, _ := srv.Connect(10 * time.Second)
		admin.Create("/t", nil, 0, open)
		admin.Create("/t/a", nil, 0, open)
		conn, _, _ := srv.Connect(10 * time.Second)
		rec := linearizability.NewRecorder(nil)
		s := &session{t: t, rec: rec, conn: conn}

		conn.Partition()
		time.Sleep(7 * time.Second)
		first := s.do(del("/t/a"))
		conn.Heal()
		time.Sleep(2 * time.Second)
		srv.LoseReplies(zkfake.ReplyLoss{Op: "delete", Nth: 1, Applied: true})
		second := s.do(del("/t/a"))

		h := rec.History()
		got := fates(h, fakelog.GroundTruth(srv, h))
		for _, tag := range []string{first, second} {
			if f, ok := got[tag]; !ok || f.Verdict != linearizability.Undetermined {
				t.Errorf("delete %s: got %+v (unknown: %v), want undetermined", tag, f, ok)
			}
		}
	})
}

// TestTruthWithoutItsSessionsRequests: a request the history does not hold
// (made on a recorded session but not recorded) leaves the session's log
// unexplained, and nothing of that session is settled.
func TestTruthWithUnrecordedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSeed(1))
		defer srv.Close()
		conn, _, _ := srv.Connect(10 * time.Second)
		conn.Create("/t", nil, 0, open) // not recorded
		rec := linearizability.NewRecorder(nil)
		s := &session{t: t, rec: rec, conn: conn}
		srv.LoseReplies(zkfake.ReplyLoss{Op: "create", Nth: 1, Applied: true})
		lost := s.do(create("/t/a", "x"))

		h := rec.History()
		if f := fates(h, fakelog.GroundTruth(srv, h))[lost]; f.Verdict != linearizability.Undetermined {
			t.Errorf("got %+v, want undetermined", f)
		}
	})
}
