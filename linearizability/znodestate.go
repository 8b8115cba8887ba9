package linearizability

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// znodeState is the state of the znode model: the chain of committed tree
// states, newest at head, and for each session the oldest state its reads
// may still return. Writes are linearizable, so they apply to head. A read
// by a session returns some state at or after the session's floor; the floor
// rises to the session's own writes (read-your-writes), to the state its
// reads returned (a session never sees time go backwards) and to head when
// its sync is served. That is ZooKeeper's promise and nothing more.
//
// States are immutable; porcupine may keep any of them.
type znodeState struct {
	head   *treeVersion
	floors []sessionFloor // sorted by session
	hash   uint64
}

type sessionFloor struct {
	session int64
	index   int
}

func newZnodeState(head *treeVersion, floors []sessionFloor) *znodeState {
	h := newHasher().int(int64(head.chainHash))
	for _, f := range floors {
		h = h.int(f.session).int(int64(f.index))
	}
	return &znodeState{head: head, floors: floors, hash: uint64(h)}
}

func (s *znodeState) floor(session int64) int {
	if i, found := s.search(session); found {
		return s.floors[i].index
	}
	return 0
}

func (s *znodeState) search(session int64) (int, bool) {
	return slices.BinarySearchFunc(s.floors, session, func(f sessionFloor, id int64) int {
		switch {
		case f.session < id:
			return -1
		case f.session > id:
			return 1
		}
		return 0
	})
}

// withFloor returns the state with head and the session's floor raised to
// index.
func (s *znodeState) withFloor(head *treeVersion, session int64, index int) *znodeState {
	i, found := s.search(session)
	if head == s.head && found && s.floors[i].index == index {
		return s
	}
	floors := slices.Clone(s.floors)
	if found {
		floors[i].index = index
	} else {
		floors = slices.Insert(floors, i, sessionFloor{session, index})
	}
	return newZnodeState(head, floors)
}

// withoutSession returns the state with head and the session forgotten: its
// session has expired and it will act no more.
func (s *znodeState) withoutSession(head *treeVersion, session int64) *znodeState {
	floors := s.floors
	if i, found := s.search(session); found {
		floors = slices.Delete(slices.Clone(floors), i, i+1)
	} else if head == s.head {
		return s
	}
	return newZnodeState(head, floors)
}

// znodeModel steps the znode state. tracked says which paths the model
// keeps: those the history or the initial state names.
type znodeModel struct {
	tracked map[string]bool
	root    *treeVersion
}

// known reports whether the tree decides if path exists: it does for the
// tracked paths and for everything under them, since the initial state
// lists every child of a tracked znode and the history names every znode it
// creates. Other paths — the scenario's base and its ancestors — are
// outside the model.
func (m *znodeModel) known(path string) bool {
	_, ok := trackedAnchor(m.tracked, path)
	return ok
}

// trackedAnchor returns path itself if it is tracked, else its nearest
// tracked ancestor; ok is false when there is none.
func trackedAnchor(tracked map[string]bool, path string) (anchor string, ok bool) {
	for {
		if tracked[path] {
			return path, true
		}
		if path == "/" || path == "" {
			return "", false
		}
		path = parentOf(path)
	}
}

// write applies a write to the head tree. It returns the new tree (nil if
// unchanged), what the write reports, and the error ZooKeeper would give.
func (m *znodeModel) write(t tree, in ZnodeInput) (tree, ZnodeOutput, error) {
	switch in.Op {
	case Create:
		out, path, err := t.create(in, m.known)
		return out, ZnodeOutput{Path: path}, err
	case Delete:
		out, err := t.remove(in.Path, in.Version)
		return out, ZnodeOutput{}, err
	default: // Set
		out, stat, err := t.set(in.Path, in.Data, in.Version)
		return out, ZnodeOutput{Stat: stat}, err
	}
}

