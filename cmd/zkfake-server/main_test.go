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

// TestServesOnThePrintedAddress runs the command's body on a free port,
// reads the address it prints, and uses it with go-zookeeper's client.
func TestServesOnThePrintedAddress(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stop := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(options{addr: "127.0.0.1:0", tick: 200 * time.Millisecond, maxConns: 60, members: 1}, w, stop)
		w.Close()
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	addr := strings.TrimSpace(line)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("printed %q, want a 127.0.0.1 address", addr)
	}
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
	stop <- os.Interrupt
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestAdminOnThePrintedAddress: with -admin the second line names the
// admin interface, which lists the sessions.
func TestAdminOnThePrintedAddress(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stop := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(options{addr: "127.0.0.1:0", admin: "127.0.0.1:0", tick: 200 * time.Millisecond, maxConns: 60, members: 1}, w, stop)
		w.Close()
	}()
	lines := bufio.NewReader(r)
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	line, err := lines.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "admin ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("second line %q, want admin http://127.0.0.1:...", line)
	}
	resp, err := http.Get(url + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("GET /sessions: %d %s, want 200 and []", resp.StatusCode, body)
	}
	stop <- os.Interrupt
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
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
