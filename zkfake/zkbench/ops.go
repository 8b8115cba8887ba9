package zkbench

import (
	"strconv"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// payload is the data every workload writes: 32 bytes, a typical small
// coordination value (an address, an id, a version).
var payload = []byte("0123456789abcdef0123456789abcdef")

// childCount is how many children Children lists.
const childCount = 10

// batchSize is how many nodes Create and Delete work through before they
// stop the clock to clean up or restock, so that the tree stays small and
// the clean-up's cost is spread thin. The real side never gets near the
// fake's size in a bounded run.
func batchSize(t *Target) int {
	if t.Real() {
		return zktest.MultiBatch
	}
	return 10 * zktest.MultiBatch
}

// numbered returns n paths prefix0, prefix1, ….
func numbered(prefix string, n int) []string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = prefix + strconv.Itoa(i)
	}
	return paths
}

// Create measures one persistent create with 32 bytes of data. The nodes
// are deleted, off the clock, every batch of them.
func Create(b *testing.B, t *Target) {
	conn := t.Connect(b)
	dir := mkdir(b, conn, t.Base()+"/create")
	paths := numbered(dir+"/n", batchSize(t))
	next := 0
	for b.Loop() {
		if next == len(paths) {
			b.StopTimer()
			if err := zktest.DeleteAll(conn, paths); err != nil {
				b.Fatal(err)
			}
			next = 0
			b.StartTimer()
		}
		got, err := conn.Create(paths[next], payload, zk.FlagPersistent, zktest.OpenACL)
		if err != nil {
			b.Fatal(err)
		}
		if got != paths[next] {
			b.Fatalf("created %q, want %q", got, paths[next])
		}
		next++
	}
}

// Delete measures one delete of a childless node. The nodes are created,
// off the clock, a batch at a time.
func Delete(b *testing.B, t *Target) {
	conn := t.Connect(b)
	dir := mkdir(b, conn, t.Base()+"/delete")
	paths := numbered(dir+"/n", batchSize(t))
	if err := zktest.CreateAll(conn, paths, payload); err != nil {
		b.Fatal(err)
	}
	next := 0
	for b.Loop() {
		if next == len(paths) {
			b.StopTimer()
			if err := zktest.CreateAll(conn, paths, payload); err != nil {
				b.Fatal(err)
			}
			next = 0
			b.StartTimer()
		}
		if err := conn.Delete(paths[next], -1); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// CreateDelete measures a create and a delete of the same node, the
// round trip of a short-lived node.
func CreateDelete(b *testing.B, t *Target) {
	conn := t.Connect(b)
	path := t.Base() + "/create-delete"
	for b.Loop() {
		if _, err := conn.Create(path, payload, zk.FlagPersistent, zktest.OpenACL); err != nil {
			b.Fatal(err)
		}
		if err := conn.Delete(path, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// Get measures one read of a node holding 32 bytes.
func Get(b *testing.B, t *Target) {
	conn := t.Connect(b)
	path := t.Base() + "/get"
	if _, err := conn.Create(path, payload, zk.FlagPersistent, zktest.OpenACL); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		data, _, err := conn.Get(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) != len(payload) {
			b.Fatalf("read %d bytes, want %d", len(data), len(payload))
		}
	}
}

// Set measures one unconditional write of 32 bytes.
func Set(b *testing.B, t *Target) {
	conn := t.Connect(b)
	path := t.Base() + "/set"
	if _, err := conn.Create(path, payload, zk.FlagPersistent, zktest.OpenACL); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := conn.Set(path, payload, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// Children measures one listing of a node with ten children.
func Children(b *testing.B, t *Target) {
	conn := t.Connect(b)
	dir := mkdir(b, conn, t.Base()+"/children")
	if err := zktest.CreateAll(conn, numbered(dir+"/c", childCount), nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		children, _, err := conn.Children(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(children) != childCount {
			b.Fatalf("listed %d children, want %d", len(children), childCount)
		}
	}
}

// Multi measures one two-op transaction, the compare-and-set idiom: check
// the node's version and write it. Each iteration expects the version the
// previous one left, so a transaction that did not apply fails the
// benchmark.
func Multi(b *testing.B, t *Target) {
	conn := t.Connect(b)
	path := t.Base() + "/multi"
	if _, err := conn.Create(path, payload, zk.FlagPersistent, zktest.OpenACL); err != nil {
		b.Fatal(err)
	}
	check := &zk.CheckVersionRequest{Path: path}
	set := &zk.SetDataRequest{Path: path, Data: payload}
	ops := []any{check, set}
	var version int32
	for b.Loop() {
		check.Version, set.Version = version, version
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatalf("multi at version %d: %v", version, err)
		}
		version++
	}
}
