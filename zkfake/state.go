package zkfake

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
)

// state is the whole of the server's data: the tree, the session table, the
// watches and the zxid counter. Its methods are the functional core of the
// fake: plain computations on plain data, with no locks, goroutines,
// channels or clocks (the caller passes the time in). Every write returns the
// notifications it triggered; the shell delivers them.
type state struct {
	tree     *tree
	zxid     int64
	sessions map[int64]*sessionState
	watches  watchTable

	// staged collects the notifications and undo steps of the write in
	// progress, so a multi can be applied op by op and rolled back whole.
	staged []trigger
	undo   []undoStep
	fired  []notification // what the last commit fired (see commit)
	// inMulti is set while a multi runs. Only a multi needs undo steps: a
	// single op checks everything before it changes anything, so it never
	// has a change to take back.
	inMulti bool

	// With followers to feed, replicate makes every write also record its
	// effect as changes that a follower's tree replays.
	replicate bool
	changes   []change

	// shuffled lists children in an order drawn from orderSeed
	// (WithShuffledChildren) instead of sorted.
	shuffled  bool
	orderSeed uint64
	// sequenceStart is where a new node's sequence counter starts
	// (WithSequenceStart).
	sequenceStart int32
	// saslScheme: ACLs may name the "sasl" scheme (WithSASLScheme).
	saslScheme bool
}

// sessionState is what the server keeps about a session.
type sessionState struct {
	id         int64
	timeout    int64 // negotiated, in milliseconds
	ids        []authID
	ephemerals map[string]struct{}
}

func newState(shuffled bool, seed uint64) *state {
	return &state{tree: newTree(), sessions: map[int64]*sessionState{}, watches: newWatchTable(), shuffled: shuffled, orderSeed: seed}
}

// writeCtx is one write transaction: its zxid, its time and its session.
type writeCtx struct {
	zxid    int64
	now     int64 // milliseconds since the epoch
	session *sessionState
	// clientChecked says the request's path went through go-zookeeper's
	// check (checkClientPath) before it was sent, as a single op's does and
	// a multi's ops' do not; the server's own check then has less to do.
	clientChecked bool
}

// begin starts a write transaction. Every write request that reaches the
// server takes a zxid, whether it succeeds or fails: ZooKeeper logs a failed
// one as an error transaction.
func (st *state) begin(session int64, now int64) writeCtx {
	st.zxid++
	st.staged = st.staged[:0]
	st.clearUndo()
	st.changes = st.changes[:0]
	return writeCtx{zxid: st.zxid, now: now, session: st.sessions[session]}
}

// commit ends a write transaction, fires the watches its changes trigger,
// and returns the notifications. They are valid until the next commit,
// which reuses their array: every caller delivers them at once.
func (st *state) commit() []notification {
	out := reuseFired(st.fired)
	for _, t := range st.staged {
		out = st.watches.fire(out, t)
	}
	st.fired = out
	st.clearStaged()
	st.clearUndo()
	return out
}

// rollback undoes the staged changes of a failed multi.
func (st *state) rollback() {
	for i := len(st.undo) - 1; i >= 0; i-- {
		st.undo[i].apply(st)
	}
	st.clearStaged()
	st.clearUndo()
	st.changes = st.changes[:0]
}

// clearStaged and clearUndo empty the transaction's logs, keeping their
// arrays for the next transaction but not what they pointed to.
func (st *state) clearStaged() {
	clear(st.staged)
	st.staged = st.staged[:0]
}

func (st *state) clearUndo() {
	clear(st.undo)
	st.undo = st.undo[:0]
}

// pushUndo records how to take back a change of the multi in progress.
func (st *state) pushUndo(u undoStep) {
	if st.inMulti {
		st.undo = append(st.undo, u)
	}
}

