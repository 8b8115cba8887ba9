package fakelog_test

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/linearizability/fakelog"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

const base = "/lin"

// run is one recording on a fake server.
type run struct {
	stats   fakelog.Stats
	raw     linearizability.History
	settled linearizability.History
	log     []zkfake.Record
}

// fakeRun records cfg on a new fake server made with opts, inside a synctest
// bubble, and settles the history with the server's log. prepare, if set,
// configures the server before the clients start; wrap, if set, wraps each
// client's connection.
func fakeRun(t *testing.T, cfg fakelog.Config, opts []zkfake.Option, prepare func(*zkfake.Server), wrap func(zktest.Conn) zktest.Conn) run {
	t.Helper()
	var r run
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(append([]zkfake.Option{zkfake.WithSeed(cfg.Seed)}, opts...)...)
		defer srv.Close()
		admin, _, err := srv.Connect(10*time.Second, zkfake.WithMember(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Create(base, nil, 0, open); err != nil {
			t.Fatal(err)
		}
		admin.Close()
		if prepare != nil {
			prepare(srv)
		}
		n := 0
		cfg.Base = base
		cfg.Connect = func() (zktest.Conn, error) {
			// Spread the sessions over the members, in turn.
			conn, _, err := srv.Connect(4*time.Second, zkfake.WithMember(n))
			n++
			if err != nil || wrap == nil {
				return conn, err
			}
			return wrap(conn), nil
		}
		if cfg.Faults != nil {
			cfg.Faults = fake.Faults{Server: srv}
		}
		rec, err := fakelog.Record(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.stats = rec.Stats
		r.raw = rec.History()
		r.log = srv.Log()
		if r.settled, err = rec.Recorder.Settle(fakelog.GroundTruth(srv, r.raw)); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

// unknownWrites counts the operations of h with an unknown outcome that the
// checker keeps: writes and session expiries (unknown reads constrain
// nothing and are dropped).
func unknownWrites(h linearizability.History) (n int) {
	for _, op := range h.Operations {
		if !op.Unknown() {
			continue
		}
		if in, ok := op.Input.(linearizability.ZnodeInput); ok && in.Op >= linearizability.Get {
			continue
		}
		n++
	}
	return n
}

// check checks h and fails the test unless the outcome is want.
func check(t *testing.T, name string, h linearizability.History, timeout time.Duration, want linearizability.Outcome) (linearizability.Result, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := linearizability.CheckZnodes(h, timeout)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != want {
		path, werr := res.WriteReport(t.TempDir())
		t.Fatalf("%s: %v, want %v (report %s %v)", name, res, outcomeName(want), path, werr)
	}
	return res, took
}

func outcomeName(o linearizability.Outcome) string {
	switch o {
	case linearizability.Ok:
		return "Ok"
	case linearizability.Illegal:
		return "Illegal"
	}
	return "Unknown"
}

// (a) Clients run at once, with real goroutine concurrency inside the
// bubble, and no faults: every outcome is known and the history is legal.
func TestConcurrentClientsWithoutFaults(t *testing.T) {
	r := fakeRun(t, fakelog.Config{Clients: 5, Ops: 80, Seed: 1, Think: 3 * time.Millisecond}, nil, nil, nil)
	if r.stats.Unknown != 0 {
		t.Errorf("%d operations with unknown outcome without faults", r.stats.Unknown)
	}
	if r.stats.Operations != 400 {
		t.Errorf("recorded %d operations, want 400", r.stats.Operations)
	}
	res, took := check(t, "history", r.raw, time.Minute, linearizability.Ok)
	t.Logf("%v, checked in %v", res, took)
}

// (b) Lost requests and replies, partitions, expiries and crashes leave
// many outcomes unknown; the fake's log settles them, the settled history
// is legal and checks in milliseconds.
func TestFaultsSettledByTheLog(t *testing.T) {
	for _, lockstep := range []bool{true, false} {
		t.Run(fmt.Sprintf("lockstep=%v", lockstep), func(t *testing.T) {
			cfg := fakelog.Config{
				Clients: 4, Ops: 100, Seed: 2, Lockstep: lockstep, Think: 20 * time.Millisecond,
				Faults: fake.Faults{}, FaultRate: 0.04,
			}
			lossy := func(srv *zkfake.Server) { srv.LoseRandomReplies(0.05) }
			r := fakeRun(t, cfg, nil, lossy, nil)
			s := r.stats
			t.Logf("stats %+v", s)
			if s.LostConnections == 0 || s.Partitions == 0 || s.Expiries == 0 || s.Crashes == 0 {
				t.Fatalf("the run lacks a kind of fault: %+v", s)
			}
			if s.SessionChanges != 0 {
				t.Errorf("%d calls saw their session change", s.SessionChanges)
			}
			losses := map[string]int{}
			for _, rec := range r.log {
				if rec.Kind == zkfake.RecordFault {
					losses[rec.Result]++
				}
			}
			if losses["request lost"] == 0 || losses["reply lost"] == 0 {
				t.Errorf("the log shows %d lost requests and %d lost replies; want some of each", losses["request lost"], losses["reply lost"])
			}
			before, after := unknownWrites(r.raw), unknownWrites(r.settled)
			applied, dropped := settledCounts(r.raw, r.settled)
			if applied == 0 || dropped == 0 {
				t.Errorf("settling applied %d and dropped %d operations; the run should have both", applied, dropped)
			}
			if after > before/10 {
				t.Errorf("%d of %d unknown writes and expiries left after settling", after, before)
			}
			res, took := check(t, "settled", r.settled, time.Minute, linearizability.Ok)
			t.Logf("unknown writes and expiries: %d before settling, %d after (%d applied, %d dropped as never applied)", before, after, applied, dropped)
			t.Logf("settled: %v, checked in %v", res, took)
			// Unsettled, the same history may take the checker very
			// long (BenchmarkCheckRecorded measures it): it only must
			// not be illegal.
			start := time.Now()
			raw, err := linearizability.CheckZnodes(r.raw, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if raw.Outcome == linearizability.Illegal {
				path, _ := raw.WriteReport(t.TempDir())
				t.Fatalf("raw history: %v (report %s)", raw, path)
			}
			t.Logf("raw: %v, checked in %v", raw, time.Since(start))
		})
	}
}

// settledCounts compares a raw history with its settled form: how many
// unknown operations became pinned (applied) and how many were dropped.
func settledCounts(raw, settled linearizability.History) (applied, dropped int) {
	kept := make(map[[2]int64]linearizability.Operation)
	for _, op := range settled.Operations {
		kept[[2]int64{int64(op.ClientID), op.Call}] = op
	}
	for _, op := range raw.Operations {
		if !op.Unknown() {
			continue
		}
		s, ok := kept[[2]int64{int64(op.ClientID), op.Call}]
		switch {
		case !ok:
			// Settle moves an applied operation's call no earlier;
			// look it up by tag and input before calling it dropped.
			if findSettled(settled, op) {
				applied++
			} else {
				dropped++
			}
		case !s.Unknown():
			applied++
		}
	}
	return applied, dropped
}

func findSettled(h linearizability.History, op linearizability.Operation) bool {
	for _, s := range h.Operations {
		if s.ClientID == op.ClientID && s.Tag == op.Tag && reflect.DeepEqual(s.Input, op.Input) && !s.Unknown() {
			return true
		}
	}
	return false
}

// (c) With followers lagging, reads are stale — legal for ZooKeeper — and the
// history shows it: a read returned a write's data after another write to
// the same znode had completed, one that began after the first had ended.
func TestLaggingFollowers(t *testing.T) {
	lag := func(srv *zkfake.Server) {
		srv.SetLagging(1, true)
		srv.SetLagging(2, true)
	}
	cfg := fakelog.Config{Clients: 6, Ops: 150, Seed: 3, Lockstep: true}
	r := fakeRun(t, cfg, []zkfake.Option{zkfake.WithEnsemble(3)}, lag, nil)
	stale := staleReads(r.raw)
	if len(stale) == 0 {
		t.Fatal("no stale read in the history")
	}
	t.Logf("%d stale reads, e.g. %s", len(stale), stale[0])
	res, took := check(t, "history", r.raw, time.Minute, linearizability.Ok)
	t.Logf("%v, checked in %v", res, took)
}

// staleReads finds the gets of h that returned data overwritten before they
// were called: the get read data written by w1, while another write w2 of
// the same znode, called after w1 returned, returned before the get was
// called. Every write's data is unique, so the data names its write.
func staleReads(h linearizability.History) []string {
	type write struct {
		op   linearizability.Operation
		path string
	}
	byData := make(map[string]write)
	var writes []write
	for _, op := range h.Operations {
		in, ok := op.Input.(linearizability.ZnodeInput)
		if !ok || op.Unknown() || (in.Op != linearizability.Set && in.Op != linearizability.Create) {
			continue
		}
		out := op.Output.(linearizability.ZnodeOutput)
		if out.Err != nil {
			continue
		}
		path := in.Path
		if in.Op == linearizability.Create {
			path = out.Path
		}
		w := write{op, path}
		byData[in.Data] = w
		writes = append(writes, w)
	}
	var stale []string
	for _, op := range h.Operations {
		in, ok := op.Input.(linearizability.ZnodeInput)
		if !ok || in.Op != linearizability.Get || op.Unknown() {
			continue
		}
		out := op.Output.(linearizability.ZnodeOutput)
		w1, ok := byData[out.Data]
		if out.Err != nil || !ok {
			continue
		}
		for _, w2 := range writes {
			if w2.path == in.Path && w2.op.Call > w1.op.Return && w2.op.Return < op.Call {
				stale = append(stale, fmt.Sprintf("%v read %q, overwritten by %v (returned at %d, the read was called at %d)", in, out.Data, w2.op.Input, w2.op.Return, op.Call))
				break
			}
		}
	}
	return stale
}

// cachingConn is a broken client: it answers every Get of a path it has
// read before from a cache it never invalidates.
type cachingConn struct {
	zktest.Conn
	mu    sync.Mutex
	cache map[string]cachedGet
}

type cachedGet struct {
	data []byte
	stat *zk.Stat
}

func (c *cachingConn) Get(path string) ([]byte, *zk.Stat, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.cache[path]; ok {
		return g.data, g.stat, nil
	}
	data, stat, err := c.Conn.Get(path)
	if err == nil {
		c.cache[path] = cachedGet{data, stat}
	}
	return data, stat, err
}

// (d) A client that caches reads breaks read-your-writes; the check finds
// it and writes a report.
func TestBrokenClientIsIllegal(t *testing.T) {
	wrap := func(conn zktest.Conn) zktest.Conn {
		return &cachingConn{Conn: conn, cache: make(map[string]cachedGet)}
	}
	r := fakeRun(t, fakelog.Config{Clients: 3, Ops: 60, Seed: 4, Lockstep: true}, nil, nil, wrap)
	res, err := linearizability.CheckZnodes(r.raw, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != linearizability.Illegal {
		t.Fatalf("%v, want Illegal", res)
	}
	path, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "get") {
		t.Errorf("the report %s does not show the reads", path)
	}
	t.Logf("%v; report %s (%d bytes)", res, path, len(html))
}

// (e) In lockstep the same seed gives the same history, faults and all, and
// another seed another one.
func TestSameSeedSameHistory(t *testing.T) {
	record := func(seed uint64) linearizability.History {
		cfg := fakelog.Config{Clients: 4, Ops: 60, Seed: seed, Lockstep: true, Faults: fake.Faults{}, FaultRate: 0.05}
		lossy := func(srv *zkfake.Server) { srv.LoseRandomReplies(0.05) }
		return fakeRun(t, cfg, []zkfake.Option{zkfake.WithEnsemble(3)}, lossy, nil).raw
	}
	first, second := record(5), record(5)
	if len(first.Faults) == 0 || unknownWrites(first) == 0 {
		t.Fatalf("the run has %d faults and %d unknown writes: it exercises no fault", len(first.Faults), unknownWrites(first))
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two runs with seed 5 differ:\n%s", firstDifference(first, second))
	}
	if reflect.DeepEqual(first, record(6)) {
		t.Fatal("seeds 5 and 6 gave the same history")
	}
}

func firstDifference(a, b linearizability.History) string {
	for i := range min(len(a.Operations), len(b.Operations)) {
		if !reflect.DeepEqual(a.Operations[i], b.Operations[i]) {
			return fmt.Sprintf("operation %d: %+v\nvs %+v", i, a.Operations[i], b.Operations[i])
		}
	}
	return fmt.Sprintf("%d vs %d operations, %d vs %d faults", len(a.Operations), len(b.Operations), len(a.Faults), len(b.Faults))
}

// Record refuses a configuration it cannot run, with an error.
func TestRecordRefusesBadConfigs(t *testing.T) {
	srv := zkfake.NewServer()
	defer srv.Close()
	connect := func() (zktest.Conn, error) { c, _, err := srv.Connect(time.Second); return c, err }
	for _, tc := range []struct {
		name string
		cfg  fakelog.Config
		want string
	}{
		{"no connect", fakelog.Config{Base: base}, "Connect"},
		{"no base", fakelog.Config{Connect: connect}, "Base"},
		{"root base", fakelog.Config{Connect: connect, Base: "/"}, "Base"},
		{"fault rate without faults", fakelog.Config{Connect: connect, Base: base, FaultRate: 0.1}, "FaultRate"},
		{"fault rate above 1", fakelog.Config{Connect: connect, Base: base, FaultRate: 2, Faults: fake.Faults{Server: srv}}, "FaultRate"},
		{"lockstep outside a bubble", fakelog.Config{Connect: connect, Base: base, Lockstep: true}, "synctest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakelog.Record(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}
