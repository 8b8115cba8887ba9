package fuzz

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake/zktest"
	"pgregory.net/rapid"
)

// Locker is the lock under test: what a simulated client calls in its loop
// of Lock, critical section, Unlock. Lock must return once ctx is done.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock() error
}

// NewLocker makes the Locker one client uses, on that client's connection,
// for the lock whose nodes live under path. It is called on the client's
// own goroutine, so it may talk to the server, but most lockers (like
// recipe.NewMutex) wait for Lock to do so.
type NewLocker func(conn zktest.Conn, path string) Locker

// Fencer is a Locker that hands out fencing tokens, as recipe.Mutex does.
// When a case checks fencing, a holder writes to the protected resource with
// Token; the resource refuses a token older than the newest it has
// accepted, so a holder whose session expired behind its back cannot
// overwrite a newer holder's work. Token returns 0 when the locker knows it
// does not hold the lock; the client then skips its write.
type Fencer interface {
	Token() int64
}

// Detector names what a Finding violates.
type Detector string

// The detectors.
const (
	// MutualExclusion: two clients whose sessions were both alive were in
	// the critical section at once, or porcupine found no order of the
	// recorded Lock and Unlock calls that a lock allows.
	MutualExclusion Detector = "mutual-exclusion"
	// Herd: one release, crash or expiry woke more than one waiter, or a
	// waiter polled the server while nothing changed.
	Herd Detector = "herd"
	// Liveness: with every fault healed, clients waited and nothing moved:
	// no Lock or Unlock returned for a long stretch of time.
	Liveness Detector = "liveness"
	// Leak: nodes, watches or sessions were left once every client had
	// unlocked and then closed its session.
	Leak Detector = "leak"
	// UnfencedWrite: a holder whose session had expired wrote to the
	// protected resource and nothing refused it.
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
	Detector Detector
	// Summary says in one sentence what went wrong, naming the clients,
	// the steps of the Story and the fencing tokens involved: for
	// instance "client 2 acquired at step 14 with token 9 while client 1
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

// config is a campaign's settings, as its Options set them; the zero
// value, normalized, is the default campaign.
type config struct {
	Name          string
	Cases         int
	Seed          uint64
	Clients       int
	Steps         int
	Workers       int
	Shard, Shards int
	Fencing       FencingChecks
	HTMLDir       string
	NoFailFile    bool
	ShrinkTime    time.Duration
	Progress      func(Progress)
	Output        io.Writer
	Servers       []string
}

// Option sets one thing about a campaign: Check, Run and Fuzz take them,
// and a campaign without any is the default one. Options that only Run
// heeds say so; a test's Check takes its count of cases and its seed from
// rapid's flags instead.
type Option func(*config)

// WithName names the campaign: the test name rapid reports and the
// directory of its fail files (testdata/rapid/<name>/, relative to the
// working directory). Default "zkfuzz". Run only.
func WithName(name string) Option { return func(c *config) { c.Name = name } }

// WithCases sets how many cases Run tries before it gives up looking
// (default 100). Check takes it from -rapid.checks instead.
func WithCases(n int) Option { return func(c *config) { c.Cases = n } }

// WithSeed seeds the campaign; 0, the default, picks one at random
// (Report.Seed tells which). Check takes it from -rapid.seed instead.
func WithSeed(seed uint64) Option { return func(c *config) { c.Seed = seed } }

// WithClients sets the most clients a case runs, from 2 to 8 (default
// 5); each case draws how many, from 2 up to this.
func WithClients(n int) Option { return func(c *config) { c.Clients = n } }

// WithSteps sets the most actions a case's schedule holds (default 80).
func WithSteps(n int) Option { return func(c *config) { c.Steps = n } }

// WithWorkers sets how many cases Run runs at once (default GOMAXPROCS).
// Case k of a campaign is the same case whichever worker runs it, and the
// first failing case by index is the one reported, so the report is the
// same with one worker or many. Check runs its cases one after another.
func WithWorkers(n int) Option { return func(c *config) { c.Workers = n } }

// WithShard makes Run run one slice of the campaign's cases: shard (from
// 1) of shards takes every shards-th case index, from shard-1. Shards
// together run each case once, so a CI matrix of shards jobs, each with
// the same seed and count of cases, runs one campaign; a shard's finding
// replays with its own shard, shards, seed and count of cases.
func WithShard(shard, shards int) Option {
	return func(c *config) { c.Shard, c.Shards = shard, shards }
}

// WithFencing sets whether cases check fencing (default FencingDrawn).
func WithFencing(f FencingChecks) Option { return func(c *config) { c.Fencing = f } }

// WithHTMLDir sets where porcupine's HTML reports go; default
// linearizability.DefaultReportDir().
func WithHTMLDir(dir string) Option { return func(c *config) { c.HTMLDir = dir } }

// WithoutFailFile stops Run from writing rapid's fail file.
func WithoutFailFile() Option { return func(c *config) { c.NoFailFile = true } }

// WithShrinkTime bounds the time rapid spends shrinking a failing case
// (default 30s, rapid's own). Run only; a test's Check takes it from
// -rapid.shrinktime.
func WithShrinkTime(d time.Duration) Option { return func(c *config) { c.ShrinkTime = d } }

// WithProgress has Run call fn about four times a second, and once at
// the end, with the campaign's progress so far.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.Progress = fn } }

// WithOutput sends what the testing package and rapid print while Run
// works (rapid's own account of a failure, how to replay it) to w.
// Default: discarded; the Report holds what matters.
func WithOutput(w io.Writer) Option { return func(c *config) { c.Output = w } }

// OnEnsemble runs the campaign against the real ZooKeeper ensemble at
// servers (client addresses, loopback IPs only, as ensemble.ParseServers
// accepts) instead of the fake, in real time: see the package
// documentation. With no servers it changes nothing. Only this option
// chooses the mode: the package reads no environment variable, so a
// test's cases and its fail files run on the fake wherever it runs.
// Commands and tests that take the ensemble from ZK_SERVERS pass it here
// themselves.
func OnEnsemble(servers ...string) Option {
	return func(c *config) {
		if len(servers) > 0 {
			c.Servers = append([]string(nil), servers...)
		}
	}
}

const (
	defaultName    = "zkfuzz"
	defaultCases   = 100
	defaultClients = 5
	defaultSteps   = 80
	minClients     = 2
	maxClients     = 8
)

// configure applies opts to the default campaign's settings, and fills in
// the defaults and bounds they leave.
func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.Name == "" {
		c.Name = defaultName
	}
	if c.Cases <= 0 {
		c.Cases = defaultCases
	}
	if c.Clients == 0 {
		c.Clients = defaultClients
	}
	c.Clients = min(max(c.Clients, minClients), maxClients)
	if c.Steps <= 0 {
		c.Steps = defaultSteps
	}
	return c
}

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
	Elapsed   time.Duration
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
	// stopped, and QuorumLossesLong those that lasted over a minute; no
	// session expires meanwhile, as no leader is there to expire it.
	QuorumLosses, QuorumLossesLong int
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
		fmt.Sprintf(", %d partitions over a minute (%d survived), %d quorum losses (%d over a minute), "+
			"%d new sessions on a lagging follower, %d late watch events (%d after a later reply), "+
			"%d sessions over a minute long, %d cases near a sequence wrap",
			f.LongPartitions, f.LongPartitionsSurvived, f.QuorumLosses, f.QuorumLossesLong,
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
	Name string
	Seed uint64
	// Cases is how many cases ran before the first finding, or in all if
	// there was none, in the order of their indices (with several workers,
	// cases past the first finding may have run too: they are not
	// counted, nor in Steps and Faults); Runs adds the runs spent
	// shrinking.
	Cases, Runs int
	Steps       int
	Elapsed     time.Duration
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
}

