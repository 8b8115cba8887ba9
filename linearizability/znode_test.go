package linearizability_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
)

type stat = linearizability.ZnodeStat
type zout = linearizability.ZnodeOutput

func zop(op linearizability.ZnodeOp, session int64, path string) linearizability.ZnodeInput {
	return linearizability.ZnodeInput{Op: op, Session: session, Path: path, Version: -1}
}

func zcreate(session int64, path, data string, flags int32) linearizability.ZnodeInput {
	in := zop(linearizability.Create, session, path)
	in.Data, in.Flags = data, flags
	return in
}

func zset(session int64, path, data string, version int32) linearizability.ZnodeInput {
	in := zop(linearizability.Set, session, path)
	in.Data, in.Version = data, version
	return in
}

func zdelete(session int64, path string, version int32) linearizability.ZnodeInput {
	in := zop(linearizability.Delete, session, path)
	in.Version = version
	return in
}

func zerr(err error) zout { return zout{Err: err} }

// sequence builds a history of one client's operations, one after the
// other.
type sequence struct {
	builder
	now int64
}

func (s *sequence) then(in, out any) *sequence {
	s.op(0, s.now, s.now+1, in, out)
	s.now += 2
	return s
}

// realSequence replays, with the answers a real ZooKeeper 3.8.0 gave, a
// session's operations under a base znode: how Cversion counts creations
// and deletions, how sequence numbers count creations only, and the order
// in which errors are checked.
func realSequence() *sequence {
	s := new(sequence)
	s.then(zcreate(1, "/b/a", "", 0), zout{Path: "/b/a"}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 1, NumChildren: 1}}).
		then(zcreate(1, "/b/b", "", 0), zout{Path: "/b/b"}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 2, NumChildren: 2}}).
		then(zdelete(1, "/b/a", -1), zout{}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 3, NumChildren: 1}}).
		then(zcreate(1, "/b/b", "", 0), zerr(zk.ErrNodeExists)).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 3, NumChildren: 1}}).
		then(zcreate(1, "/b/s-", "", zk.FlagSequence), zout{Path: "/b/s-0000000002"}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 4, NumChildren: 2}}).
		then(zdelete(1, "/b/s-0000000002", -1), zout{}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 5, NumChildren: 1}}).
		then(zcreate(1, "/b/s-", "", zk.FlagSequence), zout{Path: "/b/s-0000000003"}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 6, NumChildren: 2}}).
		then(zcreate(1, "/b/b/c", "", 0), zout{Path: "/b/b/c"}).
		then(zdelete(1, "/b/b", 5), zerr(zk.ErrBadVersion)).
		then(zdelete(1, "/b/b", -1), zerr(zk.ErrNotEmpty)).
		then(zdelete(1, "/b/zz", 5), zerr(zk.ErrNoNode)).
		then(zset(1, "/b/zz", "", 3), zerr(zk.ErrNoNode)).
		then(zset(1, "/b/b", "x", 0), zout{Stat: stat{Version: 1, Cversion: 1, NumChildren: 1}}).
		then(zset(1, "/b/b", "x", 0), zerr(zk.ErrBadVersion)).
		then(zset(1, "/b/b", "x", -1), zout{Stat: stat{Version: 2, Cversion: 1, NumChildren: 1}}).
		then(zcreate(1, "/b/q/r", "", 0), zerr(zk.ErrNoNode)).
		then(zcreate(1, "/b/e", "", zk.FlagEphemeral), zout{Path: "/b/e"}).
		then(zcreate(1, "/b/e/x", "", 0), zerr(zk.ErrNoChildrenForEphemerals)).
		then(zcreate(1, "/b/e", "", 0), zerr(zk.ErrNodeExists)).
		then(zcreate(1, "/b/e/x", "", zk.FlagSequence), zerr(zk.ErrNoChildrenForEphemerals)).
		then(zop(linearizability.Exists, 1, "/b/e"), zout{Exists: true, Stat: stat{EphemeralOwner: 1}}).
		then(zcreate(1, "/b/q/r", "", zk.FlagSequence), zerr(zk.ErrNoNode)).
		then(zop(linearizability.Children, 1, "/b/zz"), zerr(zk.ErrNoNode)).
		then(zop(linearizability.Get, 1, "/b/zz"), zerr(zk.ErrNoNode)).
		then(zop(linearizability.Exists, 1, "/b/zz"), zout{}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 7, NumChildren: 3}}).
		then(zdelete(1, "/b/b/c", -1), zout{}).
		then(zop(linearizability.Exists, 1, "/b/b"), zout{Exists: true, Stat: stat{Version: 2, Cversion: 2}}).
		then(zdelete(1, "/b/e", -1), zout{}).
		then(zop(linearizability.Exists, 1, "/b"), zout{Exists: true, Stat: stat{Cversion: 8, NumChildren: 2}}).
		then(zop(linearizability.Children, 1, "/b"), zout{Children: []string{"s-0000000003", "b"}, Stat: stat{Cversion: 8, NumChildren: 2}}).
		then(zop(linearizability.Get, 1, "/b/b"), zout{Data: "x", Stat: stat{Version: 2, Cversion: 2}})
	return s
}