// undoStep reverses one change of the write in progress. It is a plain
// record rather than a closure so that the undo log allocates nothing once
// its array has grown.
type undoStep struct {
	kind     changeKind
	path     string
	node     *znode
	owner    *sessionState // the ephemeral's owner, for an add or a remove
	oldPzxid int64         // the parent's, for an add or a remove
	data     []byte        // for a data change
	version  int32         // version for a data change, aversion for an ACL change
	mzxid    int64
	mtime    int64
	acl      []zk.ACL
}

func (u *undoStep) apply(st *state) {
	n := u.node
	switch u.kind {
	case changeAdd:
		st.tree.unadd(u.path, n, u.oldPzxid)
		if n.kind == kindEphemeral && u.owner != nil {
			delete(u.owner.ephemerals, u.path)
		}
	case changeRemove:
		st.tree.unremove(u.path, n, u.oldPzxid)
		if n.kind == kindEphemeral && u.owner != nil {
			u.owner.ephemerals[u.path] = struct{}{}
		}
	case changeData:
		n.data, n.version, n.mzxid, n.mtime = u.data, u.version, u.mzxid, u.mtime
	case changeACL:
		n.acl, n.aversion = u.acl, u.version
	}
}

// record notes a change for the followers, when there are any, with a
// copy of the node as the change left it.
func (st *state) record(kind changeKind, zxid int64, path string, n *znode) {
	if !st.replicate {
		return
	}
	ch := change{kind: kind, zxid: zxid, path: path}
	if n != nil {
		snap := *n
		snap.children = nil
		ch.node = &snap
	}
	st.changes = append(st.changes, ch)
}

func (st *state) ids(session *sessionState) []authID {
	if session == nil {
		return []authID{{"ip", clientIP}}
	}
	return session.ids
}

// createSession opens a session; it is a transaction of its own.
func (st *state) createSession(id int64, timeoutMs int64) {
	st.zxid++
	st.sessions[id] = &sessionState{id: id, timeout: timeoutMs, ids: []authID{{"ip", clientIP}}, ephemerals: map[string]struct{}{}}
}

// closeSession ends a session in one transaction that deletes all its
// ephemeral nodes, and returns the watches the deletes fire. It reports
// false if there was no such session. The session stays in the table,
// with its identities, until forgetSession, so that the watches it fires
// are checked against them.
func (st *state) closeSession(id int64, now int64) ([]notification, bool) {
	sess := st.sessions[id]
	if sess == nil {
		return nil, false
	}
	ctx := st.begin(id, now)
	paths := make([]string, 0, len(sess.ephemerals))
	for p := range sess.ephemerals {
		paths = append(paths, p)
	}
	// Deepest first is not needed (ephemerals have no children). ZooKeeper
	// deletes them in its hash set's order; the fake in the order they
	// were made (see order.go).
	sortByCreation(st.tree, paths)
	for _, p := range paths {
		st.removeNode(ctx, p)
	}
	// The deletes fire watches, the closing session's own included; the
	// caller delivers them, then forgets the session with forgetSession.
	return st.commit(), true
}

// forgetSession drops a closed session and its watches.
func (st *state) forgetSession(id int64) {
	delete(st.sessions, id)
	st.watches.dropSession(id)
}

// createOp is a create request as the server receives it. The flags decide
// the node's kind; ttl is -1 unless the request came as createTTL.
type createOp struct {
	path  string
	data  []byte
	acl   []zk.ACL
	flags int32
	ttl   int64
}

// maxTTL is the largest TTL ZooKeeper accepts: the low 40 bits of the
// ephemeral owner field hold it.
const maxTTL = 1<<40 - 1

// decodeFlags reads a create mode as ZooKeeper's CreateMode.fromFlag does.
func decodeFlags(flags int32) (kind nodeKind, sequential, ok bool) {
	switch flags {
	case zk.FlagPersistent:
		return kindPersistent, false, true
	case zk.FlagEphemeral:
		return kindEphemeral, false, true
	case zk.FlagSequence:
		return kindPersistent, true, true
	case zk.FlagEphemeralSequential:
		return kindEphemeral, true, true
	case zk.FlagContainer:
		return kindContainer, false, true
	case zk.FlagTTL:
		return kindTTL, false, true
	case zk.FlagPersistentSequentialWithTTL:
		return kindTTL, true, true
	}
	return 0, false, false
}