func (m *znodeModel) step(state, input, output any) (bool, any) {
	s := state.(*znodeState)
	if e, ok := input.(SessionExpiry); ok {
		head := s.head
		if nodes, changed := head.nodes.expire(e.Session); changed {
			head = head.next(nodes)
		}
		return true, s.withoutSession(head, e.Session)
	}
	in := input.(ZnodeInput)
	out, known := output.(ZnodeOutput)
	switch in.Op {
	case Create, Delete, Set:
		nodes, want, err := m.write(s.head.nodes, in)
		if !known {
			// Took effect if it could; if it would fail here, it had
			// no effect. An unknown outcome says nothing about what
			// the session has seen, so its floor stays.
			if err != nil {
				return true, s
			}
			return true, newZnodeState(s.head.next(nodes), s.floors)
		}
		if !sameError(out.Err, err) {
			return false, s
		}
		if err != nil {
			// A failed write is ordered like any other: the session
			// has now seen head.
			return true, s.withFloor(s.head, in.Session, s.head.index)
		}
		if (in.Op == Create && out.Path != want.Path) || (in.Op == Set && out.Stat != want.Stat) {
			return false, s
		}
		head := s.head.next(nodes)
		return true, s.withFloor(head, in.Session, head.index)
	case Sync:
		return true, s.withFloor(s.head, in.Session, s.head.index)
	default: // Get, Exists, Children
		if !known {
			return true, s
		}
		// The oldest matching state is the one that constrains the
		// session's later reads least.
		seen, floor := -1, s.floor(in.Session)
		for v := s.head; v != nil && v.index >= floor; v = v.parent {
			if readMatches(v.nodes, in, out) {
				seen = v.index
			}
		}
		if seen < 0 {
			return false, s
		}
		return true, s.withFloor(s.head, in.Session, seen)
	}
}

// readMatches reports whether a read of t gives out.
func readMatches(t tree, in ZnodeInput, out ZnodeOutput) bool {
	i, exists := t.find(in.Path)
	switch in.Op {
	case Get:
		if !exists {
			return sameError(out.Err, zk.ErrNoNode)
		}
		return out.Err == nil && out.Data == t[i].data && out.Stat == t[i].stat()
	case Exists:
		if !exists {
			return out.Err == nil && !out.Exists
		}
		return out.Err == nil && out.Exists && out.Stat == t[i].stat()
	default: // Children, whose output names were sorted when the history was prepared
		if !exists {
			return sameError(out.Err, zk.ErrNoNode)
		}
		return out.Err == nil && out.Stat == t[i].stat() && slices.Equal(out.Children, t.childrenOf(in.Path))
	}
}

func sameError(got, want error) bool {
	if want == nil || got == nil {
		return got == want
	}
	return errors.Is(got, want)
}

func znodeEqual(a, b any) bool {
	x, y := a.(*znodeState), b.(*znodeState)
	return x == y || (x.hash == y.hash && slices.Equal(x.floors, y.floors) && sameChain(x.head, y.head))
}

func znodeHash(state any) uint64 { return state.(*znodeState).hash }

func describeZnodeState(state any) string {
	s := state.(*znodeState)
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %v", s.head.index, s.head.nodes)
	if len(s.floors) > 0 {
		b.WriteString("; reads from")
		for _, f := range s.floors {
			fmt.Fprintf(&b, " %s≥#%d", sessionName(f.session), f.index)
		}
	}
	return b.String()
}

func describeZnodeOperation(input, output any) string {
	if e, ok := input.(SessionExpiry); ok {
		return e.String()
	}
	in := input.(ZnodeInput)
	out, known := output.(ZnodeOutput)
	result := "?"
	switch {
	case !known:
	case out.Err != nil:
		result = strings.TrimPrefix(out.Err.Error(), "zk: ")
	default:
		switch in.Op {
		case Create:
			result = out.Path
		case Set:
			result = fmt.Sprintf("v%d", out.Stat.Version)
		case Get:
			result = fmt.Sprintf("%s v%d c%d", shortData(out.Data), out.Stat.Version, out.Stat.Cversion)
		case Exists:
			result = "absent"
			if out.Exists {
				result = fmt.Sprintf("v%d c%d", out.Stat.Version, out.Stat.Cversion)
			}
		case Children:
			result = fmt.Sprintf("%v c%d", out.Children, out.Stat.Cversion)
		default:
			result = "ok"
		}
	}
	return fmt.Sprintf("%v → %s", in, result)
}