var baseB = linearizability.Znode{Path: "/b"}

func TestZnodesRealSequence(t *testing.T) {
	wantOutcome(t, checkZnodes(t, realSequence().h, baseB), linearizability.Ok)

	// Each answer above is pinned: change one and the history is illegal.
	for i, op := range realSequence().h.Operations {
		out := op.Output.(zout)
		var mutated []zout
		switch {
		case op.Input.(linearizability.ZnodeInput).Op == linearizability.Exists:
			mutated = append(mutated, zout{Exists: !out.Exists})
		case out.Err != nil:
			mutated = append(mutated, zout{})
		default:
			mutated = append(mutated, zerr(zk.ErrNoNode))
		}
		if out.Err == nil {
			if out.Path != "" {
				mutated = append(mutated, zout{Path: out.Path + "0"})
			}
			if out.Stat != (stat{}) || out.Exists {
				s := out
				s.Stat.Cversion++
				mutated = append(mutated, s)
				s = out
				s.Stat.Version++
				mutated = append(mutated, s)
			}
		}
		for _, m := range mutated {
			h := realSequence()
			h.h.Operations[i].Output = m
			res := checkZnodes(t, h.h, baseB)
			if res.Outcome != linearizability.Illegal {
				t.Errorf("%v with answer %+v instead of %+v: got %v, want Illegal", op.Input, m, out, res)
			}
		}
	}
}

func TestZnodesReads(t *testing.T) {
	get := func(session int64) linearizability.ZnodeInput { return zop(linearizability.Get, session, "/b/x") }
	value := func(data string, version int32) zout { return zout{Data: data, Stat: stat{Version: version}} }
	created := func() *builder {
		return new(builder).
			op(0, 0, 10, zcreate(1, "/b/x", "v0", 0), zout{Path: "/b/x"}).
			op(0, 20, 30, zset(1, "/b/x", "v1", -1), zout{Stat: stat{Version: 1}})
	}
	tests := []struct {
		name string
		h    *builder
		want linearizability.Outcome
	}{
		{"another session may read a stale value", created().
			op(1, 40, 50, get(2), value("v0", 0)),
			linearizability.Ok},
		{"another session may read a state before the znode existed", created().
			op(1, 40, 50, get(2), zerr(zk.ErrNoNode)),
			linearizability.Ok},
		{"a read never returns what was never written", created().
			op(1, 40, 50, get(2), value("v2", 0)),
			linearizability.Illegal},
		{"a session reads its own writes", created().
			op(0, 40, 50, get(1), value("v0", 0)),
			linearizability.Illegal},
		{"no stale read after sync", created().
			op(1, 32, 35, zop(linearizability.Sync, 2, "/b/x"), zout{}).
			op(1, 40, 50, get(2), value("v0", 0)),
			linearizability.Illegal},
		{"a sync that overlaps the write may miss it", created().
			op(1, 25, 35, zop(linearizability.Sync, 2, "/"), zout{}).
			op(1, 40, 50, get(2), value("v0", 0)),
			linearizability.Ok},
		{"reads of a session never go back", created().
			op(1, 40, 50, get(2), value("v1", 1)).
			op(1, 60, 70, get(2), value("v0", 0)),
			linearizability.Illegal},
		{"reads of different sessions may disagree in order", created().
			op(1, 40, 50, get(2), value("v1", 1)).
			op(2, 60, 70, get(3), value("v0", 0)),
			linearizability.Ok},
		{"a failed write shows the session the latest state", created().
			op(1, 32, 35, zcreate(2, "/b/x", "", 0), zerr(zk.ErrNodeExists)).
			op(1, 40, 50, get(2), value("v0", 0)),
			linearizability.Illegal},
		{"conditional writes are linearizable", new(builder).
			op(0, 0, 10, zcreate(1, "/b/x", "", 0), zout{Path: "/b/x"}).
			op(0, 20, 30, zset(1, "/b/x", "a", 0), zout{Stat: stat{Version: 1}}).
			op(1, 20, 30, zset(2, "/b/x", "b", 0), zout{Stat: stat{Version: 1}}),
			linearizability.Illegal},
		{"one conditional write wins", new(builder).
			op(0, 0, 10, zcreate(1, "/b/x", "", 0), zout{Path: "/b/x"}).
			op(0, 20, 30, zset(1, "/b/x", "a", 0), zout{Stat: stat{Version: 1}}).
			op(1, 20, 30, zset(2, "/b/x", "b", 0), zerr(zk.ErrBadVersion)).
			op(1, 40, 50, zop(linearizability.Sync, 2, ""), zout{}).
			op(1, 60, 70, get(2), value("a", 1)),
			linearizability.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOutcome(t, checkZnodes(t, tt.h.h, baseB), tt.want)
		})
	}
}

