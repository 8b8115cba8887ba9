package difftest_test

import (
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake/difftest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestAgainstEnsemble runs generated sequences on the servers in
// ZK_SERVERS and on the fake, one sequence at a time, and reports every
// divergence as a minimal sequence. ZK_DIFF_N sets how many sequences
// (default 1000), ZK_DIFF_SEED the first seed (default 1).
func TestAgainstEnsemble(t *testing.T) {
	list := servers(t)
	n := envInt(t, "ZK_DIFF_N", 1000)
	first := envInt(t, "ZK_DIFF_SEED", 1)
	real, err := difftest.NewRealSide(list)
	if err != nil {
		t.Fatal(err)
	}
	// Without the servers' configuration the fake could not hold what
	// their /zookeeper/config does, and every read of it would diverge.
	if _, err := ensemble.ZooCfg(list); err != nil {
		t.Fatal(err)
	}
	fakeOptions := difftest.FakeOptions(real.Quorum, real.SASLScheme)
	defer func() {
		if err := real.Close(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}()
	checker := &difftest.Checker{
		Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) { return difftest.Run(real, seq) },
		Fake: func(seq difftest.Sequence) (*difftest.Transcript, error) {
			return runFake(t, &difftest.FakeSide{Options: fakeOptions}, seq)
		},
		Confirmations: 1,
		Known:         knownDivergence,
	}
	start := time.Now()
	reported, known, runs, unverified := 0, map[string]int{}, 0, 0
	var drawn difftest.Distribution
	for i := range n {
		seq := difftest.Generate(uint64(first+i), difftest.DefaultConfig())
		drawn.Add(seq)
		res, err := checker.Check(seq)
		runs += res.Runs
		if err != nil {
			t.Fatalf("%s: %v", seq.Name, err)
		}
		if res.Known != "" {
			known[res.Known]++
		}
		if res.Unverified {
			unverified++
		}
		if res.Divergence != nil {
			reported++
			t.Errorf("minimal divergence (from %s, %d ops):\n%s\nas first seen:\n%s", seq.Name, len(seq.Ops), res.Divergence, res.Original)
			if reported == 5 {
				t.Fatalf("stopping after %d divergences", reported)
			}
		}
	}
	for desc, count := range known {
		t.Logf("passed over a known divergence in %d sequences: %s", count, desc)
	}
	t.Logf("%d sequences from seed %d, %d runs on %v, in %v; %d left unverified by other clients' traffic; what they drew:\n%s",
		n, first, runs, list, time.Since(start).Round(time.Millisecond), unverified, drawn.String())
	// A few sequences may be drowned by a busy shared server; more than
	// that and this run has not checked what it claims to.
	if unverified > n/50 {
		t.Errorf("%d of %d sequences unverified: the servers are too busy for a differential run", unverified, n)
	}
}
