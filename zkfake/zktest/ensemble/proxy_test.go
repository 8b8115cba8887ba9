package ensemble

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoServer stands in for a member: it echoes what it reads and counts the
// connections it accepted.
func echoServer(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	expectRead(t, c, msg)
}

func expectRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %q, %v; want nothing until the deadline", buf[:n], err)
	}
}

func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	if n, err := c.Read(buf); err == nil || isTimeout(err) {
		t.Fatalf("read %q, %v; want the connection closed", buf[:n], err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *link) connCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func TestLinkHoldsUntilHealed(t *testing.T) {
	member, accepted := echoServer(t)
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()

	live, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	roundTrip(t, live, "before")

	l.partition(linkHolding)
	if !l.isCut() {
		t.Fatal("isCut() = false after partition")
	}
	expectClosed(t, live)

	// A reconnect during the partition connects to the proxy, but what it
	// sends does not reach the member until the link heals.
	held, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatalf("dial while partitioned: %v; want a held connection", err)
	}
	defer held.Close()
	if _, err := io.WriteString(held, "connect-request"); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, held)
	if n := accepted.Load(); n != 1 {
		t.Fatalf("member accepted %d connections during the partition; want only the first", n)
	}

	// A partition while a connection is held keeps it held.
	l.partition(linkHolding)
	expectSilence(t, held)

	l.heal()
	expectRead(t, held, "connect-request")
	roundTrip(t, held, "after")
	if n := accepted.Load(); n != 2 {
		t.Fatalf("member accepted %d connections; want 2", n)
	}
	l.heal() // healing a healed link changes nothing
	roundTrip(t, held, "again")
}

func TestLinkDropsClientsThatGiveUpWhileHeld(t *testing.T) {
	member, accepted := echoServer(t)
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.partition(linkHolding)
	c, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "connect-request")
	waitFor(t, "the proxy to accept", func() bool { return l.connCount() == 1 })
	c.Close()
	waitFor(t, "the proxy to drop the abandoned connection", func() bool { return l.connCount() == 0 })
	l.heal()
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("member accepted %d connections for a client that had gone; want 0", n)
	}
}

func TestLinkMemberDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	member := ln.Addr().String()
	ln.Close() // nothing listens there any more
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	// Open, the dial fails as it would without the proxy, so that
	// go-zookeeper moves on to another member.
	if _, err := l.dial("tcp", member, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial of a member that is down: %v; want ECONNREFUSED", err)
	}
	// A held attempt cannot know; released, it is closed.
	l.partition(linkHolding)
	c, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l.heal()
	expectClosed(t, c)
}

func TestLinkDialErrors(t *testing.T) {
	member, _ := echoServer(t)
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.dial("tcp", "127.0.0.1:1", time.Second); err == nil {
		t.Fatal("dial of an address the link was not opened with succeeded")
	}
	c, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "x")
	l.close() // returns only once every proxy goroutine has ended
	expectClosed(t, c)
	if _, err := l.dial("tcp", member, time.Second); !errors.Is(err, errLinkClosed) {
		t.Fatalf("dial after close: %v; want errLinkClosed", err)
	}
	l.close() // closing twice is harmless
}

