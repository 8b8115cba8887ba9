package recipe

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// sequenceDigits is the width of the counter ZooKeeper appends to the name of
// a sequential znode ("%010d").
const sequenceDigits = 10

// protectedPrefix begins the name of a protected node, as in go-zookeeper's
// CreateProtectedEphemeralSequential and Curator's withProtection: the
// prefix, a random GUID, a dash, then the lock's node name.
const protectedPrefix = "_c_"

// parseSequence returns the sequence number a child name ends with, and
// whether it ends with one at all. Only the end of the name counts:
// protected names begin with a random GUID, so comparing whole names would
// order contenders by chance rather than by arrival.
//
// ZooKeeper's counter is a signed int32 printed as "%010d": ten digits up
// to 2147483647, then, past the wrap, "-2147483648" (a sign and ten digits)
// up to "-1000000000", and from "-999999999" on a sign and nine digits
// ("-000000005"). A '-' right before ten digits is the sign unless it
// follows a letter or a digit, as the one in "lock-0000000001" does: a name
// "lock" + "-1000000000" cannot be told from "lock-" + "1000000000", and is
// read as the latter (ten digits past 2147483647 can only be negative, and
// are read so). A Mutex reads the names of its own kind by their prefix
// instead (sequenceIn), where there is no such doubt. Numbers outside the
// int32 range are no sequence.
func parseSequence(name string) (int64, bool) {
	n := len(name)
	if n < sequenceDigits {
		return 0, false
	}
	tail := name[n-sequenceDigits:]
	if tail[0] == '-' {
		v, ok := parseDigits(tail[1:])
		return -v, ok
	}
	v, ok := parseDigits(tail)
	if !ok {
		return 0, false
	}
	if n > sequenceDigits && name[n-sequenceDigits-1] == '-' && (n == sequenceDigits+1 || !isAlnum(name[n-sequenceDigits-2]) || v > math.MaxInt32) {
		// Ten digits past 2147483647 are no positive int32: the dash
		// before them is a sign, whatever precedes it.
		v = -v
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return v, true
}

// sequenceIn returns the sequence number of a child of a lock directory
// whose Mutexes name their nodes with nodeName. A protected name made with
// nodeName ("_c_<guid>-" + nodeName + the number) is read by that prefix,
// sign and all, so that a nodeName ending in a letter or a digit ("lock")
// reads right past the wrap ("lock-2147483648"); any other child is read
// by parseSequence.
func sequenceIn(name, nodeName string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, protectedPrefix)
	if ok && len(rest) > guidLen && rest[guidLen] == '-' {
		if suffix, ok := strings.CutPrefix(rest[guidLen+1:], nodeName); ok {
			return parseFormatted(suffix)
		}
	}
	return parseSequence(name)
}

// nameReader reads the sequence numbers of a lock directory's children as
// sequenceIn does, for a Mutex with nodeName: a waiter that a release
// wakes reads every name in the queue, so most of what a handoff cost in a
// queue of a thousand was reading them. The names of the Mutex's own kind
// with ten unsigned digits, nearly every name in such a queue, are read at
// their fixed places, a word at a time; any other name goes to
// sequenceIn.
type nameReader struct {
	nodeName string
	size     int // the length of a name of the Mutex's own kind with ten digits

	// What follows the GUID in such a name is "-" + nodeName, midLen
	// bytes. Up to 16 of them are compared as words: midHead (masked to
	// midLen when it is shorter than 8) and midTail, the last 8.
	midLen           int
	midHead, midTail uint64
	midMask          uint64
}

const (
	guidLen = 32 // hex digits of the GUID in a protected name
	// guidEnd is where a protected name's GUID ends.
	guidEnd = len(protectedPrefix) + guidLen
	// prefixWord is protectedPrefix as the low bytes of a little-endian word.
	prefixWord = uint64('_') | uint64('c')<<8 | uint64('_')<<16
)

