package zkfake

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// referencePathCheck is ZooKeeper's PathUtils.validatePath written plainly,
// segment by segment and character by character, over the path as the
// server decodes it: the yardstick for validPath's table-driven loop.
func referencePathCheck(path string, sequential, server bool) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	if path == "/" {
		return true
	}
	segments := strings.Split(path[1:], "/")
	for i, segment := range segments {
		// An empty segment is a "//" or a trailing '/', which only a
		// sequential create may have: the server appends the number.
		if segment == "" && !(sequential && i == len(segments)-1) {
			return false
		}
		if segment == "." || segment == ".." {
			return false
		}
		for _, r := range segment {
			switch {
			case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
				return false
			case server && (r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0):
				// PathUtils.validatePath, over the path as UTF-16: a
				// character past U+FFFF is two surrogates.
				return false
			}
		}
	}
	return true
}

func FuzzValidPath(f *testing.F) {
	for _, p := range []string{
		"/", "", "a", "/a", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/...", "/a.", "/.a",
		"/a/b/c", "/zksim-bench/fake-1-abc/set", "/\x00", "/a\x1fb", "/a\x7f", "/\u0085", "/\uf000",
		"/\ufff0", "/\uffff", "/\U0001F600", "/\ue000", "/\uefff", "/a\ueeee/b", "/\xff", "/\xf0", "/a\xf0\x9f", "/ü/ß", "/a/b.", "/a/..b",
	} {
		f.Add(p, false)
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, path string, sequential bool) {
		// After the client's check, the server's shortcut must answer as
		// the full check does, on the path the server sees.
		if validPath(path, sequential, false) {
			sent := path
			if sequential {
				sent = withSequence(path, 1)
			}
			if got, want := serverPathOK(sent, true), serverPathOK(sent, false); got != want {
				t.Fatalf("serverPathOK(%q) after the client's check = %v, the full check says %v", sent, got, want)
			}
		}
		if !utf8.ValidString(path) {
			// The reference decodes as the server does; invalid UTF-8
			// cannot come from a Go string the client encodes.
			t.Skip()
		}
		for _, server := range []bool{false, true} {
			if got, want := validPath(path, sequential, server), referencePathCheck(path, sequential, server); got != want {
				t.Fatalf("validPath(%q, sequential=%v, server=%v) = %v, want %v", path, sequential, server, got, want)
			}
		}
	})
}

func TestWithSequenceFormatsAsTheServer(t *testing.T) {
	for _, n := range []int32{0, 1, 9, 10, 123456789, 1<<31 - 1, -1, -1 << 31} {
		if got, want := withSequence("/lock-", n), fmt.Sprintf("/lock-%010d", n); got != want {
			t.Errorf("withSequence(%d) = %q, want %q", n, got, want)
		}
	}
}

func BenchmarkValidPath(b *testing.B) {
	for b.Loop() {
		if !validPath("/zksim-bench/fake-12345-abcdefgh/set", false, true) {
			b.Fatal("invalid")
		}
	}
}
