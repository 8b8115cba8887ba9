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
// it prints against a real 3.8 server.
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
		"Node does not exist: /cli",
		"WatchedEvent state:Closed type:None path:null",
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
}
