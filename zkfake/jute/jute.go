// Package jute is ZooKeeper's wire encoding, jute, and the numbers of its
// client protocol: op codes, error codes and reserved xids. It is the one
// codec of the module: the served fake (zkfake/wire) decodes requests and
// encodes replies with it, and the conformance suite (zkfake/zktest)
// encodes requests and decodes replies with it when a scenario speaks the
// protocol itself, for the operations go-zookeeper cannot send. It imports
// nothing of the module and links no test machinery.
//
// The encoding: big-endian integers, strings and buffers as an int32
// length (-1 for null) and the bytes, vectors as an int32 count and the
// items, booleans as one byte, records as their fields in order.
package jute

import (
	"encoding/binary"
	"errors"

	"github.com/go-zookeeper/zk"
)

// ErrShortRecord is a record that ends before its fields do, or declares a
// length it cannot hold: the real server drops the connection on it.
var ErrShortRecord = errors.New("jute: truncated or malformed record")

// Reader decodes a record. Every read checks the bounds, so a hostile
// frame yields ErrShortRecord and never a panic; after the first error
// every read returns a zero value, and Err reports the error.
type Reader struct {
	buf []byte
	err error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Err returns the first error a read met, or nil.
func (r *Reader) Err() error { return r.err }

// Len returns how many bytes are left to read.
func (r *Reader) Len() int { return len(r.buf) }

// Fail makes the record fail with ErrShortRecord, for a caller that finds
// a field it cannot accept (an op code a multi cannot hold, say).
func (r *Reader) Fail() {
	if r.err == nil {
		r.err = ErrShortRecord
	}
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf) {
		r.err = ErrShortRecord
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

// Int32 reads an int.
func (r *Reader) Int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads a long.
func (r *Reader) Int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a boolean.
func (r *Reader) Bool() bool {
	b := r.take(1)
	return b != nil && b[0] != 0
}

// Buffer reads a buffer: nil for a null one, a fresh copy otherwise.
func (r *Reader) Buffer() []byte {
	n := r.Int32()
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

// String reads a ustring; a null one reads as "".
func (r *Reader) String() string { return string(r.Buffer()) }

// count reads a vector's length, refusing one the rest of the frame cannot
// hold (each item takes at least minItem bytes), so a forged count cannot
// make the decoder allocate more than the frame's size. A null vector
// counts 0.
func (r *Reader) count(minItem int) int {
	n := r.Int32()
	if r.err != nil || n == -1 {
		return 0
	}
	if n < 0 || int(n) > len(r.buf)/minItem {
		r.err = ErrShortRecord
		return 0
	}
	return int(n)
}

// Strings reads a vector of ustrings.
func (r *Reader) Strings() []string {
	n := r.count(4)
	out := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.String())
	}
	return out
}

// ACLs reads a vector of ACL records.
func (r *Reader) ACLs() []zk.ACL {
	n := r.count(12)
	out := make([]zk.ACL, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, zk.ACL{Perms: r.Int32(), Scheme: r.String(), ID: r.String()})
	}
	return out
}

// Stat reads a Stat record.
func (r *Reader) Stat() zk.Stat {
	return zk.Stat{
		Czxid:          r.Int64(),
		Mzxid:          r.Int64(),
		Ctime:          r.Int64(),
		Mtime:          r.Int64(),
		Version:        r.Int32(),
		Cversion:       r.Int32(),
		Aversion:       r.Int32(),
		EphemeralOwner: r.Int64(),
		DataLength:     r.Int32(),
		NumChildren:    r.Int32(),
		Pzxid:          r.Int64(),
	}
}

// Writer encodes records into a growing buffer.
type Writer struct{ buf []byte }

// Bytes returns what has been written.
func (w *Writer) Bytes() []byte { return w.buf }

// Append writes b as it is: an encoded record, or the rest of a frame.
func (w *Writer) Append(b []byte) { w.buf = append(w.buf, b...) }

// Int32 writes an int.
func (w *Writer) Int32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }

// Int64 writes a long.
func (w *Writer) Int64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }

// Bool writes a boolean.
func (w *Writer) Bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// Buffer writes a buffer, nil as a null one.
func (w *Writer) Buffer(b []byte) {
	if b == nil {
		w.Int32(-1)
		return
	}
	w.Int32(int32(len(b)))
	w.buf = append(w.buf, b...)
}

// String writes a ustring.
func (w *Writer) String(s string) {
	w.Int32(int32(len(s)))
	w.buf = append(w.buf, s...)
}

// Strings writes a vector of ustrings.
func (w *Writer) Strings(ss []string) {
	w.Int32(int32(len(ss)))
	for _, s := range ss {
		w.String(s)
	}
}

// ACLs writes a vector of ACL records.
func (w *Writer) ACLs(acls []zk.ACL) {
	w.Int32(int32(len(acls)))
	for _, a := range acls {
		w.Int32(a.Perms)
		w.String(a.Scheme)
		w.String(a.ID)
	}
}

// Stat writes a Stat record; nil writes a zero one.
func (w *Writer) Stat(s *zk.Stat) {
	if s == nil {
		s = &zk.Stat{}
	}
	w.Int64(s.Czxid)
	w.Int64(s.Mzxid)
	w.Int64(s.Ctime)
	w.Int64(s.Mtime)
	w.Int32(s.Version)
	w.Int32(s.Cversion)
	w.Int32(s.Aversion)
	w.Int64(s.EphemeralOwner)
	w.Int32(s.DataLength)
	w.Int32(s.NumChildren)
	w.Int64(s.Pzxid)
}