// create applies a create within ctx and returns the created path.
func (st *state) create(ctx writeCtx, op createOp) (string, zk.Stat, error) {
	kind, sequential, ok := decodeFlags(op.flags)
	if !ok {
		return "", zk.Stat{}, zk.ErrBadArguments
	}
	if kind == kindTTL && (op.ttl <= 0 || op.ttl > maxTTL) || kind != kindTTL && op.ttl >= 0 {
		return "", zk.Stat{}, zk.ErrBadArguments
	}
	if badWritePath(op.path) {
		return "", zk.Stat{}, zk.ErrBadArguments
	}
	if op.path == "/" && !sequential {
		// The root's parent is the root itself as the server sees it.
		if err := checkACL(st.tree.get("/").acl, zk.PermCreate, st.ids(ctx.session)); err != nil {
			return "", zk.Stat{}, err
		}
		return "", zk.Stat{}, zk.ErrNodeExists
	}
	parentPath := parentOf(op.path)
	acl, err := fixupACL(op.acl, st.ids(ctx.session), st.saslScheme)
	if err != nil {
		return "", zk.Stat{}, err
	}
	parent := st.tree.get(parentPath)
	if parent == nil {
		return "", zk.Stat{}, zk.ErrNoNode
	}
	if err := checkACL(parent.acl, zk.PermCreate, st.ids(ctx.session)); err != nil {
		return "", zk.Stat{}, err
	}
	path := op.path
	if sequential {
		path = withSequence(path, parent.creates)
	}
	if !serverPathOK(path, ctx.clientChecked) {
		return "", zk.Stat{}, zk.ErrBadArguments
	}
	// An ephemeral parent never has children, so the server's NodeExists,
	// checked before this, cannot apply to it.
	if parent.kind == kindEphemeral {
		return "", zk.Stat{}, zk.ErrNoChildrenForEphemerals
	}
	if kind == kindEphemeral && ctx.session == nil {
		if st.tree.get(path) != nil {
			return "", zk.Stat{}, zk.ErrNodeExists
		}
		return "", zk.Stat{}, zk.ErrSessionExpired
	}
	n := &znode{
		data: cloneBytes(op.data), acl: acl, kind: kind, ttl: op.ttl,
		czxid: ctx.zxid, mzxid: ctx.zxid, pzxid: ctx.zxid, ctime: ctx.now, mtime: ctx.now,
		creates: st.sequenceStart,
	}
	oldPzxid := parent.pzxid
	if !st.tree.link(parent, path, n, ctx.zxid) {
		return "", zk.Stat{}, zk.ErrNodeExists
	}
	if kind == kindEphemeral {
		n.ephemeralOwner = ctx.session.id
		ctx.session.ephemerals[path] = struct{}{}
	}
	st.pushUndo(undoStep{kind: changeAdd, path: path, node: n, owner: ctx.session, oldPzxid: oldPzxid})
	st.staged = append(st.staged, trigger{triggerCreated, path, n.acl, parent.acl})
	st.record(changeAdd, ctx.zxid, path, n)
	return path, n.stat(), nil
}

// delete applies a delete within ctx.
func (st *state) delete(ctx writeCtx, path string, version int32) error {
	if badWritePath(path) || isSpecial(path) {
		return zk.ErrBadArguments
	}
	// The parent's DELETE right is checked before the node is looked up,
	// so a session without it gets NoAuth even for a missing child.
	parent := st.tree.get(parentOf(path))
	if parent == nil {
		return zk.ErrNoNode
	}
	if err := checkACL(parent.acl, zk.PermDelete, st.ids(ctx.session)); err != nil {
		return err
	}
	n := st.tree.get(path)
	if n == nil {
		return zk.ErrNoNode
	}
	if version != -1 && version != n.version {
		return zk.ErrBadVersion
	}
	if len(n.children) > 0 {
		return zk.ErrNotEmpty
	}
	st.unlinkNode(ctx, path, n, parent)
	return nil
}

