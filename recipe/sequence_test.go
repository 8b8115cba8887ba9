package recipe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestParseSequence(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{"_c_0123456789abcdef0123456789abcdef-__lock__0000000042", 42, true},
		{"lock-0000000007", 7, true},                                              // zk.Lock
		{"_c_0123abcd-0000-0000-0000-00000000abcd-lock-0000000100", 100, true},    // Curator
		{"f00dfeedf00dfeedf00dfeedf00dfeed__rlock__2147483647", 2147483647, true}, // kazoo reader
		{"0000000000", 0, true},
		{"config", 0, false},
		{"v123456789", 0, false}, // nine digits
		{"lock-000000001x", 0, false},
		{"", 0, false},
		{"１２３４５６７８９０", 0, false}, // digits, but not ASCII ones
		// Past the int32 wrap, "%010d" prints a sign.
		{"_c_0123456789abcdef0123456789abcdef-__lock__-2147483648", -2147483648, true},
		{"x__lock__-1000000000", -1000000000, true},
		{"x__lock__-999999999", -999999999, true},
		{"x__lock__-000000005", -5, true},
		{"lock--2147483647", -2147483647, true}, // "lock-" and a wrapped number
		{"lock--000000001", -1, true},
		{"lock-1000000000", 1000000000, true}, // the dash belongs to "lock-"
		{"-1000000001", -1000000001, true},    // no prefix at all
		{"x__lock__2147483648", 0, false},     // not an int32
		{"x__lock__-2147483649", 0, false},
		{"lock-00000-0001", 0, false},
	} {
		seq, ok := parseSequence(tc.name)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("parseSequence(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

func FuzzParseSequence(f *testing.F) {
	for _, s := range []string{"", "lock-0000000001", "x__lock__0000000002", "\xff\xfe0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		seq, ok := parseSequence(name)
		if ok && (seq < math.MinInt32 || seq > math.MaxInt32) {
			t.Fatalf("parseSequence(%q) = %d", name, seq)
		}
	})
}

// Across the counter's wrap, the queue keeps the order of creation: each
// name below was made right after the one before it.
func TestQueueOrderAcrossTheWrap(t *testing.T) {
	made := []string{
		"_c_ffffffffffffffffffffffffffffffff-__lock__2147483646",
		"_c_00000000000000000000000000000000-__lock__2147483647",
		"_c_0123abcd-0000-0000-0000-00000000abcd-lock--2147483648",
		"x__lock__-2147483647",
	}
	nearZero := []string{"lock--000000002", "x__lock__-000000001", "lock-0000000000", "x__lock__0000000001"}
	for _, want := range [][]string{made, nearZero} {
		children := slices.Clone(want)
		rand.Shuffle(len(children), func(i, j int) { children[i], children[j] = children[j], children[i] })
		var got []string
		for _, c := range queueOrder(children) {
			got = append(got, c.name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("queue order %v, want %v", got, want)
		}
		for i := 1; i < len(want); i++ {
			if pred, present, _ := predecessor(children, want[i], "_c_none-", DefaultNodeName, nil); !present || pred != want[i-1] {
				t.Errorf("predecessor of %s = %q, %v; want %s", want[i], pred, present, want[i-1])
			}
		}
	}
}

// Ordering is by the sequence suffix alone, whatever comes before it.
func TestQueueOrder(t *testing.T) {
	children := []string{
		"_c_ffffffffffffffffffffffffffffffff-__lock__0000000003",
		"config",
		"00000000000000000000000000000000__lock__0000000005",
		"lock-0000000004",
		"_c_00000000000000000000000000000000-__lock__0000000009",
		"readme",
		"_c_0123abcd-0000-0000-0000-00000000abcd-lock-0000000001",
	}
	var got []string
	for _, c := range queueOrder(children) {
		got = append(got, c.name)
	}
	want := []string{
		"_c_0123abcd-0000-0000-0000-00000000abcd-lock-0000000001",
		"_c_ffffffffffffffffffffffffffffffff-__lock__0000000003",
		"lock-0000000004",
		"00000000000000000000000000000000__lock__0000000005",
		"_c_00000000000000000000000000000000-__lock__0000000009",
	}
	if !slices.Equal(got, want) {
		t.Errorf("queueOrder:\n got %q\nwant %q", got, want)
	}
}

func TestPredecessor(t *testing.T) {
	const mark = "_c_aaaa-"
	children := []string{"lock-0000000001", "_c_bbbb-__lock__0000000002", "_c_aaaa-__lock__0000000004", "_c_aaaa-__lock__0000000003", "x"}
	pred, present, strays := predecessor(children, "_c_aaaa-__lock__0000000004", mark, DefaultNodeName, nil)
	if pred != "_c_bbbb-__lock__0000000002" || !present || !slices.Equal(strays, []string{"_c_aaaa-__lock__0000000003"}) {
		t.Errorf("predecessor = %q, %v, %q", pred, present, strays)
	}
	pred, present, _ = predecessor([]string{"lock-0000000001"}, "_c_aaaa-__lock__0000000004", mark, DefaultNodeName, nil)
	if pred != "lock-0000000001" || present {
		t.Errorf("own node missing: predecessor = %q, %v", pred, present)
	}
	pred, present, strays = predecessor([]string{"_c_aaaa-__lock__0000000004", "lock-0000000009"}, "_c_aaaa-__lock__0000000004", mark, DefaultNodeName, nil)
	if pred != "" || !present || len(strays) != 0 {
		t.Errorf("first in queue: predecessor = %q, %v, %q", pred, present, strays)
	}
}

// predecessorBySorting is predecessor as the queue's definition gives it:
// walk the sorted contenders up to our own node.
func predecessorBySorting(queue []contender, name, mark string) (pred string, present bool, strays []string) {
	for _, c := range queue {
		switch {
		case c.name == name:
			present = true
		case strings.HasPrefix(c.name, mark):
			strays = append(strays, c.name)
		case !present:
			pred = c.name
		}
	}
	return pred, present, strays
}

// addOnce returns a function that appends a name to *names unless it is
// there already: a directory lists every name once.
func addOnce(names *[]string) func(string) {
	seen := map[string]bool{}
	return func(name string) {
		if !seen[name] {
			seen[name] = true
			*names = append(*names, name)
		}
	}
}

// The one-pass predecessor agrees with sorting the queue, on random
// directories of contenders, strays of our own, other locks' protected
// nodes, equal sequence numbers and non-contenders, with our node there or
// gone.
func TestPredecessorAgreesWithTheSortedQueue(t *testing.T) {
	const mark = "_c_aaaa-"
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5000 {
		var children []string
		add := addOnce(&children)
		for range rng.IntN(12) {
			seq := fmt.Sprintf("%010d", rng.IntN(8))
			switch rng.IntN(5) {
			case 0:
				add("lock-" + seq)
			case 1:
				add("_c_bbbb-lock-" + seq)
			case 2:
				add(mark + "lock-" + seq)
			case 3:
				add(fmt.Sprintf("_c_%04d-lock-%s", rng.IntN(50), seq))
			default:
				add(fmt.Sprintf("readme-%d", rng.IntN(3)))
			}
		}
		name := fmt.Sprintf("%slock-%010d", mark, rng.IntN(8))
		if rng.IntN(3) > 0 {
			add(name)
		}
		rng.Shuffle(len(children), func(i, j int) { children[i], children[j] = children[j], children[i] })
		pred, present, strays := predecessor(children, name, mark, DefaultNodeName, nil)
		wantPred, wantPresent, wantStrays := predecessorBySorting(queueOrder(children), name, mark)
		if pred != wantPred || present != wantPresent || !slices.Equal(strays, wantStrays) {
			t.Fatalf("round %d: predecessor(%q, %q) = %q, %v, %q; sorting gives %q, %v, %q",
				round, children, name, pred, present, strays, wantPred, wantPresent, wantStrays)
		}
	}
}

// The same, on names as a Mutex makes them — full GUIDs, read by
// nameReader a word at a time — with sequence numbers on both sides of the
// counter's wrap, equal numbers, strays, other locks' names and
// non-contenders.
func TestPredecessorAgreesWithTheSortedQueueOnFullNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	guid := func() string { return fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()) }
	for round := range 5000 {
		own := guid()
		mark := protectedPrefix + own + "-"
		base := []int64{0, 1000, math.MaxInt32 - 4}[rng.IntN(3)]
		seq := func() string { return fmt.Sprintf("%010d", int32(base+rng.Int64N(10))) } // int32: past the wrap, negative
		var children []string
		add := addOnce(&children)
		for range rng.IntN(16) {
			switch rng.IntN(6) {
			case 0, 1:
				add(protectedPrefix + guid() + "-" + DefaultNodeName + seq())
			case 2:
				add(mark + DefaultNodeName + seq())
			case 3:
				add("lock-" + seq())
			case 4:
				add(protectedPrefix + guid() + "-" + DefaultReadNodeName + seq())
			default:
				add(fmt.Sprintf("readme-%d", rng.IntN(3)))
			}
		}
		name := mark + DefaultNodeName + seq()
		if rng.IntN(3) > 0 {
			add(name)
		}
		rng.Shuffle(len(children), func(i, j int) { children[i], children[j] = children[j], children[i] })
		pred, present, strays := predecessor(children, name, mark, DefaultNodeName, nil)
		wantPred, wantPresent, wantStrays := predecessorBySorting(queueOrderIn(children, DefaultNodeName), name, mark)
		if pred != wantPred || present != wantPresent || !slices.Equal(strays, wantStrays) {
			t.Fatalf("round %d: predecessor(%q, %q) = %q, %v, %q; sorting gives %q, %v, %q",
				round, children, name, pred, present, strays, wantPred, wantPresent, wantStrays)
		}
	}
}

