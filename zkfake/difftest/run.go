package difftest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Side is one ZooKeeper a sequence runs on: the fake or a real ensemble.
// For each sequence the runner first connects its sessions, then calls
// Begin, runs the ops, closes the sessions and calls End.
type Side interface {
	// Connect opens a new session whose every event goes to onEvent, as
	// zk.WithEventCallback does, and returns its connection and event
	// channel. The runner waits for StateHasSession itself.
	Connect(onEvent func(zk.Event)) (zktest.Conn, <-chan zk.Event, error)
	// Begin makes a fresh, empty persistent base node for the sequence
	// called name, and returns its path and its creation zxid (the origin
	// zxids are counted from).
	Begin(name string) (base string, czxid int64, err error)
	// End removes what Begin and the sequence left behind; base is "" if
	// the run failed before Begin. The sequence's sessions are closed by
	// then.
	End(base string) error
}

// Transcript is what one side answered to a sequence, rendered so that the
// two sides compare line by line (see the package documentation for the
// rules).
type Transcript struct {
	Sequence Sequence
	Steps    []Step   // one per op of Sequence
	Checks   []string // violated invariants of the side's own answers (times)
	// Quorum is the configuration of the servers a RealSide ran the
	// sequence on (RealSide.Quorum): what their /zookeeper/config lists,
	// which a fake compared with the transcript must hold too
	// (FakeOptions). It is not compared.
	Quorum []zkfake.QuorumServer
	// SASLScheme is RealSide.SASLScheme of the servers the sequence ran
	// on, which a fake compared with the transcript must have too. It is
	// not compared.
	SASLScheme bool
}

// Step is what one op observed.
type Step struct {
	// Lines are the op's answer ("-> ...") followed by the events each
	// session received and the watch channels that fired because of it.
	Lines []string
	// Returned is the path a create returned, relative to the base; the
	// shrinker uses it to replace references to ops it drops.
	Returned string
}

// timeouts of the runner's waits; on the fake they are virtual.
const (
	sessionTimeout = 4 * time.Second
	waitLimit      = 10 * time.Second
)

// errInconclusive marks a run that says nothing about the server: a
// session that did not come up, a settling Sync that failed.
var errInconclusive = errors.New("difftest: run inconclusive")

// Run runs seq on side and returns its transcript. An error means the run
// could not be carried out (the side was unreachable, a session did not
// come up), not that the side answered differently.
func Run(side Side, seq Sequence) (*Transcript, error) {
	r := &run{owners: map[int64]string{}, returned: map[int]string{}, requested: map[int]string{}, times: map[int64]int64{}}
	tr, err := r.all(side, seq)
	if rs, ok := side.(*RealSide); ok && tr != nil {
		tr.Quorum, tr.SASLScheme = slices.Clone(rs.Quorum), rs.SASLScheme
	}
	for _, s := range r.sessions {
		if closeErr := s.close(); closeErr != nil && err == nil {
			err = closeErr
		}
	}
	if endErr := side.End(r.base); endErr != nil && err == nil {
		err = fmt.Errorf("%w: cleaning up %s: %v", errInconclusive, r.base, endErr)
	}
	return tr, err
}

type run struct {
	base      string
	origin    int64
	sessions  []*session
	owners    map[int64]string // session id → "s1", ...
	watches   []*watch
	returned  map[int]string // op label → the absolute path it returned
	requested map[int]string // op label → the path it asked for
	times     map[int64]int64
	checks    []string
}

type watch struct {
	label string
	ch    <-chan zk.Event
	done  bool
}

