package jute_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// TestRoundTrip: what the Writer writes, the Reader reads back, field by
// field, with null and empty buffers kept apart.
func TestRoundTrip(t *testing.T) {
	stat := zk.Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
	acl := zk.WorldACL(zk.PermAll)
	w := &jute.Writer{}
	w.Int32(-7)
	w.Int64(1 << 40)
	w.Bool(true)
	w.Buffer(nil)
	w.Buffer([]byte{})
	w.String("/a")
	w.Strings([]string{"x", "y"})
	w.ACLs(acl)
	w.Stat(&stat)
	r := jute.NewReader(w.Bytes())
	if got := r.Int32(); got != -7 {
		t.Errorf("Int32 = %d", got)
	}
	if got := r.Int64(); got != 1<<40 {
		t.Errorf("Int64 = %d", got)
	}
	if !r.Bool() {
		t.Error("Bool = false")
	}
	if got := r.Buffer(); got != nil {
		t.Errorf("null Buffer = %#v", got)
	}
	if got := r.Buffer(); got == nil || len(got) != 0 {
		t.Errorf("empty Buffer = %#v", got)
	}
	if got := r.String(); got != "/a" {
		t.Errorf("String = %q", got)
	}
	if got := r.Strings(); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Errorf("Strings = %q", got)
	}
	if got := r.ACLs(); !reflect.DeepEqual(got, acl) {
		t.Errorf("ACLs = %v", got)
	}
	if got := r.Stat(); got != stat {
		t.Errorf("Stat = %+v", got)
	}
	if r.Err() != nil || r.Len() != 0 {
		t.Errorf("after the record: err %v, %d bytes left", r.Err(), r.Len())
	}
}

// TestShortRecords: every truncation of a record, and a vector count its
// frame cannot hold, fail with ErrShortRecord instead of panicking or
// allocating what the count claims.
func TestShortRecords(t *testing.T) {
	w := &jute.Writer{}
	w.String("/path")
	w.Strings([]string{"a", "b"})
	w.ACLs(zk.WorldACL(zk.PermAll))
	full := w.Bytes()
	for n := range len(full) {
		r := jute.NewReader(full[:n])
		_ = r.String()
		r.Strings()
		r.ACLs()
		if !errors.Is(r.Err(), jute.ErrShortRecord) {
			t.Errorf("record cut to %d of %d bytes: err %v", n, len(full), r.Err())
		}
	}
	forged := &jute.Writer{}
	forged.Int32(1 << 30)
	r := jute.NewReader(forged.Bytes())
	if got := r.Strings(); len(got) != 0 || !errors.Is(r.Err(), jute.ErrShortRecord) {
		t.Errorf("a count of 2^30 in 4 bytes: %d strings, err %v", len(got), r.Err())
	}
}
