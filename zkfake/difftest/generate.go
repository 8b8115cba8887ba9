package difftest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Sequence is a list of ops run by a few sessions under a fresh base node.
type Sequence struct {
	Name     string // identifies the sequence in reports and corpus files
	Sessions int    // how many sessions are opened before the first op
	Ops      []Op
}

// String renders the sequence as the lines of a corpus file would show it,
// without the answers.
func (s Sequence) String() string {
	out := fmt.Sprintf("sequence %s\nsessions %d\n", s.Name, s.Sessions)
	for _, op := range s.Ops {
		out += op.Line() + "\n"
	}
	return out
}

// Config shapes generated sequences.
type Config struct {
	MinOps, MaxOps           int // ops per sequence (inclusive)
	MinSessions, MaxSessions int // sessions per sequence (inclusive)
}

// DefaultConfig returns the configuration of short sequences, so that a
// thousand run against a real ensemble in about a minute: 10 to 20 ops
// made by 2 to 5 sessions.
func DefaultConfig() Config {
	return Config{MinOps: 10, MaxOps: 20, MinSessions: 2, MaxSessions: 5}
}

// Generate returns the sequence for seed. The same seed and config always
// give the same sequence.
func Generate(seed uint64, cfg Config) Sequence {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 0x7a6b73696d)), open: map[int]bool{}, likely: map[string]bool{}}
	seq := Sequence{
		Name:     fmt.Sprintf("seed-%d", seed),
		Sessions: cfg.MinSessions + g.rng.IntN(cfg.MaxSessions-cfg.MinSessions+1),
	}
	for i := 1; i <= seq.Sessions; i++ {
		g.open[i] = true
	}
	g.sessions = seq.Sessions
	n := cfg.MinOps + g.rng.IntN(cfg.MaxOps-cfg.MinOps+1)
	// Most sequences start by building a little tree, so that the ops after
	// find nodes to work on.
	prologue := pick(g, w(1, 0), w(2, 1), w(3, 2), w(2, 3))
	for i := 1; i <= n; i++ {
		var op Op
		if i <= prologue {
			op = g.prologueOp()
		} else {
			op = g.op()
		}
		op.Label = i
		// Ops on ZooKeeper's own nodes are not worth referring to: their
		// state on a shared server is not fresh.
		if isCreate(op.Kind) && !strings.HasPrefix(op.Path, "/") {
			g.creates = append(g.creates, i)
			g.likely[op.Path] = true
		}
		seq.Ops = append(seq.Ops, op)
	}
	return seq
}

func isCreate(k Kind) bool {
	return k == Create || k == CreateContainer || k == CreateTTL || k == CreateProtected
}

type generator struct {
	rng      *rand.Rand
	sessions int
	open     map[int]bool // sessions not closed yet
	creates  []int        // labels of the create ops so far
	// likely holds the nodes of the small tree that a create has asked for
	// (whether or not it worked), so that later ops find nodes more often
	// than chance would have them.
	likely map[string]bool
}

// pick returns one of the choices, weighted.
func pick[T any](g *generator, choices ...weighted[T]) T {
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	n := g.rng.IntN(total)
	for _, c := range choices {
		if n < c.weight {
			return c.value
		}
		n -= c.weight
	}
	panic("unreachable")
}

type weighted[T any] struct {
	weight int
	value  T
}

func w[T any](weight int, value T) weighted[T] { return weighted[T]{weight, value} }

// nodes is the small tree sequences work in, so that ops often meet.
var nodes = []string{"a", "b", "a/x", "a/y", "b/x", "a/x/z"}

func (g *generator) path() string {
	if len(g.creates) > 0 && g.rng.IntN(4) == 0 {
		ref := fmt.Sprintf("@%d", g.creates[g.rng.IntN(len(g.creates))])
		if g.rng.IntN(5) == 0 {
			ref += "/c"
		}
		return ref
	}
	if g.rng.IntN(12) == 0 {
		return "."
	}
	var likely []string
	for _, n := range nodes {
		if g.likely[n] {
			likely = append(likely, n)
		}
	}
	if len(likely) > 0 && g.rng.IntN(3) > 0 {
		return likely[g.rng.IntN(len(likely))]
	}
	return nodes[g.rng.IntN(len(nodes))]
}

