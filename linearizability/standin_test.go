package linearizability_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
)

// lockService is an in-memory stand-in for a ZooKeeper lock: one lock, held
// by a session until released or until the session expires.
type lockService struct {
	mu      sync.Mutex
	holder  int64 // 0: free
	token   int64 // last token handed out
	expired map[int64]bool
	changed chan struct{} // closed and replaced whenever the lock is freed
	// racy makes acquire check that the lock is free and take it in two
	// steps with a pause between them, the bug of a recipe that looks
	// before it creates its node.
	racy bool
}

func newLockService() *lockService {
	return &lockService{expired: map[int64]bool{}, changed: make(chan struct{})}
}

// take takes the lock if it is free.
func (l *lockService) take(session int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != 0 || l.expired[session] {
		return 0, false
	}
	l.token++
	l.holder = session
	return l.token, true
}

// acquire waits for the lock; it fails if the session expires first.
func (l *lockService) acquire(session int64) (int64, bool) {
	for {
		l.mu.Lock()
		if l.expired[session] {
			l.mu.Unlock()
			return 0, false
		}
		if l.holder == 0 {
			if l.racy {
				l.mu.Unlock()
				time.Sleep(time.Millisecond)
				l.mu.Lock()
			}
			l.token++
			l.holder = session
			token := l.token
			l.mu.Unlock()
			return token, true
		}
		changed := l.changed
		l.mu.Unlock()
		<-changed
	}
}

func (l *lockService) release(session int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != session {
		return false
	}
	l.freeLocked()
	return true
}

func (l *lockService) expire(session int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expired[session] = true
	if l.holder == session {
		l.freeLocked()
	}
}

func (l *lockService) freeLocked() {
	l.holder = 0
	close(l.changed)
	l.changed = make(chan struct{})
}

// resource is what the lock protects. A fenced resource refuses writes
// whose token is older than the newest it accepted.
type resource struct {
	mu        sync.Mutex
	fenced    bool
	lastToken int64
}

func (r *resource) write(token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced && token < r.lastToken {
		return false
	}
	r.lastToken = max(r.lastToken, token)
	return true
}

// standInNode is a znode of the stand-in.
type standInNode struct {
	data     string
	version  int32
	creates  int32 // children ever created: the next sequence number
	children int32
	owner    int64
}

func (n standInNode) stat() linearizability.ZnodeStat {
	return linearizability.ZnodeStat{Version: n.version, Cversion: 2*n.creates - n.children, NumChildren: n.children, EphemeralOwner: n.owner}
}

// zkStandIn is an in-memory stand-in for a ZooKeeper ensemble, written
// independently of the model: every committed state is kept, writes apply
// to the newest, and a read is served from a random state no older than
// what its session has written, seen or synced — as a follower that lags
// behind the leader would.
type zkStandIn struct {
	mu     sync.Mutex
	states []map[string]standInNode
	seen   map[int64]int
	rng    *rand.Rand
	// readInitial is a bug: reads are served from the initial state.
	readInitial bool
}

// newZKStandIn starts from the given znodes, which must include every
// parent.
func newZKStandIn(rng *rand.Rand, initial map[string]standInNode) *zkStandIn {
	return &zkStandIn{states: []map[string]standInNode{initial}, seen: map[int64]int{}, rng: rng}
}

func parentPath(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "/"
}

// do runs one operation and returns its output.
func (z *zkStandIn) do(in linearizability.ZnodeInput) linearizability.ZnodeOutput {
	z.mu.Lock()
	defer z.mu.Unlock()
	latest := len(z.states) - 1
	switch in.Op {
	case linearizability.Get, linearizability.Exists, linearizability.Children:
		from := z.seen[in.Session]
		index := from + z.rng.IntN(latest-from+1)
		z.seen[in.Session] = index
		if z.readInitial {
			index = 0
		}
		return z.read(z.states[index], in)
	case linearizability.Sync:
		z.seen[in.Session] = latest
		return linearizability.ZnodeOutput{}
	}
	next := maps.Clone(z.states[latest])
	out := z.write(next, in)
	if out.Err == nil {
		z.states = append(z.states, next)
	}
	z.seen[in.Session] = len(z.states) - 1
	return out
}

func (z *zkStandIn) read(state map[string]standInNode, in linearizability.ZnodeInput) linearizability.ZnodeOutput {
	n, ok := state[in.Path]
	switch in.Op {
	case linearizability.Exists:
		if !ok {
			return linearizability.ZnodeOutput{}
		}
		return linearizability.ZnodeOutput{Exists: true, Stat: n.stat()}
	case linearizability.Get:
		if !ok {
			return linearizability.ZnodeOutput{Err: zk.ErrNoNode}
		}
		return linearizability.ZnodeOutput{Data: n.data, Stat: n.stat()}
	default:
		if !ok {
			return linearizability.ZnodeOutput{Err: zk.ErrNoNode}
		}
		var names []string
		for p := range state {
			if parentPath(p) == in.Path && p != "/" {
				names = append(names, p[strings.LastIndexByte(p, '/')+1:])
			}
		}
		z.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		return linearizability.ZnodeOutput{Children: names, Stat: n.stat()}
	}
}