// removeNode deletes the childless node at path, with its undo step and the
// watches it fires.
func (st *state) removeNode(ctx writeCtx, path string) {
	st.unlinkNode(ctx, path, st.tree.get(path), st.tree.get(parentOf(path)))
}

// unlinkNode is removeNode for a caller that has looked up the node and its
// parent already.
func (st *state) unlinkNode(ctx writeCtx, path string, n, parent *znode) {
	oldPzxid := parent.pzxid
	st.tree.unlink(parent, path, n, ctx.zxid)
	owner := st.sessions[n.ephemeralOwner]
	if n.kind == kindEphemeral && owner != nil {
		delete(owner.ephemerals, path)
	}
	st.pushUndo(undoStep{kind: changeRemove, path: path, node: n, owner: owner, oldPzxid: oldPzxid})
	st.staged = append(st.staged, trigger{triggerDeleted, path, n.acl, parent.acl})
	st.record(changeRemove, ctx.zxid, path, nil)
}

// setData applies a setData within ctx.
func (st *state) setData(ctx writeCtx, path string, data []byte, version int32) (zk.Stat, error) {
	if !serverPathOK(path, ctx.clientChecked) {
		return zk.Stat{}, zk.ErrBadArguments
	}
	n := st.tree.get(path)
	if n == nil {
		return zk.Stat{}, zk.ErrNoNode
	}
	if err := checkACL(n.acl, zk.PermWrite, st.ids(ctx.session)); err != nil {
		return zk.Stat{}, err
	}
	if version != -1 && version != n.version {
		return zk.Stat{}, zk.ErrBadVersion
	}
	st.pushUndo(undoStep{kind: changeData, node: n, data: n.data, version: n.version, mzxid: n.mzxid, mtime: n.mtime})
	n.data = cloneBytes(data)
	n.version++
	n.mzxid = ctx.zxid
	n.mtime = ctx.now
	st.staged = append(st.staged, trigger{triggerChanged, path, n.acl, nil})
	st.record(changeData, ctx.zxid, path, n)
	return n.stat(), nil
}

// withSequence appends a sequential node's suffix to path: the parent's
// create counter as the server formats it, "%010d". The counter is a signed
// int32 that wraps after 2147483647 to -2147483648, and Java's "%010d", like
// Go's, pads after the sign: -2147483648 prints as "-2147483648" and -5 as
// "-000000005". Lock recipes create a sequential node for every
// acquisition, so the common case skips fmt.
func withSequence(path string, n int32) string {
	if n < 0 {
		// Past 2^31 creates the counter wraps; the server prints the sign.
		return path + fmt.Sprintf("%010d", n)
	}
	var b strings.Builder
	b.Grow(len(path) + 10)
	b.WriteString(path)
	var digits [10]byte
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + n%10)
		n /= 10
	}
	b.Write(digits[:])
	return b.String()
}

// setSequence sets the create counter of the node at path, from which its
// next sequential child takes its number. It is no transaction — ZooKeeper
// has no request that does this — so it takes no zxid and fires no watch;
// followers apply it in order after the last transaction, as they would a
// committed state that had counted that far.
func (st *state) setSequence(path string, n int32) error {
	node := st.tree.get(path)
	if node == nil {
		return zk.ErrNoNode
	}
	node.creates = n
	st.record(changeSequence, st.zxid, path, node)
	return nil
}