func (r *run) all(side Side, seq Sequence) (*Transcript, error) {
	for i := 1; i <= seq.Sessions; i++ {
		s := &session{label: fmt.Sprintf("s%d", i), ready: make(chan struct{}), drained: make(chan struct{})}
		conn, events, err := side.Connect(s.onEvent)
		if err != nil {
			return nil, fmt.Errorf("%w: connecting %s: %v", errInconclusive, s.label, err)
		}
		s.conn = conn
		r.sessions = append(r.sessions, s)
		go func() {
			for range events {
			}
			close(s.drained)
		}()
		select {
		case <-s.ready:
		case <-time.After(waitLimit):
			return nil, fmt.Errorf("%w: %s: no session within %v", errInconclusive, s.label, waitLimit)
		}
		s.take() // the connection's own state changes are not compared
		r.owners[conn.SessionID()] = s.label
	}
	// The base comes after the sessions, so that the zxids a sequence is
	// compared on are those of its ops alone: the fewer, the less room for
	// other clients' writes on a shared server.
	var err error
	if r.base, r.origin, err = side.Begin(seq.Name); err != nil {
		return nil, fmt.Errorf("%w: setting up the base: %v", errInconclusive, err)
	}
	tr := &Transcript{Sequence: seq}
	for _, op := range seq.Ops {
		if op.Session < 1 || op.Session > len(r.sessions) {
			return nil, fmt.Errorf("op %d: session s%d: the sequence has %d", op.Label, op.Session, len(r.sessions))
		}
		step, err := r.step(op)
		if err != nil {
			return nil, err
		}
		tr.Steps = append(tr.Steps, step)
	}
	tr.Checks = append(r.checks, r.timeOrder()...)
	return tr, nil
}

// step makes one call, lets every event it causes arrive, and renders what
// was seen.
func (r *run) step(op Op) (Step, error) {
	s := r.sessions[op.Session-1]
	r.requested[op.Label] = op.Path
	if err := r.guard(op); err != nil {
		return Step{}, err
	}
	answer, returned, err := r.call(s, op)
	if err != nil {
		return Step{}, err
	}
	step := Step{Lines: []string{"-> " + answer}}
	if returned != "" {
		r.returned[op.Label] = returned
		step.Returned = r.relRaw(returned)
	}
	if op.writes() {
		if err := r.settle(s); err != nil {
			return Step{}, err
		}
	}
	if !s.closed && (strings.Contains(answer, "err=ErrAuthFailed") || strings.Contains(answer, "err=ErrConnectionClosed")) {
		// The server closed the connection: the step's events are the
		// client's reconnect, which a real client makes at its own pace.
		if err := s.awaitSession(r.base); err != nil {
			return Step{}, err
		}
	}
	for _, other := range r.sessions {
		step.Lines = append(step.Lines, r.events(other, other.take())...)
	}
	for _, wt := range r.watches {
		step.Lines = append(step.Lines, r.fired(wt)...)
	}
	return step, nil
}

// settle makes the events a write caused arrive at every other open
// session: ZooKeeper sends a session its watch events before the reply to
// any later request, and a Sync's reply comes after the server it is
// connected to has caught up with the write. The writing session's own
// events came before the write's reply.
func (r *run) settle(actor *session) error {
	for _, s := range r.sessions {
		if s == actor || s.closed {
			continue
		}
		if _, err := s.conn.Sync(r.base); err != nil {
			return fmt.Errorf("%w: settling %s: Sync: %v", errInconclusive, s.label, err)
		}
	}
	return nil
}

// resolve turns an op's path into the absolute path to call with.
func (r *run) resolve(p string) string {
	if label, ok := refLabel(p); ok {
		_, rest, _ := strings.Cut(p, "/")
		target := r.returned[label]
		if target == "" {
			if req, ok := r.requested[label]; ok && req != p {
				target = r.resolve(req)
			} else {
				target = r.base + "/" + p // a reference to nothing: a plain name
			}
		}
		// A path under the empty path (op 3 asked for "") stays empty: the
		// client refuses it, where "/"+rest would name a node outside the
		// base.
		if rest != "" && target != "" {
			target += "/" + rest
		}
		return target
	}
	switch {
	case p == "" || strings.HasPrefix(p, "/"):
		return p
	case p == ".":
		return r.base
	default:
		return r.base + "/" + p
	}
}

// relRaw writes an absolute path relative to the base.
func (r *run) relRaw(p string) string {
	switch {
	case p == r.base:
		return "."
	case strings.HasPrefix(p, r.base+"/"):
		return p[len(r.base)+1:]
	default:
		return p
	}
}

