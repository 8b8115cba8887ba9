package zkfake

import (
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// checkClientPath applies the checks go-zookeeper makes before it sends a
// request, so that a bad path fails here exactly as it fails there: with
// zk.ErrInvalidPath and no request reaching the server. A sequential create
// may end in '/', since the server appends the sequence number.
func checkClientPath(path string, sequential bool) error {
	if !validPath(path, sequential, false) {
		return zk.ErrInvalidPath
	}
	return nil
}

// serverPathOK applies the server's own path check (ZooKeeper's
// PathUtils.validatePath). It differs from the client's in one place: the
// server sees the path as UTF-16, so a character outside the Basic
// Multilingual Plane arrives as surrogates, which it refuses. clientChecked
// says the path (or, for a sequential create, the path before its suffix of
// digits) has passed checkClientPath already; then only that difference is
// left to look for.
func serverPathOK(path string, clientChecked bool) bool {
	if clientChecked {
		return !hasSupplementary(path)
	}
	return validPath(path, false, true)
}

// hasSupplementary reports whether a path that passed checkClientPath holds
// a character outside the Basic Multilingual Plane. Such a path is valid
// UTF-8 — a byte that is not decodes to U+FFFD, which the check refuses —
// so a first byte of 0xF0 or above is exactly such a character.
func hasSupplementary(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xf0 {
			return true
		}
	}
	return false
}

// plainPathByte marks the bytes that need no second look in a path: every
// printable ASCII byte but '/' and '.', which may start an empty or a
// relative segment. Every request's path is checked at least once, so the
// common byte costs one table lookup.
var plainPathByte = func() (plain [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		plain[b] = b != '/' && b != '.'
	}
	return plain
}()

// validPath is the check behind checkClientPath and serverPathOK; server
// adds the server's refusal of characters outside the Basic Multilingual
// Plane.
func validPath(path string, sequential, server bool) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if len(path) == 1 {
		return true
	}
	if !sequential && path[len(path)-1] == '/' {
		return false
	}
	for i := 1; i < len(path); {
		b := path[i]
		if plainPathByte[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			switch {
			case b == '/' && path[i-1] == '/':
				return false
			case b == '.' && isRelativeSegment(path, i):
				return false
			case b <= 0x1f, b == 0x7f:
				return false
			}
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(path[i:])
		switch {
		case r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
			return false
		case server && r > 0xffff:
			return false
		}
		i += width
	}
	return true
}

// isRelativeSegment reports whether the '.' at path[i] ends a "." or ".."
// segment, which ZooKeeper refuses.
func isRelativeSegment(path string, i int) bool {
	start := i
	if path[i-1] == '.' {
		start = i - 1
	}
	if path[start-1] != '/' {
		return false
	}
	return i+1 == len(path) || path[i+1] == '/'
}

// parentOf returns the parent of an absolute, valid, non-root path.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return "/"
	}
	return path[:i]
}

// baseName returns the last segment of an absolute, valid, non-root path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// joinPath joins a parent path and a child name.
func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}
