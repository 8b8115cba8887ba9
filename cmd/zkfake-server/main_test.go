package main

import (
	"bufio"
	"io"
	"log"
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
		done <- run("127.0.0.1:0", 200*time.Millisecond, 60, w, stop)
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

func TestRefusesNonLoopbackAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:2181", ":2181", "example.com:2181", "10.0.0.1:2181"} {
		if err := run(addr, time.Second, 60, os.Stdout, nil); err == nil {
			t.Errorf("run(%q) served; want a refusal", addr)
		}
	}
}
