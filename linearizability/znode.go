package linearizability

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// ZnodeOp is an operation on znodes.
type ZnodeOp uint8

// Znode operations, as *zk.Conn offers them.
const (
	Create ZnodeOp = iota + 1
	Delete
	Set
	Get
	Exists
	Children
	Sync
)

// String names the operation.
func (o ZnodeOp) String() string {
	switch o {
	case Create:
		return "create"
	case Delete:
		return "delete"
	case Set:
		return "set"
	case Get:
		return "get"
	case Exists:
		return "exists"
	case Children:
		return "children"
	case Sync:
		return "sync"
	}
	return fmt.Sprintf("ZnodeOp(%d)", uint8(o))
}

// reads are the operations that change nothing; one whose outcome is
// unknown constrains nothing and is left out of the check.
func (o ZnodeOp) read() bool { return o >= Get }

// ZnodeInput is the input of a znode operation. A history for
// [CheckZnodes] holds ZnodeInput and [SessionExpiry] inputs.
type ZnodeInput struct {
	Op ZnodeOp
	// Session is the ZooKeeper session that issued the operation.
	Session int64
	// Path is the znode; for a sequential Create, the prefix the server
	// appends the sequence number to. Sync ignores it: a sync brings the
	// session's server up to date for every path.
	Path string
	// Data is what Create and Set write.
	Data string
	// Version is the data version Delete and Set expect; -1 matches any.
	Version int32
	// Flags are Create's flags: zk.FlagEphemeral, zk.FlagSequence.
	Flags int32
}

// String describes the input the way reports show it.
func (in ZnodeInput) String() string {
	s := fmt.Sprintf("%s %s %s", sessionName(in.Session), in.Op, in.Path)
	switch in.Op {
	case Create:
		s += " " + shortData(in.Data)
		if in.Flags&zk.FlagEphemeral != 0 {
			s += " ephemeral"
		}
		if in.Flags&zk.FlagSequence != 0 {
			s += " sequential"
		}
	case Set:
		s += " " + shortData(in.Data)
		fallthrough
	case Delete:
		if in.Version != -1 {
			s += fmt.Sprintf(" if v%d", in.Version)
		}
	}
	return s
}

// ZnodeOutput is the output of a znode operation whose outcome is known.
type ZnodeOutput struct {
	// Err is nil or the error ZooKeeper answered with. Any other error —
	// the connection was lost, the session expired, the client gave up —
	// means the outcome is unknown, and the operation is checked as such.
	Err error
	// Path is the path Create created.
	Path string
	// Data is what Get read.
	Data string
	// Exists is what Exists reported.
	Exists bool
	// Children are the child names Children listed, in any order.
	Children []string
	// Stat is the znode's stat as Get, Exists (when the znode exists), Set
	// and Children return it.
	Stat ZnodeStat
}

// ZnodeStat is the part of a znode's stat the model checks.
type ZnodeStat struct {
	Version        int32
	Cversion       int32
	NumChildren    int32
	EphemeralOwner int64
}

// StatOf extracts the checked part of a stat; a nil stat gives the zero
// ZnodeStat.
func StatOf(stat *zk.Stat) ZnodeStat {
	if stat == nil {
		return ZnodeStat{}
	}
	return ZnodeStat{
		Version:        stat.Version,
		Cversion:       stat.Cversion,
		NumChildren:    stat.NumChildren,
		EphemeralOwner: stat.EphemeralOwner,
	}
}

// Znode is a znode that exists before the history starts.
type Znode struct {
	Path string
	Data string
	Stat ZnodeStat
}

// answers lists, per operation, the errors with which ZooKeeper answers it
// after deciding its outcome.
var answers = map[ZnodeOp][]error{
	Create:   {zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNoChildrenForEphemerals},
	Delete:   {zk.ErrNoNode, zk.ErrBadVersion, zk.ErrNotEmpty},
	Set:      {zk.ErrNoNode, zk.ErrBadVersion},
	Get:      {zk.ErrNoNode},
	Children: {zk.ErrNoNode},
}

func isAnswer(op ZnodeOp, err error) bool {
	if err == nil {
		return true
	}
	for _, answer := range answers[op] {
		if errors.Is(err, answer) {
			return true
		}
	}
	return false
}