// check applies the version check of a multi within ctx.
func (st *state) check(ctx writeCtx, path string, version int32) error {
	if !serverPathOK(path, ctx.clientChecked) {
		return zk.ErrBadArguments
	}
	n := st.tree.get(path)
	if n == nil {
		return zk.ErrNoNode
	}
	if err := checkACL(n.acl, zk.PermRead, st.ids(ctx.session)); err != nil {
		return err
	}
	if version != -1 && version != n.version {
		return zk.ErrBadVersion
	}
	return nil
}

// setACL applies a setACL within ctx. It moves the aversion only: the
// node's mzxid and mtime stay as they were.
func (st *state) setACL(ctx writeCtx, path string, acl []zk.ACL, version int32) (zk.Stat, error) {
	if !serverPathOK(path, ctx.clientChecked) {
		return zk.Stat{}, zk.ErrBadArguments
	}
	fixed, err := fixupACL(acl, st.ids(ctx.session), st.saslScheme)
	if err != nil {
		return zk.Stat{}, err
	}
	n := st.tree.get(path)
	if n == nil {
		return zk.Stat{}, zk.ErrNoNode
	}
	if err := checkACL(n.acl, zk.PermAdmin, st.ids(ctx.session)); err != nil {
		return zk.Stat{}, err
	}
	if version != -1 && version != n.aversion {
		return zk.Stat{}, zk.ErrBadVersion
	}
	st.pushUndo(undoStep{kind: changeACL, node: n, acl: n.acl, version: n.aversion})
	n.acl = fixed
	n.aversion++
	st.record(changeACL, ctx.zxid, path, n)
	return n.stat(), nil
}

// errRuntimeInconsistency is what ZooKeeper reports for the ops of a failed
// multi after the one that failed; go-zookeeper has no value for it and
// builds this error text.
var errRuntimeInconsistency = fmt.Errorf("unknown error: %v", -2)

// errMarshalling is what go-zookeeper makes of ZooKeeper's
// MarshallingError, for which it has no value of its own.
var errMarshalling = fmt.Errorf("unknown error: %v", -5)

// multi applies ops all or nothing within ctx. On failure every op before
// the failing one reports no error, the failing one its error, and the rest
// ZooKeeper's runtime-inconsistency code; nothing is applied and no watch
// fires, but the zxid is spent.
func (st *state) multi(ctx writeCtx, ops []any) ([]zk.MultiResponse, error) {
	st.inMulti = true
	defer func() { st.inMulti = false }()
	results := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		var res zk.MultiResponse
		switch op := op.(type) {
		case *zk.CreateRequest:
			if op.Flags == zk.FlagTTL || op.Flags == zk.FlagPersistentSequentialWithTTL {
				// The server cannot build the transaction of a TTL create
				// that came without a TTL: the whole request fails with
				// MarshallingError, with no results. Ops before it that
				// failed have already decided the outcome.
				st.rollback()
				return []zk.MultiResponse{}, errMarshalling
			}
			path, _, err := st.create(ctx, createOp{path: op.Path, data: op.Data, acl: op.Acl, flags: op.Flags, ttl: -1})
			res = zk.MultiResponse{String: path, Error: err}
		case *zk.DeleteRequest:
			res.Error = st.delete(ctx, op.Path, op.Version)
		case *zk.SetDataRequest:
			stat, err := st.setData(ctx, op.Path, op.Data, op.Version)
			res = zk.MultiResponse{Stat: &stat, Error: err}
		case *zk.CheckVersionRequest:
			res.Error = st.check(ctx, op.Path, op.Version)
		}
		if res.Error != nil {
			st.rollback()
			for j := range results {
				switch {
				case j < i:
					results[j] = zk.MultiResponse{}
				case j == i:
					results[j] = zk.MultiResponse{Error: res.Error}
				default:
					results[j] = zk.MultiResponse{Error: errRuntimeInconsistency}
				}
			}
			return results, res.Error
		}
		results[i] = res
	}
	return results, nil
}

// view is what a read sees: the tree and watch table of the ensemble member
// the session is connected to, which may lag behind the leader.
type view struct {
	tree    *tree
	watches watchTable
}

