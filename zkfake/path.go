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
// PathUtils.validatePath), which the server makes on a create, a setData,
// a setACL and a multi's check. It refuses more than the client's: it sees
// the path as UTF-16 and refuses U+D800 to U+F8FF, where go-zookeeper
// refuses only U+F000 to U+F8FF, and U+FFF0 to U+FFFF, where go-zookeeper
// lets U+FFFF through; so a private-use character from U+E000 to U+EFFF,
// U+FFFF, and any character outside the Basic Multilingual Plane (which
// arrives as surrogates) pass the client and are refused here.
// clientChecked says the path (or, for a sequential create, the path
// before its suffix of digits) has passed checkClientPath already; then
// only those differences are left to look for.
func serverPathOK(path string, clientChecked bool) bool {
	if clientChecked {
		return !serverRefusesMore(path)
	}
	return validPath(path, false, true)
}

// serverRefusesMore reports whether a path that passed checkClientPath
// holds a character the server refuses and the client does not. Such a
// path is valid UTF-8 (a byte that is not decodes to U+FFFD, which the
// client refuses), so the bytes tell: 0xEE leads U+E000 to U+EFFF and
// nothing else, EF BF BF is U+FFFF, and a byte of 0xF0 or above leads a
// character outside the Basic Multilingual Plane.
func serverRefusesMore(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == 0xee, b >= 0xf0:
			return true
		case b == 0xef && strings.HasPrefix(s[i+1:], "\xbf\xbf"):
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
// adds what the server refuses beyond the client (serverPathOK).
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
		case server && (r >= 0xe000 && r < 0xf000 || r == 0xffff || r > 0xffff):
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