// createPath is where a plain create goes: mostly a node whose parent
// probably exists.
func (g *generator) createPath() string {
	var candidates []string
	for _, n := range nodes {
		parent, _, nested := strings.Cut(n, "/")
		if !nested || g.likely[parent] || strings.Count(n, "/") == 2 && g.likely[n[:strings.LastIndex(n, "/")]] {
			candidates = append(candidates, n)
		}
	}
	if g.rng.IntN(5) > 0 {
		return candidates[g.rng.IntN(len(candidates))]
	}
	return g.notBase()
}

// notBase is a path for a create: never the base itself, whose sequential
// children would be made beside it, outside the sequence's tree.
func (g *generator) notBase() string {
	for {
		if p := g.path(); p != "." {
			return p
		}
	}
}

// sequentialPath is a prefix for a sequential create, including the empty
// prefix ("a/") that ZooKeeper allows.
func (g *generator) sequentialPath() string {
	return pick(g, w(3, "s-"), w(3, "a/s-"), w(1, "a/"), w(1, "b/q-"), w(1, g.notBase()))
}

// badPath is a path the client refuses.
func (g *generator) badPath() string {
	return pick(g, w(1, "a/"), w(1, "a//x"), w(1, "a/./x"), w(1, "a/../b"), w(1, ""), w(1, "a/\x01"))
}

// unicodePath is a node whose name the client lets through: letters beyond
// ASCII, a character outside the Basic Multilingual Plane (the server,
// which reads paths as UTF-16, refuses its surrogates), the private-use
// characters and U+FFFF that the server refuses and go-zookeeper does not,
// characters at the edges of the ranges the checks refuse, and spaces.
func (g *generator) unicodePath() string {
	return pick(g, w(2, "a/é"), w(2, "a/日本"), w(2, "a/😀"), w(1, "a/\u00a0"), w(1, "a/\u00a0x"), w(1, "a/\uf900"),
		w(1, "a/\ufffd"), w(1, "a/\u2028"), w(1, "a/ x "), w(1, "ü"), w(1, "a/x.y"), w(1, "a/..x"), w(1, "a/zookeeper"),
		w(1, "a/\ue000"), w(1, "a/x\uefff"), w(1, "a/\uffff"))
}

// bigData is data at and around the size limits: the server refuses a
// request over jute.maxbuffer (1 MB less one byte, with the request's own
// bytes) by closing the connection, and go-zookeeper refuses one over its
// 1.5 MB buffer. Sizes stay a request's overhead away from the limit on
// either side, as that overhead holds the base's path, which is longer on
// a shared server than on the fake.
func (g *generator) bigData() []byte {
	n := pick(g, w(2, 1000), w(2, 100_000), w(2, 1_000_000), w(2, 1_047_000), w(1, 1_048_575), w(1, 1_048_576), w(1, 2_000_000))
	return bytes.Repeat([]byte("x"), n)
}

func (g *generator) data() []byte {
	if g.rng.IntN(40) == 0 {
		return g.bigData()
	}
	return pick(g, w(2, []byte(nil)), w(1, []byte{}), w(3, []byte("x")), w(2, []byte("hello")), w(1, []byte("zk-data-with-more-bytes")),
		w(1, []byte("\x00\xff\n")), w(1, []byte("日本")))
}

func (g *generator) version() int32 {
	return pick(g, w(10, int32(-1)), w(4, int32(0)), w(3, int32(1)), w(2, int32(2)), w(1, int32(7)))
}

