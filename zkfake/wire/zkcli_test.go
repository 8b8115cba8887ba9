package wire_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"

// TestZkCli drives Debian's zkCli.sh (the Java client) through a scripted
// session against the served fake and checks what it prints, which is what
// it prints against a real 3.8 server (the same script run against a
// 3-node ensemble), ZooKeeper 3.8's commands go-zookeeper has no call for
// (addWatch, removewatches, getEphemerals, getAllChildrenNumber, whoami)
// included.
func TestZkCli(t *testing.T) {
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed", zkCli)
	}
	env := serve(t)
	script := strings.Join([]string{
		"create /cli hello",
		"get /cli",
		"create /cli/child",
		"ls /cli",
		"set /cli world",
		"get /cli",
		"stat /cli",
		"delete /cli/child",
		"delete /cli",
		"ls /",
		// ZooKeeper 3.8's requests go-zookeeper cannot send.
		"create /ops hello",
		"addWatch /ops", // recursive, zkCli's default
		"addWatch -m PERSISTENT /ops/p",
		"create /ops/a x",
		"set /ops/a y",
		"create /ops/p",
		"create /ops/p/k",
		"create -e /ops/e",
		"getEphemerals",
		"getEphemerals /ops/a",
		"getAllChildrenNumber /ops",
		"getAllChildrenNumber /ops/none",
		"whoami",
		"addauth digest bob:pw",
		"whoami",
		"removewatches /ops",
		"removewatches /ops -d",
		"set /ops/a z",
		"deleteall /ops",
		"get /cli",
		"quit",
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCli, "-server", env.l.Addr().String())
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// zkCli exits with the status of its last failed command: the script
	// ends with a get of a deleted node, so 1, as against a real server.
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("zkCli.sh: %v (want exit status 1)\n%s", err, out.String())
	}
	// The lines zkCli prints for the script, in order (stat's times vary
	// and are left out). Its watcher thread prints the SyncConnected event
	// whenever it gets to run — on a busy machine after the script's
	// output — so that line is looked for on its own.
	connected := "WatchedEvent state:SyncConnected type:None path:null"
	if !strings.Contains(out.String(), connected) {
		t.Fatalf("zkCli output lacks %q:\n%s", connected, out.String())
	}
	want := []string{
		"Created /cli",
		"hello",
		"Created /cli/child",
		"[child]",
		"world",
		"cZxid = 0x2",
		"mZxid = 0x4",
		"pZxid = 0x3",
		"cversion = 1",
		"dataVersion = 1",
		"aclVersion = 0",
		"ephemeralOwner = 0x0",
		"dataLength = 5",
		"numChildren = 1",
		"[zookeeper]",
		"Created /ops",
		"Created /ops/a",
		"Created /ops/p",
		"Created /ops/p/k",
		"Created /ops/e",
		"[/ops/e]",
		"[]",
		"4",
		"Node does not exist: /ops/none",
		"Auth scheme: User",
		"ip: 127.0.0.1",
		"Auth scheme: User",
		"digest: bob",
		"ip: 127.0.0.1",
		// The second removal finds nothing left: the client says so
		// itself; the first ended the watch with PersistentWatchRemoved.
		"KeeperErrorCode = No such watcher for /ops",
		"Node does not exist: /cli",
		// Not "WatchedEvent state:Closed type:None path:null": the
		// client's own watcher thread prints it as the client closes,
		// and on a busy machine the JVM may exit first (CI saw it
		// missing once). The server has no part in it.
	}
	lines := strings.Split(out.String(), "\n")
	i := 0
	for _, line := range lines {
		if i < len(want) && strings.TrimSpace(line) == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("zkCli output lacks %q (after %d expected lines):\n%s", want[i], i, out.String())
	}
	// The watch events, each as many times as against a real server: the
	// recursive watch on /ops until its removal (the last set fires
	// nothing), the persistent one on /ops/p until its node goes.
	for event, n := range map[string]int{
		"type:NodeCreated path:/ops/a":          1,
		"type:NodeDataChanged path:/ops/a":      1,
		"type:NodeCreated path:/ops/p":          1,
		"type:NodeCreated path:/ops/p/k":        1,
		"type:NodeChildrenChanged path:/ops/p":  2,
		"type:NodeCreated path:/ops/e":          1,
		"type:PersistentWatchRemoved path:/ops": 1,
		"type:NodeDeleted path:/ops/p":          1,
		"type:NodeDeleted path:/ops/a":          0,
		"type:NodeChildrenChanged path:/ops":    0,
	} {
		line := "WatchedEvent state:SyncConnected " + event
		if got := strings.Count(out.String(), line+"\n"); got != n {
			t.Errorf("zkCli printed %q %d times, want %d:\n%s", line, got, n, out.String())
		}
	}
}