func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:2181":   "127.0.0.1:2181",
		"[::1]:2181":       "[::1]:2181",
		"[0:0::1]:2181":    "[::1]:2181",
		"127.000.0.1:2181": "127.000.0.1:2181", // not an IP Go parses: kept as written
	} {
		got, err := addrKey(in)
		if err != nil || got != want {
			t.Errorf("addrKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestLinkRefusesUntilHealed(t *testing.T) {
	member, accepted := echoServer(t)
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	live, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	roundTrip(t, live, "before")

	l.partition(linkRefusing)
	expectClosed(t, live)
	if _, err := l.dial("tcp", member, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while refusing: %v; want ECONNREFUSED", err)
	}
	l.heal()
	again, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	roundTrip(t, again, "after")
	if n := accepted.Load(); n != 2 {
		t.Fatalf("member accepted %d connections; want 2", n)
	}
}

func TestLinkRefusingDropsHeldConnections(t *testing.T) {
	member, accepted := echoServer(t)
	l, err := newLink([]string{member}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.partition(linkHolding)
	held, err := l.dial("tcp", member, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitFor(t, "the proxy to accept", func() bool { return l.connCount() == 1 })
	l.partition(linkRefusing)
	expectClosed(t, held)
	l.heal()
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("member accepted %d connections; want 0", n)
	}
}

func TestHomeFirst(t *testing.T) {
	servers := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	h := newHomeFirst(servers, 1)
	if err := h.Init([]string{"127.0.0.1:3", "127.0.0.1:1", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	fail := h.wrap(func(string, string, time.Duration) (net.Conn, error) { return nil, syscall.ECONNREFUSED })
	succeed := h.wrap(func(string, string, time.Duration) (net.Conn, error) { return nil, nil })
	type step struct {
		server string
		retry  bool
	}
	next := func() step { s, r := h.Next(); return step{s, r} }
	want := []step{{"127.0.0.1:2", false}, {"127.0.0.1:1", false}, {"127.0.0.1:3", false}, {"127.0.0.1:2", true}, {"127.0.0.1:1", false}}
	for i, w := range want {
		if got := next(); got != w {
			t.Fatalf("attempt %d: Next() = %v; want %v", i, got, w)
		}
		fail("tcp", w.server, time.Second)
	}
	// Once a member has been reached, the next attempt after losing it goes
	// home again.
	succeed("tcp", "127.0.0.1:3", time.Second)
	if got := next(); got != (step{"127.0.0.1:2", false}) {
		t.Fatalf("after a successful dial, Next() = %v; want home", got)
	}
	if err := h.Init(servers[:2]); err == nil {
		t.Fatal("Init with a different number of servers succeeded")
	}
}

// The scanner finds every frame's head however the stream is cut, and
// says where the frame it is told to stop at began in the chunk at hand.
func TestFrameScannerAnyChunking(t *testing.T) {
	frame := func(body ...byte) []byte {
		return append([]byte{0, 0, 0, byte(len(body))}, body...)
	}
	long := make([]byte, 40)
	for i := range long {
		long[i] = byte(100 + i)
	}
	var stream []byte
	stream = append(stream, frame(1, 2, 3)...)    // shorter than a head
	stream = append(stream, frame()...)           // empty
	stream = append(stream, frame(long...)...)    // longer than a head
	stream = append(stream, frame(9, 9, 9, 9)...) // the one to stop at
	stream = append(stream, frame(7)...)
	stopAt := len(frame(1, 2, 3)) + len(frame()) + len(frame(long...))
	want := [][]byte{{1, 2, 3}, {}, long[:headLen], {9, 9, 9, 9}}
	for size := 1; size <= len(stream); size++ {
		var s frameScanner
		var heads [][]byte
		passed, stopped := 0, false
		for off := 0; off < len(stream) && !stopped; off += size {
			chunk := stream[off:min(off+size, len(stream))]
			cut := s.scan(chunk, func(n int, head []byte) bool {
				heads = append(heads, append([]byte{}, head...))
				return n != 3
			})
			if cut >= 0 {
				passed += cut
				stopped = true
			} else {
				passed += len(chunk)
			}
		}
		if fmt.Sprint(heads) != fmt.Sprint(want) {
			t.Fatalf("chunks of %d: heads %v; want %v", size, heads, want)
		}
		// The frame is known once its length and head have arrived; bytes
		// of it that went by in earlier chunks are gone already, and of
		// the chunk at hand nothing from the frame's start on passes.
		known := stopAt + 4 + 4 - 1 // its last byte read
		want := max(stopAt, known-known%size)
		if passed != want {
			t.Fatalf("chunks of %d: %d bytes passed; want %d", size, passed, want)
		}
	}
}
