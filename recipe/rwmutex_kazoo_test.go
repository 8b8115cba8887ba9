package recipe_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake/zktest"
)

// kazooRWScript holds a kazoo ReadLock and WriteLock on $LOCK and runs
// the commands that arrive on its standard input, one a line:
// "acquire read", "try write", "release read", ... It answers each with
// one line ("acquired read", "got write" or "busy write", "released
// read"); an acquire answers once it holds, and reads no further command
// meanwhile.
const kazooRWScript = `
import os, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK"], timeout=4)
zk.start(timeout=10)
locks = {"read": zk.ReadLock(os.environ["LOCK"], "kazoo-read"),
         "write": zk.WriteLock(os.environ["LOCK"], "kazoo-write")}
for line in sys.stdin:
    cmd, kind = line.split()
    lock = locks[kind]
    if cmd == "acquire":
        lock.acquire()
        print("acquired " + kind, flush=True)
    elif cmd == "try":
        print(("got " if lock.acquire(blocking=False) else "busy ") + kind, flush=True)
    elif cmd == "release":
        lock.release()
        print("released " + kind, flush=True)
zk.stop()
zk.close()
`

// kazooProcess is a running Python script driven line by line.
type kazooProcess struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string
	stderr *strings.Builder
	exited chan struct{} // closed once Wait has set waitErr
	waitEr error
}

// startKazoo runs script with py, with env added to the environment, and
// stops it (closing its input, killing it if it does not exit) when the
// test ends.
func startKazoo(t *testing.T, py, script string, env ...string) *kazooProcess {
	cmd := exec.CommandContext(testCtx(t), py, "-c", script)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k := &kazooProcess{t: t, stdin: stdin, lines: make(chan string, 16), stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = k.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
		close(k.lines)
		k.waitEr = cmd.Wait()
		close(k.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-k.exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
	})
	return k
}

// send writes one command.
func (k *kazooProcess) send(cmd string) {
	k.t.Helper()
	if _, err := io.WriteString(k.stdin, cmd+"\n"); err != nil {
		k.t.Fatal(err)
	}
}

// says fails unless the next line is want.
func (k *kazooProcess) says(want string) {
	k.t.Helper()
	select {
	case line, ok := <-k.lines:
		if !ok || line != want {
			k.t.Fatalf("kazoo said %q (open %v), want %q; stderr:\n%s", line, ok, want, k.stderr.String())
		}
	case <-time.After(time.Minute):
		k.t.Fatalf("kazoo did not say %q; stderr:\n%s", want, k.stderr.String())
	}
}

// quiet fails if a line comes within a short while.
func (k *kazooProcess) quiet(what string) {
	k.t.Helper()
	select {
	case line := <-k.lines:
		k.t.Fatalf("%s: kazoo said %q", what, line)
	case <-time.After(300 * time.Millisecond):
	}
}

// exit closes the script's input and fails unless it exits cleanly.
func (k *kazooProcess) exit() {
	k.t.Helper()
	k.stdin.Close()
	select {
	case <-k.exited:
		if k.waitEr != nil {
			k.t.Fatalf("kazoo: %v; stderr:\n%s", k.waitEr, k.stderr.String())
		}
	case <-time.After(time.Minute):
		k.t.Fatal("kazoo did not exit")
	}
}

// kazoo's ReadLock and WriteLock and an RWMutex with the default names
// exclude each other on one path, in both directions and in queue order:
// readers of both share, a writer of either excludes readers and writers
// of both, and a reader queued behind the other's waiting writer waits
// for it. kazoo talks to the servers itself, so this runs on targets that
// name theirs (the real ensemble).
func testInteropKazooRWLock(t *testing.T, env zktest.Env) {
	named, ok := env.(interface{ Servers() []string })
	if !ok {
		t.Skip("target has no server addresses for kazoo to connect to")
	}
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	dir := env.Base() + "/rw"
	conns, rws := rwHandles(t, env, dir, 3)
	a, b, w := rws[0], rws[1], rws[2]
	k := startKazoo(t, py, kazooRWScript, "ZK="+strings.Join(named.Servers(), ","), "LOCK="+dir)

	// Readers share across implementations; kazoo's writer is kept out.
	mustRLock(t, a)
	k.send("try read")
	k.says("got read")
	k.send("release read")
	k.says("released read")
	k.send("try write")
	k.says("busy write")

	// kazoo's writer waits for our reader; our next reader queues behind
	// kazoo's writer and waits for it, as does our writer.
	k.send("acquire write")
	settles(t, conns[0], dir, 2)
	k.quiet("kazoo's writer while our reader holds")
	bDone := rlockAsync(testCtx(t), b)
	settles(t, conns[0], dir, 3)
	stillBlocked(t, "our reader behind kazoo's waiting writer", bDone)
	if err := a.RUnlock(); err != nil {
		t.Fatal(err)
	}
	k.says("acquired write")
	stillBlocked(t, "our reader while kazoo's writer holds", bDone)
	if ok, err := w.TryLock(testCtx(t)); ok || err != nil {
		t.Fatalf("our TryLock while kazoo's writer holds = %v, %v", ok, err)
	}
	k.send("release write")
	k.says("released write")
	if err := mustWait(t, "our reader after kazoo's writer", bDone); err != nil {
		t.Fatal(err)
	}

	// kazoo's reader shares with ours; our writer waits for both.
	k.send("acquire read")
	k.says("acquired read")
	wDone := wlockAsync(testCtx(t), w)
	settles(t, conns[0], dir, 3)
	if err := b.RUnlock(); err != nil {
		t.Fatal(err)
	}
	stillBlocked(t, "our writer while kazoo's reader holds", wDone)
	k.send("release read")
	k.says("released read")
	if err := mustWait(t, "our writer after kazoo's reader", wDone); err != nil {
		t.Fatal(err)
	}

	// kazoo's reader waits for our writer.
	k.send("acquire read")
	settles(t, conns[0], dir, 2)
	k.quiet("kazoo's reader while our writer holds")
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
	k.says("acquired read")
	if ok, err := a.TryRLock(testCtx(t)); !ok || err != nil {
		t.Fatalf("our TryRLock beside kazoo's reader = %v, %v", ok, err)
	}
	if err := a.RUnlock(); err != nil {
		t.Fatal(err)
	}
	k.send("release read")
	k.says("released read")
	k.exit()
	if ids := contenders(t, conns[0], dir); len(ids) != 0 {
		t.Errorf("nodes left: %v", ids)
	}
}
