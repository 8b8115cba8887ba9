package zkfake

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The kept listing of a directory must always equal a fresh sort of its
// children, whatever mix of creates, deletes, rolled-back creates and
// deletes, and listings comes: random runs around the size below which
// nothing is kept.
func TestKeptListingsFollowTheChildren(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		tr := newTree()
		dir := &znode{}
		tr.link(tr.get("/"), "/dir", dir, 1)
		var present []string
		for step := range 2000 {
			name := fmt.Sprintf("n%d", rng.IntN(3*minKeptListing))
			path := "/dir/" + name
			n := tr.get(path)
			switch op := rng.IntN(10); {
			case op < 4 && n == nil:
				if !tr.link(dir, path, &znode{}, int64(step)) {
					t.Fatalf("seed %d step %d: link of a new name %s failed", seed, step, name)
				}
			case op < 5 && n == nil:
				// A create undone by a failed multi.
				n = &znode{}
				tr.link(dir, path, n, int64(step))
				tr.unadd(path, n, 0)
			case op < 8 && n != nil:
				tr.unlink(dir, path, n, int64(step))
			case op < 9 && n != nil:
				// A delete undone by a failed multi.
				tr.unlink(dir, path, n, int64(step))
				tr.unremove(path, n, 0)
			default:
				present = sortedNames(dir)
				if got := tr.listings.children(dir); !slices.Equal(got, present) {
					t.Fatalf("seed %d step %d: listing %q, want %q", seed, step, got, present)
				}
			}
		}
	}
}

// A listing handed out is the caller's: changing it changes nothing kept.
func TestListingIsTheCallersOwn(t *testing.T) {
	tr := newTree()
	dir := &znode{}
	tr.link(tr.get("/"), "/dir", dir, 1)
	for i := range 2 * minKeptListing {
		tr.link(dir, fmt.Sprintf("/dir/n%03d", i), &znode{}, 2)
	}
	first := tr.listings.children(dir)
	first[0] = "changed"
	if second := tr.listings.children(dir); second[0] != "n000" {
		t.Fatalf("a changed listing came back: %q", second[0])
	}
}

// Past maxListingShift names to move, a write drops the listing and the
// next read sorts again; the result is the same.
func TestHugeDirectoryListingStaysRight(t *testing.T) {
	tr := newTree()
	dir := &znode{}
	tr.link(tr.get("/"), "/dir", dir, 1)
	for i := range maxListingShift + 10 {
		tr.link(dir, fmt.Sprintf("/dir/n%07d", i+1), &znode{}, 2)
	}
	tr.listings.children(dir)
	tr.link(dir, "/dir/n0000000", &znode{}, 3) // at the front: dropped
	if _, kept := tr.listings.names[dir]; kept {
		t.Error("an insert that would move every name kept the listing")
	}
	got := tr.listings.children(dir)
	if len(got) != maxListingShift+11 || got[0] != "n0000000" || !slices.IsSorted(got) {
		t.Fatalf("listing of %d names starts %q, sorted %v", len(got), got[0], slices.IsSorted(got))
	}
	last := fmt.Sprintf("/dir/n%07d", maxListingShift+10)
	tr.unlink(dir, last, tr.get(last), 4) // at the end: kept
	if ls, kept := tr.listings.names[dir]; !kept || len(ls.names) != maxListingShift+10 {
		t.Error("a delete at the end dropped the listing or left the name")
	}
}