func TestPaths(t *testing.T) {
	if got := ancestors("/a/b/c"); !slices.Equal(got, []string{"/a", "/a/b", "/a/b/c"}) {
		t.Errorf("ancestors(/a/b/c) = %q", got)
	}
	if got := ancestors("/"); len(got) != 0 {
		t.Errorf("ancestors(/) = %q", got)
	}
	if got := joinPath("/", "x"); got != "/x" {
		t.Errorf("joinPath(/, x) = %q", got)
	}
	if got := joinPath("/a", "x"); got != "/a/x" {
		t.Errorf("joinPath(/a, x) = %q", got)
	}
	if got := baseName("/a/b"); got != "b" {
		t.Errorf("baseName(/a/b) = %q", got)
	}
	for _, odd := range []string{"", "/", "//", "a", "a/", "/a//"} {
		ancestors(odd) // must not panic
		baseName(odd)
	}
}

// connState is a Conn that only reports a state: enough for retryLoss.
type connState struct {
	Conn
	state zk.State
}

func (c connState) State() zk.State { return c.state }

// retryLoss repeats a request through connection loss, but not past its
// limit or its context, and not for any other error.
func TestRetryLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &Mutex{conn: connState{state: zk.StateConnecting}}
		calls := 0
		err := m.retryLoss(context.Background(), time.Second, func() error {
			calls++
			if calls < 4 {
				return zk.ErrConnectionClosed
			}
			return zk.ErrNoNode
		})
		if !errors.Is(err, zk.ErrNoNode) || calls != 4 {
			t.Errorf("retryLoss = %v after %d calls, want ErrNoNode after 4", err, calls)
		}

		start := time.Now()
		err = m.retryLoss(context.Background(), 2*time.Second, func() error { return zk.ErrNoServer })
		if !errors.Is(err, zk.ErrNoServer) || time.Since(start) < 2*time.Second {
			t.Errorf("retryLoss = %v after %v, want ErrNoServer after the 2s limit", err, time.Since(start))
		}

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err = m.retryLoss(ctx, 0, func() error { return zk.ErrConnectionClosed })
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, zk.ErrConnectionClosed) {
			t.Errorf("retryLoss past ctx = %v, want both the deadline and the connection loss", err)
		}

		calls = 0
		err = m.retryLoss(context.Background(), time.Second, func() error { calls++; return zk.ErrClosing })
		if !errors.Is(err, zk.ErrClosing) || calls != 1 {
			t.Errorf("ErrClosing retried: %v after %d calls", err, calls)
		}
		if !m.closed.Load() {
			t.Errorf("ErrClosing did not mark the Conn closed")
		}
	})
}

