package fuzz

import (
	"io"
	"time"
)

// This file is how a campaign is configured: Options, the one way.

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
	RealClients   bool
	// NoSequenceWrap and NoForeignChildren leave out two of a case's
	// draws (WithoutSequenceWrap, WithoutForeignChildren).
	NoSequenceWrap, NoForeignChildren bool
	// NoFaults has bit f set for each Fault f left out (WithoutFaults),
	// and NoDetectors the detectors left out (WithoutDetectors).
	NoFaults    uint32
	NoDetectors map[Detector]bool
	// Only, if set, is the findings the campaign reports (OnlyFindings).
	Only func(*Finding) bool
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

// WithRealClients makes every simulated client go-zookeeper's own client,
// a *zk.Conn, talking to the served fake over in-memory pipes
// (wire.Pipe.NewClient), instead of the fake's in-process Conn: the code
// under test is handed the *zk.Conn itself, and the gate and the faults
// act at the server and on each client's pipe, where a network would put
// them, while go-zookeeper's reconnect, ping and setWatches logic runs as
// it is. A target made with LockZK always runs so. What differs from the
// in-process path is in the package doc ("Real clients").
func WithRealClients() Option { return func(c *config) { c.RealClients = true } }

// WithoutSequenceWrap starts every directory's sequence counter at zero:
// no case runs near the places where ZooKeeper's sequence numbers change
// shape (the int32 wrap, the width, the sign). A lock known to break at
// the wrap is fuzzed with it to look for its other defects.
func WithoutSequenceWrap() Option { return func(c *config) { c.NoSequenceWrap = true } }

// WithoutForeignChildren keeps a lock's directory free of children that
// are no contenders (Lock's cases draw them otherwise). A lock known to
// fail on a child it did not make is fuzzed with it to look for its other
// defects.
func WithoutForeignChildren() Option { return func(c *config) { c.NoForeignChildren = true } }