// read is the outcome of a read request.
type read struct {
	data     []byte
	children []string
	acl      []zk.ACL
	stat     zk.Stat
}

// readable returns the node at path if the session may read it, and then,
// if asked, sets a watch in table: a read that fails sets none.
func (st *state) readable(v view, session int64, path string, table watchSet, watch bool) (*znode, error) {
	n := v.tree.get(path)
	if n == nil {
		return nil, zk.ErrNoNode
	}
	if err := checkACL(n.acl, zk.PermRead, st.ids(st.sessions[session])); err != nil {
		return nil, err
	}
	if watch {
		table.add(path, session, modeStandard)
	}
	return n, nil
}

// getData reads a node, setting a data watch if asked and allowed.
func (st *state) getData(v view, session int64, path string, watch bool) (read, error) {
	n, err := st.readable(v, session, path, v.watches.data, watch)
	if err != nil {
		return read{}, err
	}
	return read{data: cloneBytes(n.data), stat: n.stat()}, nil
}

// exists stats a node, setting a data watch if asked, also on a missing
// node (so that its creation fires it). Exists needs no permission.
func (st *state) exists(v view, session int64, path string, watch bool) (read, error) {
	if watch {
		v.watches.data.add(path, session, modeStandard)
	}
	n := v.tree.get(path)
	if n == nil {
		return read{}, zk.ErrNoNode
	}
	return read{stat: n.stat()}, nil
}

// getChildren lists a node's children, setting a child watch if asked and
// allowed.
func (st *state) getChildren(v view, session int64, path string, watch bool) (read, error) {
	n, err := st.readable(v, session, path, v.watches.child, watch)
	if err != nil {
		return read{}, err
	}
	names := v.tree.listings.children(n)
	if st.shuffled {
		byCreation(v.tree, path, names)
		shuffleListing(names, st.orderSeed, path, n.pzxid)
	}
	return read{children: names, stat: n.stat()}, nil
}

// getACL returns a node's ACL. It needs READ or ADMIN, and a session
// without ADMIN sees digest ids with the hash masked, as ZooKeeper 3.8 shows
// them.
func (st *state) getACL(v view, session int64, path string) (read, error) {
	n := v.tree.get(path)
	if n == nil {
		return read{}, zk.ErrNoNode
	}
	ids := st.ids(st.sessions[session])
	if err := checkACL(n.acl, zk.PermRead|zk.PermAdmin, ids); err != nil {
		return read{}, err
	}
	acl := append([]zk.ACL(nil), n.acl...)
	if checkACL(n.acl, zk.PermAdmin, ids) != nil {
		for i, a := range acl {
			if a.Scheme == "digest" {
				user, _, _ := strings.Cut(a.ID, ":")
				acl[i].ID = user + ":x"
			}
		}
	}
	return read{acl: acl, stat: n.stat()}, nil
}

// addAuth adds an identity to a session.
func (st *state) addAuth(session int64, scheme string, auth []byte) error {
	sess := st.sessions[session]
	if sess == nil {
		return zk.ErrSessionExpired
	}
	switch scheme {
	case "digest":
	case "ip":
		// ZooKeeper's ip provider authenticates the client as the address
		// it connects from, whatever it sends: an identity every session
		// has here already (see ids).
		return nil
	default:
		return zk.ErrAuthFailed
	}
	id := authID{"digest", digestID(string(auth))}
	for _, have := range sess.ids {
		if have == id {
			return nil
		}
	}
	sess.ids = append(sess.ids, id)
	return nil
}

