package ensemble

import (
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}},
		{" 127.0.0.1:22181, 127.0.0.1:22182 ,127.0.0.1:22183,", []string{"127.0.0.1:22181", "127.0.0.1:22182", "127.0.0.1:22183"}},
		{"127.0.0.2:2181", []string{"127.0.0.2:2181"}},
		{"[::1]:2181", []string{"[::1]:2181"}},
	} {
		got, err := ParseServers(tc.spec)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseServers(%q) = %q, %v; want %q, nil", tc.spec, got, err, tc.want)
		}
	}
}

func TestParseServersRejects(t *testing.T) {
	for _, tc := range []struct {
		spec, wantErr string
	}{
		{"", "no server addresses"},
		{" , ", "no server addresses"},
		{"10.0.0.1:2181", "only loopback"},
		{"127.0.0.1:2181,192.168.1.5:2181", "only loopback"},
		{"localhost:2181", "only loopback"},
		{"zk.example.com:2181", "only loopback"},
		{"127.0.0.1", "want host:port"},
		{"127.0.0.1:2181/chroot", "port"},
		{"127.0.0.1:0", "port"},
		{"127.0.0.1:65536", "port"},
	} {
		got, err := ParseServers(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseServers(%q) = %q, %v; want an error containing %q", tc.spec, got, err, tc.wantErr)
		}
	}
}

func TestZnodeName(t *testing.T) {
	for in, want := range map[string]string{
		"TestConformance/tree/root": "TestConformance_tree_root",
		"TestX/a_b-c.d":             "TestX_a_b-c.d",
		"TestÜnicode/sp ace#01":     "Test_nicode_sp_ace_01",
		strings.Repeat("x", 500):    strings.Repeat("x", 120),
	} {
		if got := znodeName(in); got != want {
			t.Errorf("znodeName(%q) = %q; want %q", in, got, want)
		}
	}
}

// fourLetterServer answers every connection with reply to the four-letter
// word it expects, and with nothing to any other, as ZooKeeper does.
func fourLetterServer(t *testing.T, word, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(c, buf); err == nil && string(buf) == word {
				io.WriteString(c, reply)
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestTickTimeFromConf(t *testing.T) {
	addr := fourLetterServer(t, "conf", "clientPort=2181\ntickTime=250\nmaxSessionTimeout=5000\n")
	got, err := tickTime(addr)
	if err != nil || got != 250*time.Millisecond {
		t.Fatalf("tickTime = %v, %v; want 250ms", got, err)
	}
	addr = fourLetterServer(t, "conf", "conf is not executed because it is not in the whitelist.\n")
	if _, err := tickTime(addr); err == nil || !strings.Contains(err.Error(), "no tickTime") {
		t.Fatalf("tickTime from a server refusing conf: %v; want a no-tickTime error", err)
	}
}

func TestWaitAllOK(t *testing.T) {
	ok := fourLetterServer(t, "ruok", "imok")
	if err := waitAllOK([]string{ok}, time.Second); err != nil {
		t.Fatalf("waitAllOK(imok server) = %v", err)
	}
	wrong := fourLetterServer(t, "ruok", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	err = waitAllOK([]string{ok, wrong, closed}, 300*time.Millisecond)
	if err == nil || strings.Contains(err.Error(), ok) || !strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), closed) {
		t.Fatalf("waitAllOK = %v; want an error naming %s and %s but not %s", err, wrong, closed, ok)
	}
}
