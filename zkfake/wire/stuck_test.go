package wire_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

// A test stuck waiting while a go-zookeeper client of a Pipe is connected
// would spin in virtual time until go test's timeout; the Pipe stops it,
// and the test fails as deadlocked, with a line that says why. The stuck
// test runs in a child process, as it must fail.
func TestPipeStuckTestFails(t *testing.T) {
	if os.Getenv("WIRE_STUCK_CHILD") == "1" {
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer()
			pipe := wire.ServePipe(srv)
			defer pipe.Close()
			conn, events, err := pipe.Connect(4 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			waitFor(t, events, zk.StateHasSession)
			<-make(chan struct{}) // what never comes
		})
		return
	}
	if testing.Short() {
		t.Skip("runs a child test binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPipeStuckTestFails$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WIRE_STUCK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the stuck test ran until the timeout:\n%s", tail(out))
	}
	if err == nil {
		t.Fatalf("the stuck test passed:\n%s", tail(out))
	}
	for _, want := range []string{"the test seems stuck", "deadlock"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the stuck test's output lacks %q:\n%s", want, tail(out))
		}
	}
}

func tail(out []byte) string {
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return string(out)
}
