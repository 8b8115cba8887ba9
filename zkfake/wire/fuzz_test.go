package wire

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// seedFrames are well-formed request frames of every op the server decodes,
// the fuzzer's starting points.
func seedFrames() [][]byte {
	acl := func(w *jute.Writer) { w.ACLs(zk.WorldACL(zk.PermAll)) }
	var seeds [][]byte
	add := func(op int32, body func(w *jute.Writer)) {
		w := &jute.Writer{}
		w.Int32(7)
		w.Int32(op)
		body(w)
		seeds = append(seeds, w.Bytes())
	}
	for _, op := range []int32{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL} {
		add(op, func(w *jute.Writer) {
			w.String("/a")
			w.Buffer([]byte("data"))
			acl(w)
			w.Int32(0)
			if op == jute.OpCreateTTL {
				w.Int64(1000)
			}
		})
	}
	for _, op := range []int32{jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2} {
		add(op, func(w *jute.Writer) { w.String("/a"); w.Bool(true) })
	}
	add(jute.OpDelete, func(w *jute.Writer) { w.String("/a"); w.Int32(-1) })
	add(jute.OpSetData, func(w *jute.Writer) { w.String("/a"); w.Buffer(nil); w.Int32(3) })
	add(jute.OpGetACL, func(w *jute.Writer) { w.String("/a") })
	add(jute.OpSetACL, func(w *jute.Writer) { w.String("/a"); acl(w); w.Int32(0) })
	add(jute.OpSync, func(w *jute.Writer) { w.String("/") })
	add(jute.OpSetAuth, func(w *jute.Writer) { w.Int32(0); w.String("digest"); w.Buffer([]byte("u:p")) })
	add(jute.OpSetWatches, func(w *jute.Writer) {
		w.Int64(5)
		w.Strings([]string{"/a"})
		w.Strings(nil)
		w.Strings([]string{"/b", "/c"})
	})
	add(jute.OpMulti, func(w *jute.Writer) {
		for _, typ := range []int32{jute.OpCreate, jute.OpSetData, jute.OpCheck, jute.OpDelete} {
			w.Int32(typ)
			w.Bool(false)
			w.Int32(-1)
			w.String("/m")
			switch typ {
			case jute.OpCreate:
				w.Buffer(nil)
				acl(w)
				w.Int32(0)
			case jute.OpSetData:
				w.Buffer([]byte("x"))
				w.Int32(-1)
			default:
				w.Int32(-1)
			}
		}
		w.Int32(-1)
		w.Bool(true)
		w.Int32(-1)
	})
	add(jute.OpSetWatches2, func(w *jute.Writer) {
		w.Int64(5)
		w.Strings([]string{"/a"})
		w.Strings(nil)
		w.Strings([]string{"/b"})
		w.Strings([]string{"/p"})
		w.Strings([]string{"/r", "/s"})
	})
	for _, op := range []int32{jute.OpAddWatch, jute.OpCheckWatches, jute.OpRemoveWatches} {
		add(op, func(w *jute.Writer) { w.String("/a"); w.Int32(1) })
	}
	add(jute.OpGetEphemerals, func(w *jute.Writer) { w.String("/") })
	add(jute.OpGetAllChildrenNumber, func(w *jute.Writer) { w.String("/a") })
	add(jute.OpWhoAmI, func(w *jute.Writer) {})
	add(jute.OpMultiRead, func(w *jute.Writer) {
		for _, typ := range []int32{jute.OpGetData, jute.OpGetChildren} {
			w.Int32(typ)
			w.Bool(false)
			w.Int32(-1)
			w.String("/m")
			w.Bool(false)
		}
		w.Int32(-1)
		w.Bool(true)
		w.Int32(-1)
	})
	add(jute.OpPing, func(w *jute.Writer) {})
	add(jute.OpClose, func(w *jute.Writer) {})
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
	w := &jute.Writer{}
	w.Int32(0)
	w.Int64(0)
	w.Int32(4000)
	w.Int64(0x1234)
	w.Buffer(make([]byte, 16))
	f.Add(w.Bytes())
	f.Add(append(append([]byte(nil), w.Bytes()...), 1))
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
		if req.op == jute.OpMulti && len(req.ops) != 4 {
			t.Fatalf("multi seed decoded %d ops, want 4", len(req.ops))
		}
		if req.op == jute.OpMultiRead && (len(req.ops) != 2 || req.badOps) {
			t.Fatalf("multiRead seed decoded %d ops, bad %v; want 2 reads", len(req.ops), req.badOps)
		}
	}
}
