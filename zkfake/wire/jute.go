package wire

import (
	"encoding/binary"
	"errors"

	"github.com/go-zookeeper/zk"
)

// errShortRecord is a record that ends before its fields do, or declares a
// length it cannot hold: the real server drops the connection on it.
var errShortRecord = errors.New("wire: truncated or malformed record")

// reader decodes ZooKeeper's jute encoding: big-endian integers, strings and
// buffers as an int32 length (-1 for null) and the bytes, vectors as an int32
// count and the items, booleans as one byte. Every read checks the bounds,
// so a hostile frame yields errShortRecord and never a panic.
type reader struct {
	buf []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf) {
		r.err = errShortRecord
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) bool() bool {
	b := r.take(1)
	return b != nil && b[0] != 0
}

func (r *reader) buffer() []byte {
	n := r.int32()
	if n == -1 || r.err != nil {
		return nil
	}
	b := r.take(int(n))
	if b == nil {
		return nil
	}
	// Empty and null buffers differ: the server stores what it was sent.
	return append(make([]byte, 0, len(b)), b...)
}

func (r *reader) string() string { return string(r.buffer()) }

// count reads a vector's length, refusing one the rest of the frame cannot
// hold (each item takes at least minItem bytes), so a forged count cannot
// make the decoder allocate more than the frame's size.
func (r *reader) count(minItem int) int {
	n := r.int32()
	if r.err != nil || n == -1 {
		return 0
	}
	if n < 0 || int(n) > len(r.buf)/minItem {
		r.err = errShortRecord
		return 0
	}
	return int(n)
}

func (r *reader) strings() []string {
	n := r.count(4)
	out := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.string())
	}
	return out
}

func (r *reader) acls() []zk.ACL {
	n := r.count(12)
	out := make([]zk.ACL, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, zk.ACL{Perms: r.int32(), Scheme: r.string(), ID: r.string()})
	}
	return out
}

// writer encodes jute records into a growing buffer.
type writer struct{ buf []byte }

func (w *writer) int32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *writer) int64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }

func (w *writer) bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

func (w *writer) buffer(b []byte) {
	if b == nil {
		w.int32(-1)
		return
	}
	w.int32(int32(len(b)))
	w.buf = append(w.buf, b...)
}

func (w *writer) string(s string) {
	w.int32(int32(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) strings(ss []string) {
	w.int32(int32(len(ss)))
	for _, s := range ss {
		w.string(s)
	}
}

func (w *writer) acls(acls []zk.ACL) {
	w.int32(int32(len(acls)))
	for _, a := range acls {
		w.int32(a.Perms)
		w.string(a.Scheme)
		w.string(a.ID)
	}
}

func (w *writer) stat(s *zk.Stat) {
	if s == nil {
		s = &zk.Stat{}
	}
	w.int64(s.Czxid)
	w.int64(s.Mzxid)
	w.int64(s.Ctime)
	w.int64(s.Mtime)
	w.int32(s.Version)
	w.int32(s.Cversion)
	w.int32(s.Aversion)
	w.int64(s.EphemeralOwner)
	w.int32(s.DataLength)
	w.int32(s.NumChildren)
	w.int64(s.Pzxid)
}
