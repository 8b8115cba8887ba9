package fuzz

import (
	"fmt"
	"strings"
	"time"
)

// Detector names what a Finding violates.
type Detector string

// The detectors.
const (
	// MutualExclusion: two clients whose sessions were both alive were in
	// the critical section at once, or porcupine found no order of the
	// recorded Lock and Unlock calls that a lock allows.
	MutualExclusion Detector = "mutual-exclusion"
	// Herd: one release, crash or expiry woke more than one waiter.
	Herd Detector = "herd"
	// Polling: a waiter asked the server again and again, each time after
	// sleeping on a timer, while nothing changed: a herd in time rather
	// than in watches, and a waste of the server a waiter on a watch
	// spares it.
	Polling Detector = "polling"
	// Liveness: with every fault healed, clients waited and nothing moved:
	// no Lock or Unlock returned for a long stretch of time.
	Liveness Detector = "liveness"
	// Leak: nodes, watches or sessions were left once every client had
	// unlocked and then closed its session.
	Leak Detector = "leak"
	// UnfencedWrite: the writes to the protected resource of a lock that
	// hands out fencing tokens are in no order its holds and tokens
	// allow: a stale holder's write was not refused. (Of a lock without
	// tokens, a campaign on the fake reports that once, in
	// Report.Tokenless; one on a real ensemble, as this finding.)
	UnfencedWrite Detector = "unfenced-write"
	// StateReport: a lock's account of its own hold (StateReporter:
	// State, Lost, and the changes told to its state listener) contradicts
	// what its calls returned or itself.
	StateReport Detector = "state-report"
	// Panic: the locker panicked. Not a property of locks, but a bug all
	// the same.
	Panic Detector = "panic"
	// Model: porcupine found no order of the operations a Recipe's clients
	// recorded, and the session expiries, that the recipe's model allows.
	Model Detector = "model"
	// Convergence: once every client had stopped and everything had
	// settled, what a Recipe's handle believed differed from what the
	// server held (Recipe.Settled): a cache that missed a change.
	Convergence Detector = "convergence"
)

// Finding is one violation, from the shrunk case rapid settled on.
type Finding struct {
	// Detector is what found it.
	Detector Detector
	// Summary says in one sentence what went wrong, naming the clients,
	// the steps of the Story and the fencing tokens involved: for
	// instance "client 1 acquired at step 14 with token 9 while client 0
	// had held since step 9 with token 7, both sessions alive (...)". For
	// a history porcupine finds illegal, the sentence names the first
	// acquisition (or write) that no order allows, and porcupine's own
	// verdict follows in parentheses.
	Summary string
	// Story is the case as a numbered list a person can follow: the
	// schedule's actions, each with what the clients and the server did.
	Story string
	// EventLog is the fake server's event log for the case, one record a
	// line: the ground truth the story was told from.
	EventLog string
	// HTML is the path of porcupine's visualization of the recorded
	// history, when one was written.
	HTML string
}

// String renders the finding for people: the summary, the story and where
// the visualization is.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\n%s", f.Detector, f.Summary, f.Story)
	if f.HTML != "" {
		fmt.Fprintf(&b, "\nporcupine's view of the history: %s\n", f.HTML)
	}
	return b.String()
}

// FencingChecks says whether cases write to a protected resource while they
// hold the lock, and check those writes.
type FencingChecks uint8

const (
	// FencingDrawn lets each case draw whether it checks fencing: the
	// default.
	FencingDrawn FencingChecks = iota
	// FencingAlways makes every case check fencing.
	FencingAlways
	// FencingNever makes no case check fencing.
	FencingNever
)

// Progress is a campaign's progress so far.
type Progress struct {
	// Cases is how many cases have run, shrinking runs included.
	Cases int
	// Steps is how many harness steps those cases took.
	Steps int
	// Findings is how many cases failed (while shrinking, one finding is
	// run many times over).
	Findings int
	// Shrinking is true once a finding is being shrunk.
	Shrinking bool
	// Elapsed is the wall time since the campaign began.
	Elapsed time.Duration
	// Faults counts the faults the cases injected so far, and how they
	// ended (see Report.Faults).
	Faults Faults
}