func (g *generator) acl() string {
	return pick(g, w(60, "open"), w(3, "read"), w(3, "alice"), w(3, "nodelete"), w(3, "creator"),
		w(2, "loopback"), w(2, "elsewhere"), w(1, "empty"), w(1, "bogus"), w(1, "someone"),
		w(1, "loopnet"), w(1, "anyip"), w(1, "tennet"), w(1, "hostbits"), w(1, "ipv6"), w(1, "badprefix"),
		w(1, "ipname"), w(1, "ipempty"), w(1, "ipshort"), w(1, "nohash"), w(1, "noname"), w(1, "authid"),
		w(1, "worldread"), w(1, "noperms"), w(1, "allbits"), w(1, "twice"), w(1, "sasl"), w(1, "saslprinc"), w(1, "saslbad"))
}

func (g *generator) session() int {
	var open, closed []int
	for i := 1; i <= g.sessions; i++ {
		if g.open[i] {
			open = append(open, i)
		} else {
			closed = append(closed, i)
		}
	}
	if len(closed) > 0 && g.rng.IntN(10) == 0 {
		return closed[g.rng.IntN(len(closed))]
	}
	return open[g.rng.IntN(len(open))]
}

func (g *generator) op() Op {
	op := Op{Session: g.session()}
	op.Kind = pick(g, w(22, Create), w(3, CreateContainer), w(3, CreateTTL), w(2, CreateProtected),
		w(10, Delete), w(10, Set), w(4, Get), w(4, GetW), w(3, Exists), w(5, ExistsW), w(3, Children),
		w(5, ChildrenW), w(3, GetACL), w(4, SetACL), w(1, Sync), w(8, Multi), w(3, AddAuth), w(2, Close),
		w(3, Kind("special")), w(2, Kind("badpath")), w(2, Kind("unicode")), w(2, Kind("system")))
	switch op.Kind {
	case Kind("special"):
		return g.special(op.Session)
	case Kind("unicode"):
		// Every request that takes a path, for the server checks some
		// (a create, a setData, a setACL, a multi's create and check)
		// and not the others.
		op.Kind = pick(g, w(3, Create), w(1, Get), w(1, ExistsW), w(1, Delete), w(1, Children), w(1, Set), w(1, SetACL), w(1, Multi))
		g.fill(&op)
		if op.Kind == Multi {
			sub := Op{Kind: pick(g, w(1, Create), w(1, Check)), Path: g.unicodePath()}
			if sub.Kind == Create {
				sub.Data, sub.ACL = g.data(), "open"
			} else {
				sub.Version = -1
			}
			op.Sub = append([]Op{sub}, op.Sub...)
			return op
		}
		op.Path = g.unicodePath()
		if op.Kind == Create {
			op.Flags = pick(g, w(3, int32(zk.FlagPersistent)), w(1, int32(zk.FlagSequence)), w(1, int32(zk.FlagEphemeral)))
		}
		return op
	case Kind("system"):
		return g.system(op.Session)
	case Kind("badpath"):
		op.Kind = pick(g, w(1, Create), w(1, Delete), w(1, Set), w(1, Get), w(1, ExistsW), w(1, Sync))
		g.fill(&op)
		op.Path = g.badPath()
		if op.Kind == Create {
			op.Flags = zk.FlagPersistent // "a/" is allowed only for sequential creates
		}
		return op
	case Close:
		if len(g.openSessions()) < 2 || !g.open[op.Session] {
			op.Kind = Sync // keep at least one session working
		} else {
			g.open[op.Session] = false
			return op
		}
	}
	g.fill(&op)
	return op
}

// prologueOp creates one of the small tree's nodes with the open ACL.
func (g *generator) prologueOp() Op {
	op := Op{Session: g.session(), Kind: Create, ACL: "open", Data: g.data()}
	op.Path = g.createPath()
	op.Flags = pick(g, w(5, int32(zk.FlagPersistent)), w(1, int32(zk.FlagEphemeral)), w(1, int32(zk.FlagContainer)))
	return op
}

