package wire

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// seedFrames are well-formed request frames of every op the server decodes,
// the fuzzer's starting points.
func seedFrames() [][]byte {
	acl := func(w *writer) { w.acls(zk.WorldACL(zk.PermAll)) }
	var seeds [][]byte
	add := func(op int32, body func(w *writer)) {
		w := &writer{}
		w.int32(7)
		w.int32(op)
		body(w)
		seeds = append(seeds, w.buf)
	}
	for _, op := range []int32{opCreate, opCreate2, opCreateContainer, opCreateTTL} {
		add(op, func(w *writer) {
			w.string("/a")
			w.buffer([]byte("data"))
			acl(w)
			w.int32(0)
			if op == opCreateTTL {
				w.int64(1000)
			}
		})
	}
	for _, op := range []int32{opExists, opGetData, opGetChildren, opGetChildren2} {
		add(op, func(w *writer) { w.string("/a"); w.bool(true) })
	}
	add(opDelete, func(w *writer) { w.string("/a"); w.int32(-1) })
	add(opSetData, func(w *writer) { w.string("/a"); w.buffer(nil); w.int32(3) })
	add(opGetACL, func(w *writer) { w.string("/a") })
	add(opSetACL, func(w *writer) { w.string("/a"); acl(w); w.int32(0) })
	add(opSync, func(w *writer) { w.string("/") })
	add(opSetAuth, func(w *writer) { w.int32(0); w.string("digest"); w.buffer([]byte("u:p")) })
	add(opSetWatches, func(w *writer) {
		w.int64(5)
		w.strings([]string{"/a"})
		w.strings(nil)
		w.strings([]string{"/b", "/c"})
	})
	add(opMulti, func(w *writer) {
		for _, typ := range []int32{opCreate, opSetData, opCheck, opDelete} {
			w.int32(typ)
			w.bool(false)
			w.int32(-1)
			w.string("/m")
			switch typ {
			case opCreate:
				w.buffer(nil)
				acl(w)
				w.int32(0)
			case opSetData:
				w.buffer([]byte("x"))
				w.int32(-1)
			default:
				w.int32(-1)
			}
		}
		w.int32(-1)
		w.bool(true)
		w.int32(-1)
	})
	add(opPing, func(w *writer) {})
	add(opClose, func(w *writer) {})
	return seeds
}

// FuzzDecodeRequest feeds arbitrary frames to the request decoder: it must
// never panic nor allocate beyond the frame's size, and a frame it accepts
// must survive being cut short only by failing, never by reading past it.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeRequest(frame)
		if err != nil {
			return
		}
		if req == nil {
			t.Fatal("nil request without an error")
		}
		if len(req.path) > len(frame) || len(req.data) > len(frame) || len(req.acl) > len(frame) || len(req.ops) > len(frame) {
			t.Fatalf("decoded fields larger than the %d-byte frame", len(frame))
		}
		for n := range frame {
			decodeRequest(frame[:n])
		}
	})
}

// FuzzDecodeConnect does the same for the connect request.
func FuzzDecodeConnect(f *testing.F) {
	w := &writer{}
	w.int32(0)
	w.int64(0)
	w.int32(4000)
	w.int64(0x1234)
	w.buffer(make([]byte, 16))
	f.Add(w.buf)
	f.Add(append(append([]byte(nil), w.buf...), 1))
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := decodeConnect(frame)
		if err == nil && len(c.passwd) > len(frame) {
			t.Fatalf("passwd of %d bytes from a %d-byte frame", len(c.passwd), len(frame))
		}
	})
}

// TestSeedFramesDecode checks that every seed is a valid frame, so that the
// fuzzer starts from inputs the decoder accepts, and that each decodes to the
// op it encodes.
func TestSeedFramesDecode(t *testing.T) {
	for i, s := range seedFrames() {
		req, err := decodeRequest(s)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if req.xid != 7 {
			t.Fatalf("seed %d: xid %d", i, req.xid)
		}
		if req.op == opMulti && len(req.ops) != 4 {
			t.Fatalf("multi seed decoded %d ops, want 4", len(req.ops))
		}
	}
}
