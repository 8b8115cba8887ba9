package fakelog_test

import (
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/linearizability/fakelog"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// The same harness against a real ensemble (ZK_SERVERS): whatever ZooKeeper
// does must be legal. There is no log to settle with, so the faulty run
// stays small enough to check with its unknown outcomes.
func TestRealEnsemble(t *testing.T) {
	servers := ensemble.Servers(t)
	target := ensemble.NewTarget(servers)
	runs := []struct {
		name string
		cfg  fakelog.Config
	}{
		{"concurrent", fakelog.Config{Clients: 6, Ops: 80, Seed: uint64(time.Now().UnixNano())}},
		{"faults", fakelog.Config{Clients: 3, Ops: 40, Seed: uint64(time.Now().UnixNano()), FaultRate: 0.05, MaxPartition: 6 * time.Second}},
	}
	for _, run := range runs {
		target.Run(t, run.name, func(t *testing.T, env zktest.Env) {
			e := env.(*ensemble.Env)
			cfg := run.cfg
			if cfg.FaultRate > 0 {
				cfg.Faults = e
			}
			n := 0
			cfg.Base = env.Base()
			cfg.Connect = func() (zktest.Conn, error) {
				// Spread the sessions over the members, in turn.
				conn, _ := e.ConnectTo(t, n%e.Members(), 4*time.Second)
				n++
				return conn, nil
			}
			t.Logf("seed %d", cfg.Seed)
			rec, err := fakelog.Record(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stats %+v", rec.Stats)
			if rec.Stats.SessionChanges > 0 {
				t.Logf("%d calls saw their session change", rec.Stats.SessionChanges)
			}
			start := time.Now()
			res, err := rec.Check(rec.History(), 2*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != linearizability.Ok {
				path, _ := res.WriteReport(t.TempDir())
				t.Fatalf("%v, want Ok (seed %d, report %s)", res, cfg.Seed, path)
			}
			t.Logf("%v, checked in %v", res, time.Since(start))
		})
	}
}