func (g *generator) openSessions() []int {
	var out []int
	for i := 1; i <= g.sessions; i++ {
		if g.open[i] {
			out = append(out, i)
		}
	}
	return out
}

// fill chooses the arguments of op.Kind.
func (g *generator) fill(op *Op) {
	op.Path = g.path()
	if isCreate(op.Kind) {
		op.Path = g.createPath()
	}
	switch op.Kind {
	case Create:
		op.Flags = pick(g, w(16, int32(zk.FlagPersistent)), w(8, int32(zk.FlagEphemeral)), w(8, int32(zk.FlagSequence)),
			w(6, int32(zk.FlagEphemeralSequential)), w(2, int32(zk.FlagContainer)), w(1, int32(zk.FlagTTL)),
			w(1, int32(zk.FlagPersistentSequentialWithTTL)), w(1, int32(7)))
		if op.Flags&zk.FlagSequence != 0 {
			op.Path = g.sequentialPath()
		}
		op.Data, op.ACL = g.data(), g.acl()
	case CreateContainer:
		op.Flags = pick(g, w(6, int32(zk.FlagContainer)), w(1, int32(zk.FlagPersistent)))
		op.Data, op.ACL = g.data(), g.acl()
	case CreateTTL:
		op.Flags = pick(g, w(6, int32(zk.FlagTTL)), w(4, int32(zk.FlagPersistentSequentialWithTTL)), w(1, int32(zk.FlagPersistent)))
		if op.Flags == zk.FlagPersistentSequentialWithTTL {
			op.Path = g.sequentialPath()
		}
		// An hour keeps the server's reaper away during a sequence; zero,
		// negative and over 2^40-1 ms are refused.
		op.TTL = pick(g, w(12, time.Hour), w(1, time.Duration(0)), w(1, -time.Second), w(1, time.Duration(1<<40)*time.Millisecond))
		op.Data, op.ACL = g.data(), g.acl()
	case CreateProtected:
		op.Path = pick(g, w(2, "p-"), w(2, "a/p-"), w(1, g.notBase()))
		op.Data, op.ACL = g.data(), g.acl()
	case Delete:
		op.Version = g.version()
	case Set:
		op.Data, op.Version = g.data(), g.version()
	case SetACL:
		op.ACL, op.Version = g.acl(), g.version()
		if op.Path == "." {
			op.Path = "a" // the base keeps its open ACL
		}
	case AddAuth:
		op.Auth = credentials[g.rng.IntN(len(credentials))]
		if g.rng.IntN(3) == 0 {
			other := otherCredentials[g.rng.IntN(len(otherCredentials))]
			op.Scheme, op.Auth = other[0], other[1]
			if op.Scheme == "digest" {
				op.Scheme = "" // the default, as a corpus line reads back
			}
		}
	case Multi:
		n := pick(g, w(1, 0), w(3, 1), w(4, 2), w(3, 3), w(2, 4), w(1, 6), w(1, 9))
		for range n {
			op.Sub = append(op.Sub, g.subOp())
		}
	}
	if op.Kind == Delete && op.Path == "." {
		op.Path = "b" // the base stays until the cleanup
	}
	if op.Kind == AddAuth || op.Kind == Multi {
		op.Path = "" // they have none
	}
}