// A Conn that fails requests at once with ErrConnectionClosed while it sits
// in StateDisconnected was closed: retryLoss gives up on the second such
// failure, with zk.ErrClosing, instead of retrying for its whole limit. A
// Conn that shows StateConnecting is reconnecting, and is retried.
func TestRetryLossNoticesClosedConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := &Mutex{conn: connState{state: zk.StateDisconnected}}
		calls := 0
		err := closed.retryLoss(context.Background(), 15*time.Second, func() error { calls++; return zk.ErrConnectionClosed })
		if !errors.Is(err, zk.ErrClosing) || calls != 2 {
			t.Errorf("on a closed Conn: %v after %d calls, want ErrClosing after 2", err, calls)
		}
		calls = 0
		if err := closed.retryLoss(context.Background(), 0, func() error { calls++; return nil }); !errors.Is(err, zk.ErrClosing) || calls != 0 {
			t.Errorf("after the Conn was found closed: %v after %d calls, want ErrClosing at once", err, calls)
		}

		reconnecting := &Mutex{conn: connState{state: zk.StateConnecting}}
		calls = 0
		err = reconnecting.retryLoss(context.Background(), time.Second, func() error { calls++; return zk.ErrConnectionClosed })
		if !errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) || calls < 4 {
			t.Errorf("on a reconnecting Conn: %v after %d calls, want retries until the limit", err, calls)
		}
	})
}

func TestCallBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err, abandoned := callBounded(ctx, func() error { <-release; return nil })
		if !errors.Is(err, context.DeadlineExceeded) || !abandoned {
			t.Errorf("callBounded = %v, %v; want the deadline, abandoned", err, abandoned)
		}
		close(release) // the abandoned call's goroutine ends with it
		err, abandoned = callBounded(context.Background(), func() error { return zk.ErrNoNode })
		if !errors.Is(err, zk.ErrNoNode) || abandoned {
			t.Errorf("callBounded = %v, %v", err, abandoned)
		}
	})
}

// BenchmarkPredecessor is the waiter's look at a queue of a thousand, as a
// release wakes it: every waiter a release wakes pays it once.
func BenchmarkPredecessor(b *testing.B) {
	const n = 1000
	children := make([]string, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range children {
		children[i] = fmt.Sprintf("_c_%016x%016x-%s%010d", rng.Uint64(), rng.Uint64(), DefaultNodeName, 1000+i)
	}
	own := children[n/2]
	mark := own[:len(protectedPrefix)+33]
	rng.Shuffle(n, func(i, j int) { children[i], children[j] = children[j], children[i] })
	for b.Loop() {
		pred, present, _ := predecessor(children, own, mark, DefaultNodeName, nil)
		if !present || pred == "" {
			b.Fatal("own node not found, or first")
		}
	}
}

// nameReader's word-at-a-time reading of the ten digits agrees with
// parseDigits on every ten bytes it is given: all digits, one byte off in
// each place, and random bytes around the digits' range: 100,000 random
// names, or 10,000 under the race detector.
func TestNameReaderDigits(t *testing.T) {
	r := newNameReader(DefaultNodeName)
	prefix := protectedPrefix + strings.Repeat("ab", guidLen/2) + "-" + DefaultNodeName
	check := func(digits string) {
		t.Helper()
		got, gotOK := r.readOwn(prefix + digits)
		want, wantOK := parseDigits(digits)
		wantOK = wantOK && want <= math.MaxInt32
		if gotOK != wantOK || (wantOK && got != want) {
			t.Fatalf("readOwn(%q) = %d, %v; parseDigits gives %d, %v", prefix+digits, got, gotOK, want, wantOK)
		}
	}
	for _, s := range []string{"0000000000", "9999999999", "2147483647", "2147483648", "0123456789", "9876543210", "-000000005", "000000000-"} {
		check(s)
	}
	draws := 100000
	if raceEnabled {
		draws = 10000
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range draws {
		b := []byte(fmt.Sprintf("%010d", rng.Int64N(10_000_000_000)))
		check(string(b))
		for i := range b {
			old := b[i]
			for _, c := range []byte{'0' - 1, '9' + 1, 0, 0x80, 0xF9, 0xFA, 0xFF, byte(rng.IntN(256))} {
				b[i] = c
				check(string(b))
			}
			b[i] = old
		}
		for i := range b {
			b[i] = byte(0x2A + rng.IntN(0x16)) // '*' to '?': digits and their neighbours
		}
		check(string(b))
	}
}

// nameReader reads every name as sequenceIn does: names of the Mutex's
// own kind with every kind of suffix, its neighbours in length and shape,
// and other locks' names.
func TestNameReaderAgreesWithSequenceIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	guid := func() string { return fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()) }
	suffixes := []string{"0000000000", "0000000001", "2147483647", "2147483648", "9999999999", "-000000005", "-2147483648", "-1000000000", "-999999999", "00000000x1", "000000001", "00000000001"}
	for _, nodeName := range []string{DefaultNodeName, "lock-", "lock", "__rlock__", "", "a-very-long-node-name-"} {
		r := newNameReader(nodeName)
		var names []string
		for _, suffix := range suffixes {
			g := guid()
			names = append(names,
				protectedPrefix+g+"-"+nodeName+suffix,
				protectedPrefix+g[1:]+"-"+nodeName+suffix,
				protectedPrefix+g+"x"+nodeName+suffix,
				"_d_"+g+"-"+nodeName+suffix,
				protectedPrefix+g+"-"+"other"+suffix,
				"lock-"+suffix, suffix, nodeName+suffix)
		}
		for range 2000 {
			names = append(names, fmt.Sprintf("%s%s-%s%010d", protectedPrefix, guid(), nodeName, rng.Int64N(10_000_000_000)))
		}
		for _, name := range names {
			gotSeq, gotOK := r.read(name)
			wantSeq, wantOK := sequenceIn(name, nodeName)
			if gotSeq != wantSeq || gotOK != wantOK {
				t.Fatalf("nodeName %q: read(%q) = %d, %v; sequenceIn gives %d, %v", nodeName, name, gotSeq, gotOK, wantSeq, wantOK)
			}
		}
	}
}

// TestQueueOrderExported orders names and paths as the Mutex queues them, across
// the counter's wrap, and leaves out what is no contender.
func TestQueueOrderExported(t *testing.T) {
	got := QueueOrder([]string{
		"/l/_c_b-__lock__-2147483648", // created after 2147483647: the wrap
		"/l/readme",
		"/l/_c_a-__lock__2147483647",
		"lease-0000000003",
		"/l/_c_c-__lock__-2147483647",
	})
	// 3 is fewer than 2^31 creates before 2147483647 on the counter, so
	// it comes first: serial numbers, not integers.
	want := []string{"lease-0000000003", "/l/_c_a-__lock__2147483647", "/l/_c_b-__lock__-2147483648", "/l/_c_c-__lock__-2147483647"}
	if !slices.Equal(got, want) {
		t.Errorf("QueueOrder = %q, want %q", got, want)
	}
}