// write applies a write to state in place.
func (z *zkStandIn) write(state map[string]standInNode, in linearizability.ZnodeInput) linearizability.ZnodeOutput {
	switch in.Op {
	case linearizability.Create:
		parentName := parentPath(in.Path)
		parent, ok := state[parentName]
		if !ok {
			return linearizability.ZnodeOutput{Err: zk.ErrNoNode}
		}
		path := in.Path
		if in.Flags&zk.FlagSequence != 0 {
			path = fmt.Sprintf("%s%010d", in.Path, parent.creates)
		}
		if _, exists := state[path]; exists {
			return linearizability.ZnodeOutput{Err: zk.ErrNodeExists}
		}
		if parent.owner != 0 {
			return linearizability.ZnodeOutput{Err: zk.ErrNoChildrenForEphemerals}
		}
		n := standInNode{data: in.Data}
		if in.Flags&zk.FlagEphemeral != 0 {
			n.owner = in.Session
		}
		state[path] = n
		parent.creates++
		parent.children++
		state[parentName] = parent
		return linearizability.ZnodeOutput{Path: path}
	case linearizability.Delete:
		n, ok := state[in.Path]
		switch {
		case !ok:
			return linearizability.ZnodeOutput{Err: zk.ErrNoNode}
		case in.Version != -1 && in.Version != n.version:
			return linearizability.ZnodeOutput{Err: zk.ErrBadVersion}
		case n.children > 0:
			return linearizability.ZnodeOutput{Err: zk.ErrNotEmpty}
		}
		delete(state, in.Path)
		parent := state[parentPath(in.Path)]
		parent.children--
		state[parentPath(in.Path)] = parent
		return linearizability.ZnodeOutput{}
	default: // Set
		n, ok := state[in.Path]
		switch {
		case !ok:
			return linearizability.ZnodeOutput{Err: zk.ErrNoNode}
		case in.Version != -1 && in.Version != n.version:
			return linearizability.ZnodeOutput{Err: zk.ErrBadVersion}
		}
		n.data = in.Data
		n.version++
		state[in.Path] = n
		return linearizability.ZnodeOutput{Stat: n.stat()}
	}
}

// expire ends a session: its ephemeral znodes go.
func (z *zkStandIn) expire(session int64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	next := maps.Clone(z.states[len(z.states)-1])
	changed := false
	for path, n := range next {
		if n.owner == session {
			delete(next, path)
			parent := next[parentPath(path)]
			parent.children--
			next[parentPath(path)] = parent
			changed = true
		}
	}
	if changed {
		z.states = append(z.states, next)
	}
	delete(z.seen, session)
}

// initialZnodes lists the stand-in's initial znodes for the model, leaving
// out those not under a tracked directory.
func initialZnodes(state map[string]standInNode, dirs ...string) []linearizability.Znode {
	var out []linearizability.Znode
	for path, n := range state {
		for _, dir := range dirs {
			if path == dir || strings.HasPrefix(path, dir+"/") {
				out = append(out, linearizability.Znode{Path: path, Data: n.data, Stat: n.stat()})
			}
		}
	}
	slices.SortFunc(out, func(a, b linearizability.Znode) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// testDirs are the stand-in's directories: two, so that histories fall in
// two groups, under a base the model does not track.
var testDirs = []string{"/t/a", "/t/b"}

func standInInitial() map[string]standInNode {
	return map[string]standInNode{
		"/":    {children: 1, creates: 1},
		"/t":   {children: 2, creates: 2},
		"/t/a": {},
		"/t/b": {},
	}
}

// randomZnodeInput draws an operation on the test directories.
func randomZnodeInput(rng *rand.Rand, session int64) linearizability.ZnodeInput {
	dir := testDirs[rng.IntN(len(testDirs))]
	names := []string{"x", "y", "z"}
	path := dir + "/" + names[rng.IntN(len(names))]
	in := linearizability.ZnodeInput{Session: session, Path: path, Version: -1}
	switch k := rng.IntN(20); {
	case k < 3:
		in.Op = linearizability.Create
		in.Data = fmt.Sprintf("c%d", rng.IntN(1000))
		if rng.IntN(3) == 0 {
			in.Flags |= zk.FlagEphemeral
		}
		if rng.IntN(4) == 0 {
			in.Flags |= zk.FlagSequence
			in.Path = dir + "/s-"
		}
	case k < 5:
		in.Op = linearizability.Delete
		if rng.IntN(2) == 0 {
			in.Version = int32(rng.IntN(3))
		}
	case k < 8:
		in.Op = linearizability.Set
		in.Data = fmt.Sprintf("s%d", rng.IntN(1000))
		if rng.IntN(2) == 0 {
			in.Version = int32(rng.IntN(3))
		}
	case k < 12:
		in.Op = linearizability.Get
	case k < 15:
		in.Op = linearizability.Exists
	case k < 18:
		in.Op = linearizability.Children
		in.Path = dir
	default:
		in.Op = linearizability.Sync
	}
	return in
}