func (g *generator) subOp() Op {
	sub := Op{Kind: pick(g, w(4, Create), w(3, Set), w(2, Check), w(3, Delete))}
	switch {
	case g.rng.IntN(25) > 0:
		sub.Path = g.path()
	case sub.Kind == Create || sub.Kind == Delete:
		// Their answers on /zookeeper (NodeExists, BadArguments) do not
		// depend on its state, which on a shared server is not fresh.
		sub.Path = pick(g, w(1, "/zookeeper"), w(1, "a/"), w(1, ""))
	default:
		sub.Path = pick(g, w(1, "a/"), w(1, ""))
	}
	switch sub.Kind {
	case Create:
		if sub.Path == "." {
			sub.Path = g.notBase()
		}
		sub.Flags = pick(g, w(12, int32(zk.FlagPersistent)), w(4, int32(zk.FlagEphemeral)), w(6, int32(zk.FlagSequence)),
			w(2, int32(zk.FlagEphemeralSequential)), w(2, int32(zk.FlagContainer)), w(1, int32(zk.FlagTTL)))
		if sub.Flags&zk.FlagSequence != 0 && (g.rng.IntN(2) == 0 || strings.HasPrefix(sub.Path, "/")) {
			sub.Path = g.sequentialPath()
		}
		sub.Data, sub.ACL = g.data(), pick(g, w(8, "open"), w(1, g.acl()))
	case Set:
		sub.Data, sub.Version = g.data(), g.version()
	case Check, Delete:
		sub.Version = g.version()
	}
	if sub.Kind == Delete && sub.Path == "." {
		sub.Path = "b"
	}
	return sub
}

// system returns a read of ZooKeeper's own nodes, or a write there that
// fails whatever their state: a shared server answers it like a fresh one.
// An ensemble keeps its configuration in /zookeeper/config, which the
// fake compared with it holds too (FakeOptions).
func (g *generator) system(session int) Op {
	return pick(g,
		w(1, Op{Session: session, Kind: Get, Path: "/zookeeper/config"}),
		w(1, Op{Session: session, Kind: GetW, Path: "/zookeeper/config"}),
		w(1, Op{Session: session, Kind: Exists, Path: "/zookeeper/config"}),
		w(1, Op{Session: session, Kind: GetACL, Path: "/zookeeper/config"}),
		w(1, Op{Session: session, Kind: Children, Path: "/zookeeper/config"}),
		w(1, Op{Session: session, Kind: Get, Path: "/zookeeper/quota"}),
		w(1, Op{Session: session, Kind: SetACL, Path: "/zookeeper/config", ACL: "open", Version: -1}),
		w(1, Op{Session: session, Kind: Create, Path: "/zookeeper/config/x", Data: []byte("x"), ACL: "open"}),
		w(1, Op{Session: session, Kind: Children, Path: "/zookeeper"}),
		w(1, Op{Session: session, Kind: ChildrenW, Path: "/zookeeper/quota"}),
		w(1, Op{Session: session, Kind: GetACL, Path: "/zookeeper/quota"}),
		w(1, Op{Session: session, Kind: GetACL, Path: "/zookeeper"}),
		w(1, Op{Session: session, Kind: Exists, Path: "/zookeeper/missing"}),
		w(1, Op{Session: session, Kind: Get, Path: "/zookeeper/quota/missing"}),
		w(1, Op{Session: session, Kind: Set, Path: "/zookeeper/quota", Data: []byte("x"), Version: 1 << 30}),
		w(1, Op{Session: session, Kind: SetACL, Path: "/zookeeper", ACL: "open", Version: 1 << 30}),
		w(1, Op{Session: session, Kind: Sync, Path: "/zookeeper"}),
	)
}

// special returns an op on ZooKeeper's own nodes whose answer does not
// depend on what others did to them, so a shared server answers like a
// fresh one.
func (g *generator) special(session int) Op {
	return pick(g,
		w(1, Op{Session: session, Kind: Delete, Path: "/", Version: -1}),
		w(1, Op{Session: session, Kind: Delete, Path: "/zookeeper", Version: -1}),
		w(1, Op{Session: session, Kind: Delete, Path: "/zookeeper/quota", Version: 3}),
		w(1, Op{Session: session, Kind: Delete, Path: "/zookeeper/config", Version: -1}),
		w(1, Op{Session: session, Kind: Create, Path: "/zookeeper", Data: []byte("x"), ACL: "open"}),
		w(1, Op{Session: session, Kind: Create, Path: "/", ACL: "open"}),
		w(1, Op{Session: session, Kind: Set, Path: "/zookeeper/config", Data: []byte("x"), Version: -1}),
	)
}
