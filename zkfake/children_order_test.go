package zkfake_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// listings makes a directory of 12 children and lists it after each of a
// few changes, with Children and ChildrenW, and returns the listings.
func listings(t *testing.T, opts ...zkfake.Option) [][]string {
	var out [][]string
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(opts...)
		defer srv.Close()
		c, _ := connect(t, srv, 10*time.Second)
		mustCreate(t, c, "/dir", 0)
		for i := range 12 {
			mustCreate(t, c, fmt.Sprintf("/dir/n%02d", i), 0)
		}
		list := func(watch bool) {
			var names []string
			var err error
			if watch {
				names, _, _, err = c.ChildrenW("/dir")
			} else {
				names, _, err = c.Children("/dir")
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, names)
		}
		for i := range 6 {
			list(false)
			list(true)
			switch i % 3 {
			case 0:
				mustCreate(t, c, "/dir/x-", zk.FlagSequence)
			case 1:
				if err := c.Delete("/dir/n00", -1); err != nil && err != zk.ErrNoNode {
					t.Fatal(err)
				}
				mustCreate(t, c, fmt.Sprintf("/dir/m%d", i), 0)
			case 2:
				mustCreate(t, c, fmt.Sprintf("/dir/m%d", i), zk.FlagEphemeral)
			}
		}
	})
	return out
}

func TestChildrenSortedByDefault(t *testing.T) {
	for i, names := range listings(t, zkfake.WithSeed(3)) {
		if !slices.IsSorted(names) {
			t.Fatalf("listing %d not sorted: %q", i, names)
		}
	}
}

func TestShuffledChildrenFollowTheSeed(t *testing.T) {
	first := listings(t, zkfake.WithSeed(3), zkfake.WithShuffledChildren())
	sorted := listings(t, zkfake.WithSeed(3))
	unsorted := 0
	for i, names := range first {
		if !slices.Equal(slices.Sorted(slices.Values(names)), sorted[i]) {
			t.Fatalf("listing %d holds %q; want the names %q in any order", i, names, sorted[i])
		}
		if !slices.IsSorted(names) {
			unsorted++
		}
		// Children and ChildrenW of the same state agree.
		if i%2 == 1 && !slices.Equal(names, first[i-1]) {
			t.Fatalf("listings %d and %d of the same state differ: %q, %q", i-1, i, first[i-1], names)
		}
		// A change of children draws a new order: the names of the state
		// before do not keep their order among themselves.
		if i >= 2 && i%2 == 0 {
			before := first[i-2]
			kept := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(before, n) })
			was := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return !slices.Contains(names, n) })
			if slices.Equal(kept, was) {
				t.Fatalf("listing %d kept the order of the state before: %q, then %q", i, before, names)
			}
		}
	}
	if unsorted != len(first) {
		t.Fatalf("%d of %d listings of 13 to 16 names unsorted; want all of them", unsorted, len(first))
	}
	for run := range 5 {
		if again := listings(t, zkfake.WithSeed(3), zkfake.WithShuffledChildren()); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("run %d with the same seed listed differently:\n%q\n%q", run, again, first)
		}
	}
	if other := listings(t, zkfake.WithSeed(4), zkfake.WithShuffledChildren()); fmt.Sprint(other) == fmt.Sprint(first) {
		t.Fatal("seeds 3 and 4 gave the same orders: the seed is not used")
	}
}

// TestShuffledChildrenDoNotHangOnTheirNames holds a seeded listing to one
// order of a directory's children however they are named: a client library
// draws the GUIDs of its protected names from crypto/rand, and two runs of
// one scenario must list the same nodes, made in the same order, the same
// way.
func TestShuffledChildrenDoNotHangOnTheirNames(t *testing.T) {
	// sequences lists /dir, whose i-th child is named by name(i), and
	// returns each child's sequence number in the listing's order.
	sequences := func(name func(i int) string) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer(zkfake.WithSeed(3), zkfake.WithShuffledChildren())
			defer srv.Close()
			c, _ := connect(t, srv, 10*time.Second)
			mustCreate(t, c, "/dir", 0)
			// 40: past the size from which the server keeps a
			// directory's listing between reads.
			for i := range 40 {
				mustCreate(t, c, "/dir/"+name(i)+"-lock-", zk.FlagSequence)
			}
			names, _, err := c.Children("/dir")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				out = append(out, n[strings.LastIndexByte(n, '-')+1:])
			}
		})
		return out
	}
	ascending := sequences(func(i int) string { return fmt.Sprintf("a%02d", i) })
	descending := sequences(func(i int) string { return fmt.Sprintf("a%02d", 99-i) })
	if !slices.Equal(ascending, descending) {
		t.Fatalf("the same nodes, named otherwise, listed in another order:\n%q\n%q", ascending, descending)
	}
	if slices.IsSorted(ascending) {
		t.Fatalf("listing in creation order, not shuffled: %q", ascending)
	}
}
