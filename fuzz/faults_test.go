package fuzz_test

import (
	"sync"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// TestSoundQueueLock holds the mutants' shared lock to the same campaign:
// what the campaign finds in a mutant is its one mistake.
func TestSoundQueueLock(t *testing.T) {
	t.Parallel()
	fuzz.Check(t, fuzz.Lock(targets.NewQueueLock))
}

// TestModeIsExplicit checks that the environment does not choose the
// mode: with ZK_SERVERS naming an ensemble that is not there, Check
// still runs its cases on the fake (on the ensemble, it would fail to
// connect).
func TestModeIsExplicit(t *testing.T) {
	t.Setenv(ensemble.ServersEnv, "127.0.0.1:1")
	fuzz.Check(t, fuzz.Lock(targets.NewQueueLock))
}

// TestPartitionsEndBothWays checks that partitions are drawn to end both
// ways — some healed in time for the session to survive, some after it
// expired — in at least a fifth of the partitions each, and that some
// survive a cut their client noticed (the session resumed on reconnect,
// watches re-armed), which is the path where a holder goes from suspended
// back to held.
func TestPartitionsEndBothWays(t *testing.T) {
	t.Parallel()
	f, cases := defaultFaultCounts(t)
	if f.Partitions < 100 {
		t.Fatalf("only %d partitions in %d cases", f.Partitions, cases)
	}
	if 5*f.PartitionsSurvived() < f.Partitions || 5*f.PartitionsExpired < f.Partitions {
		t.Errorf("of %d partitions, %d survived and %d expired: want at least a fifth each", f.Partitions, f.PartitionsSurvived(), f.PartitionsExpired)
	}
	if f.PartitionsResumed == 0 {
		t.Errorf("no session resumed after its client noticed a partition")
	}
	if f.PausesSurvived == 0 || f.PausesExpired == 0 {
		t.Errorf("pauses: %d thawed in time, %d expired: want some of each", f.PausesSurvived, f.PausesExpired)
	}
}

// defaultFaultCounts runs 300 cases of a default campaign against the
// sound queue lock, counting the faults drawn, and returns the counts and
// how many cases ran. The campaign is the same for every test that asks,
// and runs once.
func defaultFaultCounts(t *testing.T) (fuzz.Faults, int64) {
	faultCounts.once.Do(func() {
		faultCounts.f, faultCounts.cases = fuzz.CountFaults(t, fuzz.Lock(targets.NewQueueLock), nil, 300, 1)
	})
	t.Logf("%d cases: %s", faultCounts.cases, faultCounts.f)
	return faultCounts.f, faultCounts.cases
}

// faultCounts keeps defaultFaultCounts's campaign.
var faultCounts struct {
	once  sync.Once
	f     fuzz.Faults
	cases int64
}

// TestFaultsOfMinutesDrawn checks that a default campaign draws every fault
// that outlasts a recipe's timers, or reaches it late, and that each ends
// each way it can: quorum losses, some over a minute, some as a lost reply
// leaves; partitions over a minute, some survived; new sessions on a
// lagging follower; watch events held back, some until a later reply;
// sessions over a minute; and cases near a sequence wrap.
func TestFaultsOfMinutesDrawn(t *testing.T) {
	f, cases := defaultFaultCounts(t)
	for name, n := range map[string]int{
		"quorum losses": f.QuorumLosses, "quorum losses over a minute": f.QuorumLossesLong,
		"quorum losses with a lost reply": f.QuorumLossesWithReply,
		"partitions over a minute":        f.LongPartitions, "partitions over a minute survived": f.LongPartitionsSurvived,
		"new sessions on a lagging follower": f.LaggingNewSessions,
		"late watch events":                  f.LateEvents, "late watch events after a later reply": f.LateEventsAfterReply,
		"sessions over a minute": f.LongSessions, "cases near a wrap": f.WrapCases,
	} {
		if n == 0 {
			t.Errorf("no %s in %d cases", name, cases)
		}
	}
}

// TestWithoutFaults checks that a campaign leaves out the faults it is
// told to, and still draws the others.
func TestWithoutFaults(t *testing.T) {
	t.Parallel()
	without := []fuzz.Fault{fuzz.Partition, fuzz.Pause, fuzz.LostReply, fuzz.QuorumLoss, fuzz.LateEvent, fuzz.LaggingFollower}
	f, cases := fuzz.CountFaults(t, fuzz.Lock(targets.NewQueueLock), []fuzz.Option{fuzz.WithoutFaults(without...)}, 100, 1)
	t.Logf("%d cases without %v: %s", cases, without, f)
	for name, n := range map[string]int{"partitions": f.Partitions, "pauses": f.Pauses, "lost replies": f.LostReplies, "quorum losses": f.QuorumLosses, "late watch events": f.LateEvents,
		"lags": f.Lags, "new sessions on a lagging follower": f.LaggingNewSessions} {
		if n != 0 {
			t.Errorf("%d %s drawn, though left out", n, name)
		}
	}
	for name, n := range map[string]int{"lost requests": f.LostRequests, "expiries": f.Expiries, "crashes": f.Crashes} {
		if n == 0 {
			t.Errorf("no %s drawn in %d cases", name, cases)
		}
	}
}

// TestWithoutDetectors checks that a campaign reports no finding of a
// detector it leaves out: the spin lock, a poller that the polling
// detector finds within a few cases (and mutual exclusion too, when its
// Unlock deletes the next holder's node), found by neither.
func TestWithoutDetectors(t *testing.T) {
	t.Parallel()
	m, _ := targets.MutantByName("spin")
	opts := append([]fuzz.Option{fuzz.WithoutDetectors(fuzz.Polling, fuzz.MutualExclusion)}, m.Options...)
	f, cases := fuzz.Survey(t, m.Target, opts, 100, 1, nil)
	if f != nil && (f.Detector == fuzz.Polling || f.Detector == fuzz.MutualExclusion) {
		t.Fatalf("found by %s after %d cases, though left out: %s", f.Detector, cases, f.Summary)
	}
	if f, _ := fuzz.Survey(t, m.Target, m.Options, 100, 1, nil); f == nil || f.Detector != fuzz.Polling {
		t.Fatalf("the same campaign with every detector: %v, want a polling finding", f)
	}
}