// protectedGUID matches the random GUID go-zookeeper puts in the name of a
// protected ephemeral sequential node.
var protectedGUID = regexp.MustCompile(`_c_[0-9a-f]{32}-`)

// rel writes a path for comparison: relative to the base, GUIDs hidden.
func (r *run) rel(p string) string {
	return quoteIfNeeded(protectedGUID.ReplaceAllString(r.relRaw(p), "_c_GUID-"))
}

func (r *run) zxid(z int64) string {
	if z == 0 {
		return "0"
	}
	return fmt.Sprintf("z%+d", z-r.origin)
}

func (r *run) owner(id int64) string {
	if id == 0 {
		return "0"
	}
	if label, ok := r.owners[id]; ok {
		return label
	}
	return "other"
}

func (r *run) stat(st *zk.Stat) string {
	if st == nil {
		return "stat=nil"
	}
	if *st == (zk.Stat{}) {
		return "stat=zero"
	}
	r.noteTime(st.Czxid, st.Ctime)
	r.noteTime(st.Mzxid, st.Mtime)
	return fmt.Sprintf("stat{c=%s m=%s p=%s v=%d cv=%d av=%d eph=%s len=%d n=%d}",
		r.zxid(st.Czxid), r.zxid(st.Mzxid), r.zxid(st.Pzxid), st.Version, st.Cversion, st.Aversion,
		r.owner(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// noteTime records the time a transaction carried. Times are not compared
// between the sides (their clocks differ); instead each side's own times
// must be those of their transactions: one time per zxid, and never
// earlier for a later zxid.
func (r *run) noteTime(zxid, t int64) {
	if zxid == 0 {
		return
	}
	if prev, ok := r.times[zxid]; ok && prev != t {
		r.checks = append(r.checks, fmt.Sprintf("check: two different times for zxid %s", r.zxid(zxid)))
		return
	}
	r.times[zxid] = t
}

func (r *run) timeOrder() []string {
	zxids := make([]int64, 0, len(r.times))
	for z := range r.times {
		zxids = append(zxids, z)
	}
	sort.Slice(zxids, func(i, j int) bool { return zxids[i] < zxids[j] })
	var out []string
	for i := 1; i < len(zxids); i++ {
		if r.times[zxids[i]] < r.times[zxids[i-1]] {
			out = append(out, fmt.Sprintf("check: zxid %s has an earlier time than zxid %s", r.zxid(zxids[i]), r.zxid(zxids[i-1])))
		}
	}
	return out
}

// sentinels are go-zookeeper's error values, compared by identity.
var sentinels = []struct {
	err  error
	name string
}{
	{zk.ErrConnectionClosed, "ErrConnectionClosed"}, {zk.ErrUnknown, "ErrUnknown"}, {zk.ErrAPIError, "ErrAPIError"},
	{zk.ErrNoNode, "ErrNoNode"}, {zk.ErrNoAuth, "ErrNoAuth"}, {zk.ErrBadVersion, "ErrBadVersion"},
	{zk.ErrNoChildrenForEphemerals, "ErrNoChildrenForEphemerals"}, {zk.ErrNodeExists, "ErrNodeExists"},
	{zk.ErrNotEmpty, "ErrNotEmpty"}, {zk.ErrSessionExpired, "ErrSessionExpired"}, {zk.ErrInvalidACL, "ErrInvalidACL"},
	{zk.ErrInvalidFlags, "ErrInvalidFlags"}, {zk.ErrAuthFailed, "ErrAuthFailed"}, {zk.ErrClosing, "ErrClosing"},
	{zk.ErrNothing, "ErrNothing"}, {zk.ErrSessionMoved, "ErrSessionMoved"}, {zk.ErrReconfigDisabled, "ErrReconfigDisabled"},
	{zk.ErrBadArguments, "ErrBadArguments"}, {zk.ErrInvalidPath, "ErrInvalidPath"}, {zk.ErrNoServer, "ErrNoServer"},
	{zk.ErrShortBuffer, "ErrShortBuffer"},
}

// errText names a sentinel error by identity, and writes any other error
// as its quoted text followed by the sentinels it wraps.
func errText(err error) string {
	if err == nil {
		return "nil"
	}
	if zktest.ClosedConnection(err) && !errors.Is(err, zk.ErrConnectionClosed) {
		// When the server closes the connection while go-zookeeper is
		// still writing a request too large for it, the call returns
		// either zk.ErrConnectionClosed or the socket's own error,
		// depending on timing: both are the connection closing.
		return "ErrConnectionClosed"
	}
	for _, s := range sentinels {
		if err == s.err {
			return s.name
		}
	}
	out := strconv.Quote(err.Error())
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			out += "~" + s.name
		}
	}
	return out
}

// event renders an event; own is the address of the server the session
// is connected to, which its session events carry.
func (r *run) event(ev zk.Event, own string) string {
	out := fmt.Sprintf("%s %s", ev.Type, ev.State)
	if ev.Path != "" {
		out += " path=" + r.rel(ev.Path)
	}
	out += " err=" + errText(ev.Err)
	if ev.Server != "" {
		// A session event names the server the client is or was connected
		// to: on an ensemble a dropped connection's event names the member
		// it left, and the client may reconnect to another one.
		if ev.Server == own || ev.Type == zk.EventSession {
			out += " server=own"
		} else {
			out += " server=" + strconv.Quote(ev.Server)
		}
	}
	return out
}

// events renders what a session's event callback received. go-zookeeper
// ends a closing session's watches in Go map order, so a run of
// EventNotWatching is sorted.
func (r *run) events(s *session, evs []zk.Event) []string {
	var out []string
	for i := 0; i < len(evs); {
		j := i + 1
		if evs[i].Type == zk.EventNotWatching {
			for j < len(evs) && evs[j].Type == zk.EventNotWatching {
				j++
			}
		}
		var group []string
		for _, ev := range evs[i:j] {
			group = append(group, s.label+" event "+r.event(ev, s.conn.Server()))
		}
		sort.Strings(group)
		out = append(out, group...)
		i = j
	}
	return out
}

// fired renders what arrived on a watch channel since the last look.
func (r *run) fired(wt *watch) []string {
	var out []string
	for !wt.done {
		select {
		case ev, ok := <-wt.ch:
			if !ok {
				wt.done = true
				out = append(out, wt.label+" closed")
				continue
			}
			line := wt.label + " <- " + r.event(ev, "")
			select {
			case _, ok := <-wt.ch:
				if !ok {
					wt.done = true
					line += " then closed"
				} else {
					line += " then another event"
				}
			default:
				line += " and still open"
			}
			out = append(out, line)
		default:
			return out
		}
	}
	return out
}

func (r *run) newWatch(ch <-chan zk.Event) string {
	if ch == nil {
		return "watch=nil"
	}
	wt := &watch{label: fmt.Sprintf("w%d", len(r.watches)+1), ch: ch}
	r.watches = append(r.watches, wt)
	return "watch=" + wt.label
}

func formatACL(acl []zk.ACL) string {
	if acl == nil {
		return "nil"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (r *run) children(names []string) string {
	if names == nil {
		return "nil"
	}
	rel := make([]string, len(names))
	for i, n := range names {
		rel[i] = quoteIfNeeded(protectedGUID.ReplaceAllString(n, "_c_GUID-"))
	}
	// ZooKeeper lists children in its hash set's order.
	sort.Strings(rel)
	return "[" + strings.Join(rel, " ") + "]"
}

// call makes op's call on s and renders the answer. It returns the path
// a create made, if any.
func (r *run) call(s *session, op Op) (answer, returned string, err error) {
	c := s.conn
	p := r.resolve(op.Path)
	acl := aclPalette[op.ACL]
	switch op.Kind {
	case Create, CreateContainer, CreateTTL, CreateProtected:
		var got string
		var err error
		switch op.Kind {
		case Create:
			got, err = c.Create(p, op.Data, op.Flags, acl)
		case CreateContainer:
			got, err = c.CreateContainer(p, op.Data, op.Flags, acl)
		case CreateTTL:
			got, err = c.CreateTTL(p, op.Data, op.Flags, acl, op.TTL)
		case CreateProtected:
			got, err = c.CreateProtectedEphemeralSequential(p, op.Data, acl)
		}
		return fmt.Sprintf("path=%s err=%s", r.rel(got), errText(err)), got, nil
	case Delete:
		return "err=" + errText(c.Delete(p, op.Version)), "", nil
	case Set:
		st, err := c.Set(p, op.Data, op.Version)
		return fmt.Sprintf("%s err=%s", r.stat(st), errText(err)), "", nil
	case Get:
		data, st, err := c.Get(p)
		return fmt.Sprintf("data=%s %s err=%s", formatData(data), r.stat(st), errText(err)), "", nil
	case GetW:
		data, st, ch, err := c.GetW(p)
		return fmt.Sprintf("data=%s %s err=%s %s", formatData(data), r.stat(st), errText(err), r.newWatch(ch)), "", nil
	case Exists:
		ok, st, err := c.Exists(p)
		return fmt.Sprintf("exists=%t %s err=%s", ok, r.stat(st), errText(err)), "", nil
	case ExistsW:
		ok, st, ch, err := c.ExistsW(p)
		return fmt.Sprintf("exists=%t %s err=%s %s", ok, r.stat(st), errText(err), r.newWatch(ch)), "", nil
	case Children:
		names, st, err := c.Children(p)
		return fmt.Sprintf("children=%s %s err=%s", r.children(names), r.stat(st), errText(err)), "", nil
	case ChildrenW:
		names, st, ch, err := c.ChildrenW(p)
		return fmt.Sprintf("children=%s %s err=%s %s", r.children(names), r.stat(st), errText(err), r.newWatch(ch)), "", nil
	case GetACL:
		got, st, err := c.GetACL(p)
		return fmt.Sprintf("acl=%s %s err=%s", formatACL(got), r.stat(st), errText(err)), "", nil
	case SetACL:
		st, err := c.SetACL(p, acl, op.Version)
		return fmt.Sprintf("%s err=%s", r.stat(st), errText(err)), "", nil
	case Sync:
		got, err := c.Sync(p)
		return fmt.Sprintf("path=%s err=%s", r.rel(got), errText(err)), "", nil
	case AddAuth:
		return "err=" + errText(c.AddAuth(op.scheme(), []byte(op.Auth))), "", nil
	case Close:
		if err := s.close(); err != nil {
			return "", "", err
		}
		return "closed", "", nil
	case Multi:
		return r.multi(c, op), "", nil
	}
	return "", "", fmt.Errorf("op %d: unknown call %q", op.Label, op.Kind)
}

func (r *run) multi(c zktest.Conn, op Op) string {
	reqs := make([]any, len(op.Sub))
	for i, sub := range op.Sub {
		p := r.resolve(sub.Path)
		switch sub.Kind {
		case Create:
			reqs[i] = &zk.CreateRequest{Path: p, Data: sub.Data, Acl: aclPalette[sub.ACL], Flags: sub.Flags}
		case Delete:
			reqs[i] = &zk.DeleteRequest{Path: p, Version: sub.Version}
		case Set:
			reqs[i] = &zk.SetDataRequest{Path: p, Data: sub.Data, Version: sub.Version}
		case Check:
			reqs[i] = &zk.CheckVersionRequest{Path: p, Version: sub.Version}
		default:
			reqs[i] = fmt.Sprintf("unsupported multi op %s", sub.Kind)
		}
	}
	res, err := c.Multi(reqs...)
	if res == nil || len(res) == 0 && errText(err) == "ErrConnectionClosed" {
		// go-zookeeper returns no slice with zk.ErrConnectionClosed, and
		// an empty one with a socket's own error, which errText reads as
		// the same closing (which of the two comes is timing): no results.
		return "results=nil err=" + errText(err)
	}
	parts := make([]string, len(res))
	for i, m := range res {
		parts[i] = fmt.Sprintf("{path=%s %s err=%s}", r.rel(m.String), r.stat(m.Stat), errText(m.Error))
	}
	return "results=[" + strings.Join(parts, " ") + "] err=" + errText(err)
}
