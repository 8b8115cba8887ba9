package zkbench

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// memoryFanout is how many children each directory of ZnodeMemory's tree
// holds: a million znodes as a thousand directories of a thousand, rather
// than one directory whose child set alone would dominate.
const memoryFanout = 1000

// ZnodeMemory measures the fake's heap per znode. Each iteration builds a
// tree of znodes persistent znodes with empty data — directories of a
// thousand children, with 20-odd-byte paths — one Create at a time, and
// reports the growth of the live heap (runtime.MemStats.HeapAlloc after a
// garbage collection, before and after the build) divided by the znodes
// made, directories included ("B/znode"), and the build time per znode
// ("ns/znode"). ns/op is the time of a whole build.
//
// The benchmark process's heap is the fake's, so the real ensemble is
// skipped: its heap lives in other processes. Since every iteration builds
// the whole tree, run it with a time (the default -benchtime), not an
// iteration count.
func ZnodeMemory(b *testing.B, t *Target, znodes int) {
	if t.Real() {
		b.Skip("heap per znode is measured on the fake only: the ensemble's heap is in other processes")
	}
	if znodes < 1 {
		b.Fatalf("znodes = %d, want at least 1", znodes)
	}
	conn := t.Connect(b)
	var perZnode, nsPerZnode float64
	var previous string
	iteration := 0
	for b.Loop() {
		b.StopTimer()
		// The previous iteration's tree goes first, off the clock, so that
		// each build starts from the same heap; the last one is left to the
		// server's Close.
		if previous != "" {
			if err := zktest.DeleteTree(conn, previous); err != nil {
				b.Fatal(err)
			}
		}
		dir := mkdir(b, conn, fmt.Sprintf("%s/memory-%d", t.Base(), iteration))
		iteration++
		previous = dir
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()

		elapsed := b.Elapsed()
		made, err := buildTree(conn, dir, znodes)
		if err != nil {
			b.Fatal(err)
		}
		elapsed = b.Elapsed() - elapsed

		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		perZnode = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(made)
		nsPerZnode = float64(elapsed.Nanoseconds()) / float64(made)
		b.StartTimer()
	}
	b.ReportMetric(perZnode, "B/znode")
	b.ReportMetric(nsPerZnode, "ns/znode")
}

// buildTree creates znodes leaves under dir, memoryFanout to a directory,
// and returns how many znodes it made, directories included.
func buildTree(conn zktest.Conn, dir string, znodes int) (int, error) {
	made := 0
	var parent string
	for i := range znodes {
		if i%memoryFanout == 0 {
			parent = dir + "/d" + strconv.Itoa(i/memoryFanout)
			if _, err := conn.Create(parent, nil, zk.FlagPersistent, zktest.OpenACL); err != nil {
				return made, err
			}
			made++
		}
		if _, err := conn.Create(parent+"/n"+strconv.Itoa(i%memoryFanout), nil, zk.FlagPersistent, zktest.OpenACL); err != nil {
			return made, err
		}
		made++
	}
	return made, nil
}