// CheckZnodes checks h against ZooKeeper's promise for znodes: writes
// (create, delete, set) are linearizable; a read (get, exists, children)
// may return a stale state, but never one older than the session's own
// writes, than what the session's earlier reads returned, or than the state
// when the session's last sync was served. Data, data versions, child
// versions, child counts, ephemeral owners, child names and sequence numbers
// are all checked.
//
// The model tracks the znodes h names and those in initial, the znodes that
// exist before h starts. A tracked znode not in initial starts absent, and
// so does every znode below a tracked one that h does not name; the znodes
// above all tracked ones (the scenario's base and its ancestors) are assumed
// to exist, persistent, throughout. Consequently the initial state must list
// every child of a tracked znode, and a sequential create must go under a
// tracked znode, or its sequence number cannot be known.
//
// Znodes are checked in independent groups — each znode with its nearest
// tracked ancestor — while syncs and session expiries, which affect every
// path, take part in every group. Constraints across groups (the order of a
// session's reads of two unrelated paths) are therefore not checked.
//
// A timeout of 0 means no limit; when it runs out the outcome is [Unknown].
// Inputs must be [ZnodeInput] or [SessionExpiry]; outputs [ZnodeOutput], or
// nil for operations with an unknown outcome.
func CheckZnodes(h History, timeout time.Duration, initial ...Znode) (Result, error) {
	prepared := make([]Operation, 0, len(h.Operations))
	tracked := make(map[string]bool)
	for _, n := range initial {
		if !validPath(n.Path) {
			return Result{}, fmt.Errorf("linearizability: initial znode has invalid path %q", n.Path)
		}
		if tracked[n.Path] {
			return Result{}, fmt.Errorf("linearizability: initial znode %s listed twice", n.Path)
		}
		tracked[n.Path] = true
	}
	for _, op := range h.Operations {
		switch in := op.Input.(type) {
		case SessionExpiry:
		case ZnodeInput:
			if in.Op < Create || in.Op > Sync {
				return Result{}, fmt.Errorf("linearizability: unknown znode operation %d", in.Op)
			}
			out, known := op.Output.(ZnodeOutput)
			if op.Output != nil && !known {
				return Result{}, fmt.Errorf("linearizability: %v has output of type %T, want ZnodeOutput", in, op.Output)
			}
			if known && !isAnswer(in.Op, out.Err) {
				known = false
			}
			if !known {
				if in.Op.read() {
					continue
				}
				op.Output, op.Return = nil, Never
			} else if in.Op == Children {
				out.Children = slices.Sorted(slices.Values(out.Children))
				op.Output = out
			}
			switch {
			case in.Op == Sync:
			case in.Op == Create && in.Flags&zk.FlagSequence != 0:
				if known && out.Err == nil {
					tracked[out.Path] = true
				}
			default:
				tracked[in.Path] = true
			}
		default:
			return Result{}, fmt.Errorf("linearizability: CheckZnodes got input of type %T, want ZnodeInput or SessionExpiry", op.Input)
		}
		prepared = append(prepared, op)
	}
	for _, op := range prepared {
		if in, ok := op.Input.(ZnodeInput); ok && in.Op == Create && in.Flags&zk.FlagSequence != 0 {
			if _, known := trackedAnchor(tracked, parentOf(in.Path)); !known {
				return Result{}, fmt.Errorf("linearizability: sequential create under %s, which neither the history nor the initial state names: its sequence numbers cannot be known", parentOf(in.Path))
			}
		}
	}
	root, err := initialTree(initial, tracked)
	if err != nil {
		return Result{}, err
	}

	// Group each tracked znode with its nearest tracked ancestor; group
	// names a tracked path's group by the group's root path.
	groups := newUnionFind()
	for path := range tracked {
		if path == "/" {
			continue
		}
		if anchor, ok := trackedAnchor(tracked, parentOf(path)); ok {
			groups.union(path, anchor)
		}
	}
	group := make(map[string]string, len(tracked))
	for path := range tracked {
		group[path] = groups.find(path)
	}
	groupOf := func(path string) string {
		if anchor, ok := trackedAnchor(tracked, path); ok {
			return group[anchor]
		}
		return path
	}
	m := &znodeModel{tracked: tracked, root: rootVersion(root)}
	model := porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			return partitionBy(ops, func(op porcupine.Operation) (string, bool) {
				in, ok := op.Input.(ZnodeInput)
				switch {
				case !ok || in.Op == Sync:
					return "", true
				case in.Op == Create && in.Flags&zk.FlagSequence != 0:
					return groupOf(parentOf(in.Path)), false
				}
				return groupOf(in.Path), false
			})
		},
		Init:                      func() any { return newZnodeState(m.root, nil) },
		Step:                      m.step,
		Equal:                     znodeEqual,
		Hash:                      znodeHash,
		DescribeOperation:         describeZnodeOperation,
		DescribeState:             describeZnodeState,
		DescribeOperationMetadata: describeMetadata,
	}
	ops := make([]porcupine.Operation, len(prepared))
	for i, op := range prepared {
		ops[i] = toPorcupine(op)
	}
	return check("znodes", model, ops, h.Faults, timeout), nil
}

// initialTree builds the tree the history starts from, checking that the
// initial znodes are consistent: parents present, child counts matching.
func initialTree(initial []Znode, tracked map[string]bool) (tree, error) {
	t := make(tree, 0, len(initial))
	for _, n := range initial {
		t = append(t, znodeRecord{path: n.Path, data: n.Data, version: n.Stat.Version, owner: n.Stat.EphemeralOwner})
	}
	slices.SortFunc(t, func(a, b znodeRecord) int {
		switch {
		case a.path < b.path:
			return -1
		case a.path > b.path:
			return 1
		}
		return 0
	})
	for _, n := range t {
		if n.path == "/" {
			continue
		}
		parent := parentOf(n.path)
		if _, known := trackedAnchor(tracked, parent); !known {
			continue // under the scenario's base, outside the model
		}
		i, found := t.find(parent)
		if !found {
			return nil, fmt.Errorf("linearizability: initial znode %s has no parent %s in the initial state", n.path, parent)
		}
		t[i].children++
	}
	for _, n := range initial {
		i, _ := t.find(n.Path)
		if t[i].children != n.Stat.NumChildren {
			return nil, fmt.Errorf("linearizability: initial znode %s has %d children, but the initial state lists %d", n.Path, n.Stat.NumChildren, t[i].children)
		}
		// Cversion = 2*creates - children (see znodeRecord).
		sum := n.Stat.Cversion + n.Stat.NumChildren
		if sum < 0 || sum%2 != 0 {
			return nil, fmt.Errorf("linearizability: initial znode %s: Cversion %d is impossible with %d children", n.Path, n.Stat.Cversion, n.Stat.NumChildren)
		}
		t[i].creates = sum / 2
	}
	return t, nil
}

// unionFind groups paths.
type unionFind map[string]string

func newUnionFind() unionFind { return make(unionFind) }

func (u unionFind) find(path string) string {
	for {
		parent, ok := u[path]
		if !ok || parent == path {
			return path
		}
		if grand, ok := u[parent]; ok {
			u[path] = grand // path halving
		}
		path = parent
	}
}

func (u unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra != rb {
		u[ra] = rb
	}
}