func TestZnodesEphemeralsAndExpiry(t *testing.T) {
	owner := stat{EphemeralOwner: 7}
	base := func() *builder {
		return new(builder).
			op(0, 0, 10, zcreate(7, "/b/e", "", zk.FlagEphemeral), zout{Path: "/b/e"}).
			expire(7, 20, 20)
	}
	t.Run("expiry deletes the session's ephemerals", func(t *testing.T) {
		h := base().
			op(1, 30, 31, zop(linearizability.Sync, 2, "/"), zout{}).
			op(1, 40, 50, zop(linearizability.Exists, 2, "/b/e"), zout{})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
	})
	t.Run("after a sync the ephemeral is gone", func(t *testing.T) {
		h := base().
			op(1, 30, 31, zop(linearizability.Sync, 2, "/"), zout{}).
			op(1, 40, 50, zop(linearizability.Exists, 2, "/b/e"), zout{Exists: true, Stat: owner})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Illegal)
	})
	t.Run("a stale read may still see it", func(t *testing.T) {
		h := base().
			op(1, 40, 50, zop(linearizability.Exists, 2, "/b/e"), zout{Exists: true, Stat: owner})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
	})
	t.Run("expiry changes the parent's child version", func(t *testing.T) {
		parent := linearizability.Znode{Path: "/b/p"}
		h := new(builder).
			op(0, 0, 10, zcreate(7, "/b/p/e", "", zk.FlagEphemeral), zout{Path: "/b/p/e"}).
			expire(7, 20, 20).
			op(1, 30, 31, zop(linearizability.Sync, 2, "/"), zout{}).
			op(1, 40, 50, zop(linearizability.Children, 2, "/b/p"), zout{Children: []string{}, Stat: stat{Cversion: 2}})
		wantOutcome(t, checkZnodes(t, h.h, parent), linearizability.Ok)
	})
	t.Run("another session's ephemerals stay", func(t *testing.T) {
		h := base().
			op(1, 30, 31, zop(linearizability.Sync, 2, "/"), zout{}).
			op(1, 40, 50, zcreate(2, "/b/e", "", 0), zout{Path: "/b/e"}).
			expire(8, 60, 60).
			op(1, 70, 80, zop(linearizability.Exists, 2, "/b/e"), zout{Exists: true})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
	})
}

