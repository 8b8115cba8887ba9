package fakelog

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
)

// workload picks a client's random operations on the znodes under a base:
// two leaves, a and b, and a parent q with a plain child c and sequential
// children s-NNNNNNNNNN. It remembers the versions and the sequential
// children the client has seen, so that versioned sets and deletes and
// deletes of sequential children often hit.
type workload struct {
	base, a, b, q, qc, seq string
	rng                    *rand.Rand
	versions               map[string]int32
	children               []string // sequential children of q seen, full paths
}

func newWorkload(base string, rng *rand.Rand) *workload {
	q := base + "/q"
	return &workload{
		base: base, a: base + "/a", b: base + "/b", q: q, qc: q + "/c", seq: q + "/s-",
		rng:      rng,
		versions: make(map[string]int32),
	}
}

// pick returns one of paths at random.
func (w *workload) pick(paths ...string) string { return paths[w.rng.IntN(len(paths))] }

// leaf returns a random non-sequential path, or a sequential child seen.
func (w *workload) leaf(withChildren bool) string {
	if withChildren && len(w.children) > 0 && w.rng.IntN(3) == 0 {
		return w.children[w.rng.IntN(len(w.children))]
	}
	return w.pick(w.a, w.b, w.q, w.qc)
}

// version returns -1 (any) half the time, else the version last seen of
// path, or a small guess.
func (w *workload) version(path string) int32 {
	if w.rng.IntN(2) == 0 {
		return -1
	}
	if v, ok := w.versions[path]; ok {
		return v
	}
	return int32(w.rng.IntN(3))
}

// next returns the next operation's input; Session and Data are filled in
// by the caller.
func (w *workload) next() linearizability.ZnodeInput {
	r := w.rng.IntN(100)
	switch {
	case r < 22:
		in := linearizability.ZnodeInput{Op: linearizability.Create}
		switch w.rng.IntN(6) {
		case 0, 1:
			in.Path, in.Flags = w.seq, zk.FlagSequence
		case 2:
			// The parent is mostly persistent, so that it can have
			// children; an ephemeral one refuses them.
			in.Path = w.q
			if w.rng.IntN(5) == 0 {
				in.Flags = zk.FlagEphemeral
			}
			return in
		default:
			in.Path = w.pick(w.a, w.b, w.qc)
		}
		if w.rng.IntN(2) == 0 {
			in.Flags |= zk.FlagEphemeral
		}
		return in
	case r < 42:
		path := w.leaf(false)
		return linearizability.ZnodeInput{Op: linearizability.Set, Path: path, Version: w.version(path)}
	case r < 54:
		path := w.leaf(true)
		return linearizability.ZnodeInput{Op: linearizability.Delete, Path: path, Version: w.version(path)}
	case r < 70:
		return linearizability.ZnodeInput{Op: linearizability.Get, Path: w.leaf(true)}
	case r < 82:
		return linearizability.ZnodeInput{Op: linearizability.Exists, Path: w.leaf(true)}
	case r < 94:
		return linearizability.ZnodeInput{Op: linearizability.Children, Path: w.pick(w.q, w.q, w.a)}
	default:
		return linearizability.ZnodeInput{Op: linearizability.Sync, Path: w.base}
	}
}

// learn notes what an answered operation showed of versions and children.
func (w *workload) learn(in linearizability.ZnodeInput, out linearizability.ZnodeOutput) {
	gone := func(path string) {
		delete(w.versions, path)
		w.children = slices.DeleteFunc(w.children, func(p string) bool { return p == path })
	}
	switch in.Op {
	case linearizability.Create:
		if out.Err == nil {
			w.versions[out.Path] = 0
			if in.Flags&zk.FlagSequence != 0 {
				w.children = append(w.children, out.Path)
			}
		}
	case linearizability.Set, linearizability.Get:
		if out.Err == nil {
			w.versions[in.Path] = out.Stat.Version
		} else if out.Err == zk.ErrNoNode {
			gone(in.Path)
		}
	case linearizability.Exists:
		if out.Exists {
			w.versions[in.Path] = out.Stat.Version
		} else {
			gone(in.Path)
		}
	case linearizability.Delete:
		if out.Err == nil || out.Err == zk.ErrNoNode {
			gone(in.Path)
		}
	case linearizability.Children:
		if in.Path == w.q && out.Err == nil {
			w.children = w.children[:0]
			for _, name := range out.Children {
				if strings.HasPrefix(name, "s-") {
					w.children = append(w.children, w.q+"/"+name)
				}
			}
			slices.Sort(w.children)
		}
	}
}

// perform runs in on conn and returns what it answered. Out.Err is nil,
// ZooKeeper's answer, or the error that left the outcome unknown.
func perform(conn zktest.Conn, in linearizability.ZnodeInput) linearizability.ZnodeOutput {
	var out linearizability.ZnodeOutput
	var stat *zk.Stat
	switch in.Op {
	case linearizability.Create:
		out.Path, out.Err = conn.Create(in.Path, []byte(in.Data), in.Flags, zktest.OpenACL)
	case linearizability.Delete:
		out.Err = conn.Delete(in.Path, in.Version)
	case linearizability.Set:
		stat, out.Err = conn.Set(in.Path, []byte(in.Data), in.Version)
	case linearizability.Get:
		var data []byte
		data, stat, out.Err = conn.Get(in.Path)
		out.Data = string(data)
	case linearizability.Exists:
		out.Exists, stat, out.Err = conn.Exists(in.Path)
		if !out.Exists {
			stat = nil // go-zookeeper hands back a zero stat for a missing node
		}
	case linearizability.Children:
		out.Children, stat, out.Err = conn.Children(in.Path)
	case linearizability.Sync:
		_, out.Err = conn.Sync(in.Path)
	}
	if out.Err == nil {
		out.Stat = linearizability.StatOf(stat)
	}
	return out
}