// badWritePath is the first check the server makes of a create or delete
// path: it must contain a '/' and no NUL.
func badWritePath(path string) bool {
	return !strings.Contains(path, "/") || strings.Contains(path, "\x00")
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// getEphemerals answers getEphemerals: the ephemeral nodes the session owns,
// as v's member has applied them, whose path starts with prefix — all of
// them when prefix, trimmed of blanks and control characters as Java's
// trim() trims, is empty or "/". The server lists them in its hash set's
// order; the fake sorts them.
func (st *state) getEphemerals(v view, session int64, prefix string) []string {
	trimmed := strings.TrimFunc(prefix, func(r rune) bool { return r <= ' ' })
	all := trimmed == "" || trimmed == "/"
	var out []string
	keep := func(path string) {
		if all || strings.HasPrefix(path, prefix) {
			out = append(out, path)
		}
	}
	if sess := st.sessions[session]; sess != nil && v.tree == st.tree {
		for path := range sess.ephemerals {
			keep(path)
		}
	} else {
		// A follower has its own tree, which may lag: what it has applied
		// is what it answers from.
		for path, n := range v.tree.nodes {
			if n.kind == kindEphemeral && n.ephemeralOwner == session {
				keep(path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// getAllChildrenNumber answers getAllChildrenNumber: how many nodes lie
// below path, at any depth. It needs READ on the node. The server looks
// the path up as it is given, so a malformed one is a missing node —
// except "", the root's other key (rootAlias), for which it counts every
// key of its tree but that one: the root itself too.
func (st *state) getAllChildrenNumber(v view, session int64, path string) (int32, error) {
	n := v.tree.get(rootAlias(path))
	if n == nil {
		return 0, zk.ErrNoNode
	}
	if err := checkACL(n.acl, zk.PermRead, st.ids(st.sessions[session])); err != nil {
		return 0, err
	}
	switch path {
	case "":
		return int32(len(v.tree.nodes)), nil
	case "/":
		return int32(len(v.tree.nodes) - 1), nil
	}
	return int32(v.tree.descendants(path, n)), nil
}

// whoAmI answers whoAmI: the session's identities, each as its scheme and
// user (for digest the name before the colon, for ip the address), in the
// order the server's connection keeps them (authOrder).
func (st *state) whoAmI(session int64) []ClientInfo {
	ids := authOrder(st.ids(st.sessions[session]))
	out := make([]ClientInfo, 0, len(ids))
	for _, id := range ids {
		if id.scheme == "sasl" && !st.saslScheme {
			// ServerCnxn.getClientInfos leaves out an identity whose
			// scheme has no provider.
			continue
		}
		user := id.id
		if id.scheme == "digest" {
			user, _, _ = strings.Cut(user, ":")
		}
		out = append(out, ClientInfo{Scheme: id.scheme, User: user})
	}
	return out
}

// rootAlias is the path the server's tree finds a request's path at. The
// server does not check the path of a read: it looks it up as it is given,
// and its tree keys the root by "" as well as by "/", so "" reads the
// root. The reads the fake has served since before multiRead check their
// paths as go-zookeeper's client does and never see "".
func rootAlias(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// multiRead answers multiRead: each op, *GetDataRequest or
// *GetChildrenRequest, read on its own and answered with its result or its
// error, none failing the others. It sets no watch (the server reads its ops
// with the watch flag off). A write op among them — or a request of write
// ops only, which the server decodes but cannot read — fails the whole
// request with MarshallingError.
func (st *state) multiRead(v view, session int64, ops []any) ([]MultiReadResponse, error) {
	for _, op := range ops {
		switch op.(type) {
		case *GetDataRequest, *GetChildrenRequest:
		default:
			return nil, errMarshalling
		}
	}
	out := make([]MultiReadResponse, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *GetDataRequest:
			r, err := st.getData(v, session, rootAlias(op.Path), false)
			if err != nil {
				out[i].Error = err
				continue
			}
			out[i] = MultiReadResponse{Data: r.data, Stat: r.statPtr()}
		case *GetChildrenRequest:
			r, err := st.getChildren(v, session, rootAlias(op.Path), false)
			if err != nil {
				out[i].Error = err
				continue
			}
			out[i].Children = r.children
		}
	}
	return out, nil
}