func TestZnodesUnknownOutcomes(t *testing.T) {
	t.Run("unknown create seen later", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, zcreate(1, "/b/x", "a", 0), nil).
			op(1, 20, 30, zop(linearizability.Get, 2, "/b/x"), zout{Data: "a"})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
	})
	t.Run("unknown create never seen", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, zcreate(1, "/b/x", "a", 0), nil).
			op(1, 20, 30, zcreate(2, "/b/y", "b", 0), zout{Path: "/b/y"})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
	})
	t.Run("lost connection is an unknown outcome", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 10, zcreate(1, "/b/x", "a", 0), zerr(zk.ErrConnectionClosed)).
			op(1, 20, 30, zcreate(2, "/b/x", "b", 0), zerr(zk.ErrNodeExists)).
			op(1, 40, 50, zop(linearizability.Get, 2, "/b/x"), zerr(zk.ErrSessionExpired))
		res := checkZnodes(t, h.h, baseB)
		wantOutcome(t, res, linearizability.Ok)
		if res.Operations != 2 || res.UnknownOperations != 1 {
			t.Errorf("got %v; want the read with an unknown outcome dropped and the create kept as unknown", res)
		}
	})
	t.Run("unknown sequential create takes its number", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, zcreate(1, "/b/s-", "", zk.FlagSequence), nil).
			op(1, 20, 30, zcreate(2, "/b/s-", "", zk.FlagSequence), zout{Path: "/b/s-0000000001"})
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Ok)
		h.h.Operations[1].Output = zout{Path: "/b/s-0000000002"}
		wantOutcome(t, checkZnodes(t, h.h, baseB), linearizability.Illegal)
	})
	t.Run("initial stat sets the next sequence number", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 10, zcreate(1, "/b/s-", "", zk.FlagSequence), zout{Path: "/b/s-0000000005"})
		// Cversion 9 with one child: five creations, four deletions.
		parent := linearizability.Znode{Path: "/b", Stat: stat{Cversion: 9, NumChildren: 1}}
		child := linearizability.Znode{Path: "/b/old"}
		wantOutcome(t, checkZnodes(t, h.h, parent, child), linearizability.Ok)
	})
}

func TestCheckZnodesRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		h       *builder
		initial []linearizability.Znode
		want    string
	}{
		{"foreign input", new(builder).op(0, 0, 1, "get /x", zout{}), nil, "string"},
		{"foreign output", new(builder).op(0, 0, 1, zop(linearizability.Get, 1, "/x"), "v"), nil, "output"},
		{"unknown operation", new(builder).op(0, 0, 1, zop(99, 1, "/x"), zout{}), nil, "unknown znode operation"},
		{"sequential create under the base", new(builder).op(0, 0, 1, zcreate(1, "/base/s-", "", zk.FlagSequence), zout{Path: "/base/s-0000000000"}), nil, "sequence numbers"},
		{"child count does not match", new(builder), []linearizability.Znode{{Path: "/b", Stat: stat{NumChildren: 2}}, {Path: "/b/x"}}, "children"},
		{"impossible child version", new(builder), []linearizability.Znode{{Path: "/b", Stat: stat{Cversion: 1}}}, "Cversion"},
		{"orphan", new(builder), []linearizability.Znode{{Path: "/b"}, {Path: "/b/x/y"}}, "no parent"},
		{"duplicate", new(builder), []linearizability.Znode{{Path: "/b"}, {Path: "/b"}}, "twice"},
		{"invalid path", new(builder), []linearizability.Znode{{Path: "b"}}, "invalid path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := linearizability.CheckZnodes(tt.h.h, time.Second, tt.initial...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestZnodesPartitions(t *testing.T) {
	// Two unrelated znodes: each is checked on its own, and a violation on
	// one is found whatever the other does.
	h := new(builder).
		op(0, 0, 10, zcreate(1, "/b/x", "", 0), zout{Path: "/b/x"}).
		op(1, 0, 10, zcreate(2, "/c/y", "", 0), zout{Path: "/c/y"}).
		op(0, 20, 30, zop(linearizability.Get, 1, "/b/x"), zerr(zk.ErrNoNode))
	res := checkZnodes(t, h.h)
	wantOutcome(t, res, linearizability.Illegal)
	if res.Operations != 3 {
		t.Fatalf("got %v, want 3 operations", res)
	}
}