// Faults counts the faults a campaign's cases injected, and how the
// partitions and pauses ended: whether the session cut off survived, or
// expired. Counts cover the cases before the first finding (as
// Report.Cases does), on the fake only; actions a case drew but could not
// apply (a heal with nothing to heal) turn into moves and are not counted.
type Faults struct {
	// LostRequests and LostReplies count requests lost before the server
	// applied them, and replies lost after.
	LostRequests, LostReplies int
	// Partitions counts the partitions begun. Each ends one of three ways,
	// or is still open when its case ends (after a finding):
	// healed before the client noticed the cut (its connection simply
	// carries on); healed after the client noticed and dropped its
	// connection, and resumed at its next reconnect, session intact; or
	// with the session expired.
	Partitions          int
	PartitionsUnnoticed int
	PartitionsResumed   int
	PartitionsExpired   int
	// Pauses counts the processes frozen; each thawed with its session
	// alive (PausesSurvived) or expired (PausesExpired), or is still open.
	Pauses         int
	PausesSurvived int
	PausesExpired  int
	// Expiries counts the sessions the harness had the server expire (not
	// those that expired of a partition, a pause or a crash).
	Expiries int
	// Crashes counts the processes that crashed and were replaced.
	Crashes int
	// Lags counts the times a follower began to lag.
	Lags int
	// LongPartitions counts the partitions that lasted over a minute, and
	// LongPartitionsSurvived those of them the session outlived (a session
	// timeout over a minute, and a heal before it ran out).
	LongPartitions, LongPartitionsSurvived int
	// QuorumLosses counts the times a majority of the ensemble's members
	// stopped, QuorumLossesLong those that lasted over a minute, and
	// QuorumLossesWithReply those that came as a lost reply left (the
	// leader committed the write and went down with its quorum); no
	// session expires meanwhile, as no leader is there to expire it.
	QuorumLosses, QuorumLossesLong, QuorumLossesWithReply int
	// LaggingNewSessions counts the expiries after which the client's next
	// session opened on a lagging follower.
	LaggingNewSessions int
	// LongSessions counts the clients whose session timeout is over a
	// minute, and WrapCases the cases whose directories' sequence counters
	// start a few creates before the int32 wrap, the "%010d" width change
	// or the sign change.
	LongSessions, WrapCases int
	// LateEvents counts the watch events held back from a client's recipe
	// until after the reply to a later request of that client
	// (LateEventsAfterReply), or until the client had nothing else to do.
	LateEvents, LateEventsAfterReply int
}

// PartitionsSurvived is how many partitions the session outlived, whether
// or not the client noticed.
func (f Faults) PartitionsSurvived() int { return f.PartitionsUnnoticed + f.PartitionsResumed }

// add adds o's counts to f.
func (f *Faults) add(o Faults) {
	f.LostRequests += o.LostRequests
	f.LostReplies += o.LostReplies
	f.Partitions += o.Partitions
	f.PartitionsUnnoticed += o.PartitionsUnnoticed
	f.PartitionsResumed += o.PartitionsResumed
	f.PartitionsExpired += o.PartitionsExpired
	f.Pauses += o.Pauses
	f.PausesSurvived += o.PausesSurvived
	f.PausesExpired += o.PausesExpired
	f.Expiries += o.Expiries
	f.Crashes += o.Crashes
	f.Lags += o.Lags
	f.LongPartitions += o.LongPartitions
	f.LongPartitionsSurvived += o.LongPartitionsSurvived
	f.QuorumLosses += o.QuorumLosses
	f.QuorumLossesLong += o.QuorumLossesLong
	f.QuorumLossesWithReply += o.QuorumLossesWithReply
	f.LaggingNewSessions += o.LaggingNewSessions
	f.LongSessions += o.LongSessions
	f.WrapCases += o.WrapCases
	f.LateEvents += o.LateEvents
	f.LateEventsAfterReply += o.LateEventsAfterReply
}

// String renders the counts on one line, for people.
func (f Faults) String() string {
	return fmt.Sprintf("%d partitions (%d healed unnoticed, %d resumed after a reconnect, %d expired), "+
		"%d pauses (%d thawed in time, %d expired), %d lost requests, %d lost replies, %d expiries, %d crashes, %d lags",
		f.Partitions, f.PartitionsUnnoticed, f.PartitionsResumed, f.PartitionsExpired,
		f.Pauses, f.PausesSurvived, f.PausesExpired, f.LostRequests, f.LostReplies, f.Expiries, f.Crashes, f.Lags) +
		fmt.Sprintf(", %d partitions over a minute (%d survived), %d quorum losses (%d over a minute, %d with a lost reply), "+
			"%d new sessions on a lagging follower, %d late watch events (%d after a later reply), "+
			"%d sessions over a minute long, %d cases near a sequence wrap",
			f.LongPartitions, f.LongPartitionsSurvived, f.QuorumLosses, f.QuorumLossesLong, f.QuorumLossesWithReply,
			f.LaggingNewSessions, f.LateEvents, f.LateEventsAfterReply, f.LongSessions, f.WrapCases)
}

// CasesPerSecond is the rate at which cases ran.
func (p Progress) CasesPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Cases) / p.Elapsed.Seconds()
}

// Report is what a campaign found.
type Report struct {
	// Name is the campaign's name (WithName), Seed its seed: with the
	// count of cases they replay it.
	Name string
	Seed uint64
	// Cases is how many cases ran before the first finding, or in all if
	// there was none, in the order of their indices (with several workers,
	// cases past the first finding may have run too: they are not
	// counted, nor in Steps and Faults); Runs adds the runs spent
	// shrinking.
	Cases, Runs int
	// Steps is how many harness steps the counted cases took; Elapsed,
	// the campaign's wall time.
	Steps   int
	Elapsed time.Duration
	// Searched is the wall time of the search for a finding, before any
	// shrinking: with one worker, the time it took to find it.
	Searched time.Duration
	// Findings holds the shrunk finding, if any: rapid stops at the first
	// failing case and shrinks it.
	Findings []Finding
	// FailFile is rapid's fail file for the finding; a later campaign of
	// the same Name run from the same directory replays it first.
	FailFile string
	// Stopped reports that ctx ended the campaign before it was done.
	Stopped bool
	// Faults counts the faults the cases injected and how they ended.
	Faults Faults
	// Tokenless, for a lock that hands out no fencing token, is what it
	// cannot promise, as the first case that showed it told it: a holder
	// whose session ended wrote to the protected resource, and nothing
	// refused it. It is reported once, not as a finding: the campaign
	// goes on looking for the lock's bugs.
	Tokenless string
}