// Check runs a campaign of cases against target — a Recipe of your own,
// a lock (Lock), or one of the package's recipes (RecipeElection...) — and
// fails t with the shrunk counterexample: its detector, its story, the
// path of porcupine's HTML report, and rapid's instructions to replay it
// (rapid also saves a fail file under testdata/rapid/<test name>, which
// every later `go test` replays first). The number of cases and the seed
// come from rapid's flags (-rapid.checks, default 100, and -rapid.seed).
//
// With OnEnsemble naming an ensemble, Check runs a lock's campaign,
// RealCases cases, against it instead, in real time (see the package
// documentation); it never chooses that mode by itself. A Recipe runs on
// the fake only: against an ensemble, Check skips the test.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	e := newEngine(target.subject(), configure(opts))
	if len(e.cfg.Servers) > 0 {
		if !e.sub.isLock() {
			t.Skipf("fuzz: the %s recipe runs on the fake only; a real ensemble runs the lock loop", e.sub.name)
		}
		e.realCampaign(t, RealCases, 0)
		return
	}
	rapid.Check(t, e.property)
}

// Fuzz returns a fuzz target running one case of the campaign per input,
// for `go test -fuzz` (rapid.MakeFuzz turns the fuzzer's bytes into the
// case's draws):
//
//	func FuzzMutex(f *testing.F) {
//		f.Add(seedBytes) // a few kilobytes: rapid reads 8 bytes a draw
//		f.Fuzz(fuzz.Fuzz(fuzz.Lock(fuzz.RecipeMutex)))
//	}
//
// Coverage-guided mutation of rapid's bytes finds bugs far more slowly than
// Check's own campaign; the target is there for long unattended runs.
func Fuzz(target Target, opts ...Option) func(*testing.T, []byte) {
	e := newEngine(target.subject(), configure(opts))
	return rapid.MakeFuzz(e.property)
}
