package recipe

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestEndsInSequence(t *testing.T) {
	for _, tc := range []struct {
		name, nodeName string
		want           bool
	}{
		{"_c_0123456789abcdef0123456789abcdef-__rlock__0000000007", "__rlock__", true},
		{"0123456789abcdef0123456789abcdef__rlock__0000000007", "__rlock__", true}, // kazoo's ReadLock
		{"0123456789abcdef0123456789abcdef__lock__0000000007", "__rlock__", false}, // kazoo's WriteLock
		{"_c_0123456789abcdef0123456789abcdef-__lock__0000000007", "__rlock__", false},
		{"_c_0123456789abcdef0123456789abcdef-__lock__0000000007", "__lock__", true},
		{"x__rlock__-000000005", "__rlock__", true},  // past the wrap: a sign and nine digits
		{"x__rlock__-2147483648", "__rlock__", true}, // a sign and ten
		{"x__rlock__000000005", "__rlock__", false},  // nine digits, no sign
		{"x__rlock__00000000005", "__rlock__", false},
		{"__rlock__0000000001", "__rlock__", true}, // nothing before the name
		{"rlock__0000000001", "__rlock__", false},
		{"__rlock__", "__rlock__", false},
		{"_c_01234567-89ab-cdef-0123-456789abcdef-__READ__0000000003", "__READ__", true}, // Curator's
		{"_c_01234567-89ab-cdef-0123-456789abcdef-__WRIT__0000000003", "__READ__", false},
		{"read-1000000000", "read-", true},
		{"read-1000000000", "read", true}, // "read" and a sign: either way a reader
		{"lock-0000000001", "__rlock__", false},
	} {
		if got := endsInSequence(tc.name, tc.nodeName); got != tc.want {
			t.Errorf("endsInSequence(%q, %q) = %v, want %v", tc.name, tc.nodeName, got, tc.want)
		}
	}
}

// A reader's predecessor is the nearest writer ahead of it, a writer's the
// nearest node of either kind.
func TestPredecessorReadersAndWriters(t *testing.T) {
	const mark = "_c_ffff-"
	isWriter := func(name string) bool { return !endsInSequence(name, DefaultReadNodeName) }
	queue := []string{
		"aaaa__lock__0000000001",          // kazoo's WriteLock
		"_c_bbbb-__rlock__0000000002",     // reader
		"cccc__rlock__0000000003",         // kazoo's ReadLock
		"_c_dddd-__lock__0000000004",      // writer
		"_c_eeee-__rlock__0000000005",     // reader
		"lock-0000000006",                 // zk.Lock: a writer to readers
		"_c_ffff-__rlock__0000000007",     // own, as a reader
		"_c_gggg-__rlock__0000000008",     // behind
		"_c_hhhh-__lock__0000000009",      // behind
		"readme", "_c_iiii-__rlock__1234", // no contenders
	}
	rand.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	for _, tc := range []struct {
		own, nodeName string
		blockedBy     func(string) bool
		want          string
	}{
		{"_c_ffff-__rlock__0000000007", DefaultReadNodeName, isWriter, "lock-0000000006"},
		{"_c_ffff-__rlock__0000000007", DefaultReadNodeName, nil, "lock-0000000006"},
		{"_c_eeee-__rlock__0000000005", DefaultReadNodeName, isWriter, "_c_dddd-__lock__0000000004"},
		{"_c_eeee-__rlock__0000000005", DefaultNodeName, nil, "_c_dddd-__lock__0000000004"},
		{"_c_dddd-__lock__0000000004", DefaultNodeName, nil, "cccc__rlock__0000000003"},
		{"cccc__rlock__0000000003", DefaultReadNodeName, isWriter, "aaaa__lock__0000000001"},
		{"_c_bbbb-__rlock__0000000002", DefaultReadNodeName, isWriter, "aaaa__lock__0000000001"},
		{"aaaa__lock__0000000001", DefaultNodeName, nil, ""},
		{"_c_gggg-__rlock__0000000008", DefaultReadNodeName, isWriter, "lock-0000000006"},
		{"_c_hhhh-__lock__0000000009", DefaultNodeName, nil, "_c_gggg-__rlock__0000000008"},
	} {
		pred, present, strays := predecessor(queue, tc.own, mark, tc.nodeName, tc.blockedBy)
		if !present || pred != tc.want || (tc.own != "_c_ffff-__rlock__0000000007" && len(strays) != 1) {
			t.Errorf("predecessor of %s (rule %v) = %q, %v, strays %q; want %q",
				tc.own, tc.blockedBy != nil, pred, present, strays, tc.want)
		}
	}

	// With the writers gone, the readers are all first.
	var readers []string
	for _, name := range queue {
		if !isWriter(name) {
			readers = append(readers, name)
		}
	}
	for _, own := range readers {
		if _, ok := sequenceIn(own, DefaultReadNodeName); !ok {
			continue
		}
		if pred, present, _ := predecessor(readers, own, "_c_none-", DefaultReadNodeName, isWriter); !present || pred != "" {
			t.Errorf("reader %s among readers: predecessor %q, %v", own, pred, present)
		}
	}
}

// predecessor with a rule agrees with the queue's definition: sort the
// contenders, and take the last one ahead of own that the rule blocks on.
func TestPredecessorRuleMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	isWriter := func(name string) bool { return !endsInSequence(name, DefaultReadNodeName) }
	for round := range 500 {
		var children []string
		for i := range 1 + rng.IntN(20) {
			seq := rng.Int32N(1000)
			kind := []string{"__lock__", "__rlock__", "-lock-"}[rng.IntN(3)]
			children = append(children, fmt.Sprintf("_c_%032x-%s%010d", i, kind, seq))
		}
		own := children[rng.IntN(len(children))]
		nodeName := DefaultNodeName
		var rule func(string) bool
		if !isWriter(own) {
			nodeName, rule = DefaultReadNodeName, isWriter
		}
		want := ""
		for _, c := range queueOrderIn(children, nodeName) {
			if c.name == own {
				break
			}
			if rule == nil || rule(c.name) {
				want = c.name
			}
		}
		pred, present, _ := predecessor(children, own, "_c_none-", nodeName, rule)
		if !present || pred != want {
			t.Fatalf("round %d: predecessor(%q, %q) = %q, %v; sorting gives %q", round, children, own, pred, present, want)
		}
	}
}

// TestRWMutexReads checks that Reads tells readers' nodes from writers' by
// the handle's own names, given a name or a path.
func TestRWMutexReads(t *testing.T) {
	kazoo := NewRWMutex(nil, "/rw")
	curator := NewRWMutex(nil, "/rw", WithRWNodeNames("__READ__", "__WRIT__"))
	for _, tc := range []struct {
		rw   *RWMutex
		node string
		want bool
	}{
		{kazoo, "_c_0123456789abcdef0123456789abcdef-__rlock__0000000007", true},
		{kazoo, "/rw/0f3a__rlock__-2147483648", true},
		{kazoo, "/rw/_c_0123456789abcdef0123456789abcdef-__lock__0000000007", false},
		{kazoo, "/rw/_c_x-__READ__0000000007", false},
		{kazoo, "/rw/readme", false},
		{curator, "/rw/_c_x-__READ__0000000007", true},
		{curator, "/rw/_c_x-__WRIT__0000000007", false},
		{curator, "/rw/_c_x-__rlock__0000000007", false},
	} {
		if got := tc.rw.Reads(tc.node); got != tc.want {
			t.Errorf("Reads(%q) with readers named %q = %v, want %v", tc.node, tc.rw.readName, got, tc.want)
		}
	}
}