func newNameReader(nodeName string) nameReader {
	n := 1 + len(nodeName)
	r := nameReader{nodeName: nodeName, size: guidEnd + n + sequenceDigits, midLen: n, midMask: ^uint64(0)}
	var mid [16]byte
	mid[0] = '-'
	copy(mid[1:], nodeName)
	r.midHead = binary.LittleEndian.Uint64(mid[:])
	switch {
	case n < 8:
		r.midMask = 1<<(8*n) - 1
	case n <= 16:
		r.midTail = binary.LittleEndian.Uint64(mid[n-8:])
	}
	return r
}

// read is sequenceIn(name, r.nodeName).
func (r *nameReader) read(name string) (int64, bool) {
	if v, ok := r.readOwn(name); ok {
		return v, true
	}
	return sequenceIn(name, r.nodeName)
}

// readOwn reads the name of the Mutex's own kind with ten unsigned digits
// that name may be, and reports whether it is one (and a contender), all
// in one body: it runs for every name in the queue, and calls cost as much
// as its work.
func (r *nameReader) readOwn(name string) (int64, bool) {
	if len(name) != r.size || load64(name, 0)&0xFFFFFF != prefixWord {
		return 0, false
	}
	// What follows the GUID.
	switch n := r.midLen; {
	case n <= 8:
		// The word runs on into the digits, which the mask leaves out.
		if load64(name, guidEnd)&r.midMask != r.midHead {
			return 0, false
		}
	case n <= 16:
		if load64(name, guidEnd) != r.midHead || load64(name, guidEnd+n-8) != r.midTail {
			return 0, false
		}
	default:
		if name[guidEnd] != '-' || name[guidEnd+1:guidEnd+n] != r.nodeName {
			return 0, false
		}
	}
	// The ten digits, eight of them at once: read as one little-endian
	// word, checked to be digits, and summed in three multiplications (as
	// simdjson parses eight digits).
	digits := name[len(name)-sequenceDigits:]
	w := load64(digits, 0)
	// A byte is a digit when its high nibble is 3 and adding 6 leaves it so.
	if (w&0xF0F0F0F0F0F0F0F0)|((w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
		return 0, false
	}
	d8, d9 := digits[8]-'0', digits[9]-'0'
	if d8 > 9 || d9 > 9 {
		return 0, false
	}
	w = (w & 0x0F0F0F0F0F0F0F0F) * (10<<8 + 1) >> 8      // pairs of digits in 16-bit lanes
	w = (w & 0x00FF00FF00FF00FF) * (100<<16 + 1) >> 16   // fours in 32-bit lanes
	w = (w & 0x0000FFFF0000FFFF) * (10000<<32 + 1) >> 32 // eight digits
	v := int64(w)*100 + int64(d8)*10 + int64(d9)
	return v, v <= math.MaxInt32
}

// prefixTest is strings.HasPrefix for one prefix and many strings, most
// of which do not have it: a waiter looks for its own GUID in every name
// of the queue. Eight bytes at the prefix's end, where GUIDs differ, are
// compared as one word first.
type prefixTest struct {
	prefix string
	tail   uint64 // the prefix's last eight bytes, if it has eight
}

func newPrefixTest(prefix string) prefixTest {
	t := prefixTest{prefix: prefix}
	if len(prefix) >= 8 {
		t.tail = load64(prefix, len(prefix)-8)
	}
	return t
}

// of reports whether s begins with the prefix.
func (t prefixTest) of(s string) bool {
	n := len(t.prefix)
	if n >= 8 && (len(s) < n || load64(s, n-8) != t.tail) {
		return false
	}
	return strings.HasPrefix(s, t.prefix)
}

// load64 reads eight bytes of s from i on as a little-endian word.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// parseFormatted reads exactly what "%010d" prints for an int32: ten
// digits, or a sign and nine or ten digits.
func parseFormatted(s string) (int64, bool) {
	digits, negative := strings.CutPrefix(s, "-")
	if len(digits) != sequenceDigits && !(negative && len(digits) == sequenceDigits-1) {
		return 0, false
	}
	v, ok := parseDigits(digits)
	if negative {
		v = -v
	}
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return v, true
}

// parseDigits reads a string of decimal digits.
func parseDigits(s string) (int64, bool) {
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// contender is one child of a lock directory that takes part in the queue.
type contender struct {
	name string
	seq  int64
}

// before reports whether c is ahead of d in the queue: by sequence number,
// then, for equal numbers (from different lock directories' counters never,
// but from hand-made names), by name.
//
// Sequence numbers are compared as serial numbers (RFC 1982) on ZooKeeper's
// 32-bit counter: c is ahead when d is fewer than 2^31 creates after it,
// counting across the wrap. So -2147483648, made right after 2147483647,
// queues behind it, and -1 ahead of 0. That holds for as long as the oldest
// contender in the queue is fewer than 2^31 creates in the directory older
// than the newest.
func (c contender) before(d contender) bool {
	if c.seq != d.seq {
		return int32(uint32(c.seq)-uint32(d.seq)) < 0
	}
	return c.name < d.name
}

// queueOrder returns the children that carry a sequence suffix, ordered by
// that suffix. Children without one are not contenders and are left out.
func queueOrder(children []string) []contender {
	return queueOrderIn(children, "")
}

// queueOrderIn is queueOrder for a directory whose Mutexes name their nodes
// with nodeName: their names are read by that prefix (sequenceIn), as the
// Mutex reads them, so that the first of the queue is the holder the Mutex
// itself sees. An empty nodeName reads every name by parseSequence; the two
// differ only past the counter's wrap, for a nodeName that ends in a letter
// or a digit.
func queueOrderIn(children []string, nodeName string) []contender {
	queue := make([]contender, 0, len(children))
	for _, name := range children {
		var seq int64
		var ok bool
		if nodeName == "" {
			seq, ok = parseSequence(name)
		} else {
			seq, ok = sequenceIn(name, nodeName)
		}
		if ok {
			queue = append(queue, contender{name: name, seq: seq})
		}
	}
	slices.SortFunc(queue, compareContenders)
	return queue
}

// compareContenders orders contenders for slices.SortFunc.
func compareContenders(a, b contender) int {
	switch {
	case a.before(b):
		return -1
	case b.before(a):
		return 1
	}
	return 0
}

// Contenders returns the names (last path element) of the nodes queued for
// the lock at path, in queue order: the first is the holder, the rest wait in
// the order they will get it. Every child whose name ends in a sequence
// number as ZooKeeper prints it (ten digits, or a sign and nine or ten past
// the counter's wrap) counts, so nodes of go-zookeeper's zk.Lock, kazoo's Lock
// and Curator's InterProcessMutex on the same path are listed too; other
// children are left out. A lock path that does not exist has no contenders.
// Invalid paths get the error ZooKeeper gives for them (zk.ErrInvalidPath).
func Contenders(conn Conn, path string) ([]string, error) {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return QueueOrder(children), nil
}

// QueueOrder returns the contenders among children (names, or paths,
// ending in a sequence number, read as Contenders reads them) in the order
// a Mutex queues them: by sequence number, as serial numbers on
// ZooKeeper's int32 counter, so that the order of creation holds across
// the counter's wrap. Contenders lists a lock's directory and orders it
// so; QueueOrder orders names a caller has already.
func QueueOrder(children []string) []string {
	queue := queueOrder(children)
	names := make([]string, len(queue))
	for i, c := range queue {
		names[i] = c.name
	}
	return names
}

// joinPath joins a directory and a child name the way ZooKeeper paths join:
// the root has no trailing slash to add. Any other malformed directory is
// passed on as is, so the server's (or client's) own validation rejects it
// with the error ZooKeeper gives.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// baseName returns the last element of a znode path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// ancestors returns dir and each of its ancestors below the root, outermost
// first: "/a/b/c" gives "/a", "/a/b", "/a/b/c".
func ancestors(dir string) []string {
	var paths []string
	for i := 1; i < len(dir); i++ {
		if dir[i] == '/' {
			paths = append(paths, dir[:i])
		}
	}
	if dir != "/" {
		paths = append(paths, dir)
	}
	return paths
}
