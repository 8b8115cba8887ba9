package main

import (
	"bufio"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// start runs the command's body with o on free ports and returns the
// ZooKeeper address it prints and, with o.admin set, the admin URL of its
// second line. The command stops, and must end cleanly, when the test
// ends.
func start(t *testing.T, o options) (addr, adminURL string) {
	t.Helper()
	o.addr, o.tick, o.maxConns, o.members = "127.0.0.1:0", 200*time.Millisecond, 60, 1
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(o, w, stop)
		w.Close()
	}()
	t.Cleanup(func() {
		stop <- os.Interrupt
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		r.Close()
	})
	lines := bufio.NewReader(r)
	line, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	addr = strings.TrimSpace(line)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("printed %q, want a 127.0.0.1 address", addr)
	}
	if o.admin == "" {
		return addr, ""
	}
	if line, err = lines.ReadString('\n'); err != nil {
		t.Fatalf("reading the admin address: %v", err)
	}
	adminURL, ok := strings.CutPrefix(strings.TrimSpace(line), "admin ")
	if !ok || !strings.HasPrefix(adminURL, "http://127.0.0.1:") {
		t.Fatalf("second line %q, want admin http://127.0.0.1:...", line)
	}
	return addr, adminURL
}

// TestServesOnThePrintedAddress uses the address the command prints with
// go-zookeeper's client.
func TestServesOnThePrintedAddress(t *testing.T) {
	addr, _ := start(t, options{})
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/x", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := conn.Exists("/x"); err != nil || !ok {
		t.Fatalf("Exists(/x) = %v, %v", ok, err)
	}
}

// TestAdminOnThePrintedAddress: with -admin the second line names the
// admin interface, which lists the sessions.
func TestAdminOnThePrintedAddress(t *testing.T) {
	_, url := start(t, options{admin: "127.0.0.1:0"})
	resp, err := http.Get(url + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("GET /sessions: %d %s, want 200 and []", resp.StatusCode, body)
	}
}

func TestRefusesNonLoopbackAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:2181", ":2181", "example.com:2181", "10.0.0.1:2181"} {
		if err := run(options{addr: addr, tick: time.Second, maxConns: 60, members: 1}, os.Stdout, nil); err == nil {
			t.Errorf("run(%q) served; want a refusal", addr)
		}
		if err := run(options{addr: "127.0.0.1:0", admin: addr, tick: time.Second, maxConns: 60, members: 1}, os.Stdout, nil); err == nil {
			t.Errorf("run with -admin %q served; want a refusal", addr)
		}
	}
}
