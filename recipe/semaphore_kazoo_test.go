package recipe_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// kazooSemaphoreScript runs a kazoo Semaphore of $N leases on $SEM with
// the identifier "kazoo", and obeys one command per line of its standard
// input: acquire (blocking), try (non-blocking), release, holders. It
// prints "ready" once connected, then one line per command; a ValueError
// (kazoo's refusal of another N) prints "ValueError".
const kazooSemaphoreScript = `
import os, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK"], timeout=4)
zk.start(timeout=10)
sem = zk.Semaphore(os.environ["SEM"], "kazoo", max_leases=int(os.environ["N"]))
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    try:
        if cmd == "acquire":
            sem.acquire()
            print("acquired", flush=True)
        elif cmd == "try":
            print("try %s" % sem.acquire(blocking=False), flush=True)
        elif cmd == "release":
            print("released %s" % sem.release(), flush=True)
        elif cmd == "holders":
            print("holders " + ",".join(sorted(sem.lease_holders())), flush=True)
    except ValueError:
        print("ValueError", flush=True)
zk.stop()
zk.close()
`

// kazooSemaphore is a running kazooSemaphoreScript.
type kazooSemaphore struct {
	t      *testing.T
	stdin  interface{ Write([]byte) (int, error) }
	lines  chan string
	stderr *strings.Builder
}

// startKazooSemaphore starts kazooSemaphoreScript on sem with n leases; it
// ends when the test does.
func startKazooSemaphore(t *testing.T, py string, servers []string, sem string, n int) *kazooSemaphore {
	t.Helper()
	cmd := exec.CommandContext(testCtx(t), py, "-c", kazooSemaphoreScript)
	cmd.Env = append(os.Environ(), "ZK="+strings.Join(servers, ","), "SEM="+sem, fmt.Sprintf("N=%d", n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k := &kazooSemaphore{t: t, stdin: stdin, lines: make(chan string, 16), stderr: &strings.Builder{}}
	cmd.Stderr = k.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
		close(k.lines)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
	})
	k.says("ready")
	return k
}

func (k *kazooSemaphore) do(cmd string) {
	k.t.Helper()
	if _, err := k.stdin.Write([]byte(cmd + "\n")); err != nil {
		k.t.Fatal(err)
	}
}

func (k *kazooSemaphore) says(want string) {
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

func (k *kazooSemaphore) quiet(what string) {
	k.t.Helper()
	select {
	case line := <-k.lines:
		k.t.Fatalf("%s: kazoo said %q", what, line)
	case <-time.After(300 * time.Millisecond):
	}
}

// A kazoo Semaphore and a Semaphore on one path respect one N together:
// they count each other's leases, queue on one lock ("<path>-__lock__"),
// wake each other, and refuse each other's other N. kazoo talks to the
// servers itself, so this runs on targets that name theirs (the real
// ensemble).
func testInteropKazooSemaphore(t *testing.T, env zktest.Env) {
	named, ok := env.(interface{ Servers() []string })
	if !ok {
		t.Skip("target has no server addresses for kazoo to connect to")
	}
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	const n = 2
	dir := env.Base() + "/sem"
	admin, _ := env.Connect(t, sessionTimeout)
	semaphore := func(name string, n int) *recipe.Semaphore {
		c, _ := env.Connect(t, sessionTimeout)
		return recipe.NewSemaphore(c, dir, n, recipe.WithNodeData([]byte(name)))
	}
	a, b, c := semaphore("go-a", n), semaphore("go-b", n), semaphore("go-c", n)
	leaseA := mustAcquire(t, a)

	k := startKazooSemaphore(t, py, named.Servers(), dir, n)
	k.do("holders")
	k.says("holders go-a") // kazoo reads our leases' data as identifiers
	k.do("acquire")
	k.says("acquired") // one of ours and one of kazoo's: 2
	k.do("holders")
	k.says("holders go-a,kazoo")
	if _, ok, err := b.TryAcquire(testCtx(t)); ok || err != nil {
		t.Fatalf("TryAcquire while Go and kazoo hold both leases: %v, %v", ok, err)
	}
	bDone := acquireAsync(testCtx(t), b)
	settles(t, admin, lockDirOf(dir), 1)
	stillWaiting(t, "B's Acquire while Go and kazoo hold both leases", bDone)
	k.do("release")
	k.says("released True")
	leaseB := acquiredIn(t, "B's Acquire once kazoo released", bDone)

	// kazoo waits, holding the shared lock; C queues behind it there.
	k.do("try")
	k.says("try False")
	k.do("acquire")
	settles(t, admin, lockDirOf(dir), 1)
	cDone := acquireAsync(testCtx(t), c)
	settles(t, admin, lockDirOf(dir), 2)
	k.quiet("while both leases are held")
	stillWaiting(t, "C's Acquire behind kazoo", cDone)
	mustRelease(t, leaseA)
	k.says("acquired") // first in line
	stillWaiting(t, "C's Acquire while B and kazoo hold", cDone)
	if got := leasesOf(t, admin, dir); len(got) != n {
		t.Fatalf("leases %v, want %d", got, n)
	}
	mustRelease(t, leaseB)
	leaseC := acquiredIn(t, "C's Acquire once B released", cDone)
	k.do("release")
	k.says("released True")
	mustRelease(t, leaseC)
	leasesSettle(t, admin, dir, 0)

	// kazoo refuses our N, and we refuse kazoo's.
	other := startKazooSemaphore(t, py, named.Servers(), dir, n+1)
	other.do("acquire")
	other.says("ValueError")
	kdir := env.Base() + "/kazoo-made"
	made := startKazooSemaphore(t, py, named.Servers(), kdir, n)
	made.do("acquire")
	made.says("acquired")
	if data, _, err := admin.Get(kdir); err != nil || string(data) != fmt.Sprint(n) {
		t.Fatalf("kazoo's directory holds %q (%v)", data, err)
	}
	conn, _ := env.Connect(t, sessionTimeout)
	if _, err := recipe.NewSemaphore(conn, kdir, n+1).Acquire(testCtx(t)); !errors.Is(err, recipe.ErrMaxLeasesMismatch) {
		t.Fatalf("Acquire with N = %d on kazoo's directory of %d: %v, want ErrMaxLeasesMismatch", n+1, n, err)
	}
	mustRelease(t, mustAcquire(t, recipe.NewSemaphore(conn, kdir, n)))
	made.do("release")
	made.says("released True")
	leasesSettle(t, admin, kdir, 0)
}
