package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// The Election scenarios are written once against zktest.Env and run on
// the fake (TestElectionFake) and on a real ensemble (TestElectionReal), as
// the Mutex's are.

var electionScenarios = []zktest.Scenario{
	{Name: "LeaderExpiryHandsOver", Body: testLeaderExpiryHandsOver},
	{Name: "PartitionSurvivedKeepsLeader", Body: testPartitionSurvivedKeepsLeader},
	{Name: "ExpiredLeaderFenced", Body: testExpiredLeaderFenced},
	{Name: "ResignHandsOverInOrder", Body: testResignHandsOverInOrder},
	{Name: "CampaignCancelledLeavesNoNode", Body: testCampaignCancelledLeavesNoNode},
	{Name: "CampaignWhileLeading", Body: testCampaignWhileLeading},
	{Name: "OneWakeupPerCandidate", Body: testOneWakeupPerCandidate},
	{Name: "LeaderOfNoElection", Body: testLeaderOfNoElection},
	{Name: "LeaderGoneBeforeRead", Body: testLeaderGoneBeforeRead},
	{Name: "ObserveVacancyAndNextLeader", Body: testObserveVacancyAndNextLeader},
	{Name: "ObserveCandidateBetweenListings", Body: testObserveCandidateBetweenListings},
	{Name: "ObserveThroughPartition", Body: testObserveThroughPartition},
	{Name: "ObserveThroughItsSessionExpiry", Body: testObserveThroughItsSessionExpiry},
	{Name: "ObserveEndsWithCtx", Body: testObserveEndsWithCtx},
	{Name: "ObserveEndsWhenConnCloses", Body: testObserveEndsWhenConnCloses},
	{Name: "InteropKazooElection", Body: testInteropKazooElection},
}

func runElectionScenarios(t *testing.T, target zktest.Target) {
	zktest.RunScenarios(t, target, electionScenarios)
}

// campaignAsync starts e.Campaign(ctx) and returns where its result will
// arrive.
func campaignAsync(ctx context.Context, e *recipe.Election) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Campaign(ctx) }()
	return done
}

// currentLeader is recipe.CurrentLeader, failing the test on an error.
func currentLeader(t testing.TB, conn recipe.Conn, dir string) recipe.Leader {
	t.Helper()
	l, err := recipe.CurrentLeader(testCtx(t), conn, dir)
	if err != nil {
		t.Fatalf("CurrentLeader(%s): %v", dir, err)
	}
	return l
}

// wantLeader checks a Leader against the election that should lead, on
// the session it campaigned with.
func wantLeader(t testing.TB, what string, got recipe.Leader, e *recipe.Election, conn zktest.Conn, value string) {
	t.Helper()
	if got.Token != e.Token() || got.Session != conn.SessionID() || string(got.Value) != value ||
		!strings.HasPrefix(got.Node, e.Path()+"/") {
		t.Fatalf("%s: leader %+v (value %q); want value %q, token %d, session %#x",
			what, got, got.Value, value, e.Token(), conn.SessionID())
	}
}

// nextLeader receives the observer's next value.
func nextLeader(t testing.TB, what string, ch <-chan recipe.Leader) recipe.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("the observer's channel closed while waiting for %s", what)
		}
		return l
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for the observer to report %s", what)
	}
	return recipe.Leader{}
}

// noNews fails if the observer reports anything within a short while.
func noNews(t testing.TB, what string, ch <-chan recipe.Leader) {
	t.Helper()
	select {
	case l, ok := <-ch:
		t.Fatalf("%s: the observer reported %+v (open %v)", what, l, ok)
	case <-time.After(300 * time.Millisecond):
	}
}

// observeCtx is a context for an observer that the test ends itself.
func observeCtx(t testing.TB) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(testCtx(t))
	t.Cleanup(cancel)
	return ctx, cancel
}

// drained waits for the observer's channel to close, allowing for one
// value that was on its way.
func drained(t testing.TB, what string, ch <-chan recipe.Leader) {
	t.Helper()
	deadline := time.After(time.Minute)
	for range 2 {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("%s: the observer's channel was not closed", what)
		}
	}
	t.Fatalf("%s: the observer kept reporting", what)
}

// observerGoroutines counts goroutines running Observe's code.
func observerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "zksim/recipe.(*Election).observe") {
			count++
		}
	}
	return count
}

// fence is a resource guarded by fencing tokens: it accepts a write only
// if its token is at least the largest it has accepted, so a leader that
// has been replaced is refused once its successor has written.
type fence struct {
	mu     sync.Mutex
	newest int64
	writes []string
}

func (f *fence) write(token int64, what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.newest {
		return false
	}
	f.newest = token
	f.writes = append(f.writes, what)
	return true
}

func (f *fence) accepted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

// The leader's session expires: the candidate behind it leads with a
// larger token, the old leader learns that it lost, and readers and
// observers see the new leader.
func testLeaderExpiryHandsOver(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	connO, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !a.IsLeader() || a.Token() == 0 {
		t.Fatalf("after Campaign: leader %v token %d", a.IsLeader(), a.Token())
	}
	ctx, _ := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	first := nextLeader(t, "A", observed)
	wantLeader(t, "observed first", first, a, connA, "a")
	if got := currentLeader(t, connO, dir); got.Node != first.Node {
		t.Fatalf("CurrentLeader %+v, the observer saw %+v", got, first)
	}

	bDone := campaignAsync(testCtx(t), b)
	settles(t, connB, dir, 2)
	stillBlocked(t, "B's Campaign while A leads", bDone)
	lost, oldToken := a.Lost(), a.Token()

	zktest.Require(t, expirer.Expire(connA))
	if err := mustWait(t, "B's Campaign after A's session expired", bDone); err != nil {
		t.Fatalf("B's Campaign: %v", err)
	}
	if !b.IsLeader() || b.Token() <= oldToken {
		t.Fatalf("B leads %v with token %d; A's was %d", b.IsLeader(), b.Token(), oldToken)
	}
	// A learns of the expiry at its next contact with the server.
	connA.Exists(dir)
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("A's Lost() not closed after its session expired")
	}
	if a.IsLeader() || a.State() != recipe.MutexLost || a.Token() != 0 {
		t.Fatalf("A after the expiry: leader %v state %v token %d", a.IsLeader(), a.State(), a.Token())
	}
	wantLeader(t, "CurrentLeader after the expiry", currentLeader(t, connO, dir), b, connB, "b")
	l, err := a.Leader(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	wantLeader(t, "A's Leader after the expiry", l, b, connB, "b")
	wantLeader(t, "observed next", nextLeader(t, "B", observed), b, connB, "b")

	if err := a.Resign(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("A.Resign() = %v, want ErrLockLost", err)
	}
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, "the vacancy", observed); got.Node != "" {
		t.Fatalf("observed %+v after the last leader resigned, want the zero Leader", got)
	}
}

// A partition shorter than the session timeout puts the leadership in
// doubt — IsLeader is false, Lost stays open — and gives it back with the
// same token once healed; nobody else led meanwhile.
func testPartitionSurvivedKeepsLeader(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/election"
	// As long a session as the target grants (a real ensemble with a 200ms
	// tick caps it at 4s), so that it outlives the partition.
	connA, _ := env.Connect(t, 10*time.Second)
	connB, _ := env.Connect(t, sessionTimeout)
	aStates, bStates := &stateLog{}, &stateLog{}
	a := recipe.NewElection(connA, dir, []byte("a"), recipe.WithStatePollInterval(20*time.Millisecond), recipe.WithStateListener(aStates.add))
	b := recipe.NewElection(connB, dir, []byte("b"), recipe.WithStateListener(bStates.add))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	token, lost := a.Token(), a.Lost()
	bDone := campaignAsync(testCtx(t), b)
	settles(t, connB, dir, 2)

	zktest.Require(t, p.Partition(connA))
	eventually(t, "A suspended", func() bool { return a.State() == recipe.MutexSuspended })
	if a.IsLeader() {
		t.Fatal("IsLeader() while suspended")
	}
	if a.Token() != token {
		t.Fatalf("a suspended leader's token is %d, want %d", a.Token(), token)
	}
	stillBlocked(t, "B's Campaign while A's leadership is in doubt", bDone)
	zktest.Require(t, p.Heal(connA))
	eventually(t, "A leads again", a.IsLeader)
	if a.Token() != token {
		t.Fatalf("after the heal A's token is %d, want %d", a.Token(), token)
	}
	select {
	case <-lost:
		t.Fatal("Lost() closed by a partition the session survived")
	default:
	}
	if b.IsLeader() {
		t.Fatal("B leads while A does")
	}
	bStates.want(t) // B never led
	if got := currentLeader(t, connB, dir); got.Token != token || string(got.Value) != "a" || got.Session != connA.SessionID() {
		t.Fatalf("CurrentLeader after the heal: %+v, want A's (token %d)", got, token)
	}

	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "B's Campaign after A resigned", bDone); err != nil {
		t.Fatal(err)
	}
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
	aStates.want(t, recipe.MutexHeld, recipe.MutexSuspended, recipe.MutexHeld, recipe.MutexUnlocked)
}

// A leader cut off for longer than its session timeout is replaced. It
// stops claiming leadership as soon as it notices the cut — before its
// successor's first write — and once healed learns that it lost; a
// resource guarded by the fencing token accepts the successor's write and
// refuses the old leader's.
func testExpiredLeaderFenced(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"), recipe.WithStatePollInterval(20*time.Millisecond))
	b := recipe.NewElection(connB, dir, []byte("b"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	res := &fence{}
	aToken := a.Token()
	if !res.write(aToken, "a1") {
		t.Fatal("the first leader's write was refused")
	}
	bDone := campaignAsync(testCtx(t), b)
	settles(t, connB, dir, 2)

	zktest.Require(t, p.Partition(connA))
	// B leads once the server has expired A's session and with it A's node.
	if err := mustWait(t, "B's Campaign while A is cut off", bDone); err != nil {
		t.Fatalf("B's Campaign: %v", err)
	}
	if a.IsLeader() {
		t.Fatalf("A claims leadership (state %v) while B leads", a.State())
	}
	if b.Token() <= aToken {
		t.Fatalf("B's token %d not above A's %d", b.Token(), aToken)
	}
	if !res.write(b.Token(), "b1") {
		t.Fatal("the new leader's write was refused")
	}

	zktest.Require(t, p.Heal(connA))
	select {
	case <-a.Lost():
	case <-time.After(time.Minute):
		t.Fatal("A's Lost() not closed once healed into an expired session")
	}
	if a.IsLeader() || a.State() != recipe.MutexLost || a.Token() != 0 {
		t.Fatalf("A after the heal: leader %v state %v token %d", a.IsLeader(), a.State(), a.Token())
	}
	if res.write(aToken, "a2") {
		t.Fatal("the old leader's write with its stale token was accepted")
	}
	if got, want := res.accepted(), []string{"a1", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("accepted writes %v, want %v", got, want)
	}
	if err := a.Resign(); !errors.Is(err, recipe.ErrLockLost) {
		t.Fatalf("A.Resign() = %v, want ErrLockLost", err)
	}
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}

// Each Resign hands the leadership to the next candidate in line, in the
// order they campaigned, each with a larger token.
func testResignHandsOverInOrder(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	conn, _ := env.Connect(t, sessionTimeout)
	first := recipe.NewElection(conn, dir, []byte("first"))
	if err := first.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	const n = 6
	var mu sync.Mutex
	var order []int
	var tokens []int64
	results := make([]<-chan error, n)
	for i := range n {
		c, _ := env.Connect(t, sessionTimeout)
		e := recipe.NewElection(c, dir, fmt.Appendf(nil, "%d", i))
		done := make(chan error, 1)
		results[i] = done
		go func() {
			err := e.Campaign(testCtx(t))
			if err == nil {
				if !e.IsLeader() {
					err = fmt.Errorf("candidate %d: Campaign returned but IsLeader is false", i)
				}
				l, lerr := e.Leader(testCtx(t))
				if lerr != nil || string(l.Value) != fmt.Sprint(i) {
					err = errors.Join(err, fmt.Errorf("candidate %d: Leader() = %+v, %v", i, l, lerr))
				}
				mu.Lock()
				order = append(order, i)
				tokens = append(tokens, e.Token())
				mu.Unlock()
				err = errors.Join(err, e.Resign())
			}
			done <- err
		}()
		// The next candidate campaigns only once this one is in line.
		settles(t, conn, dir, i+2)
	}
	firstToken := first.Token()
	if err := first.Resign(); err != nil {
		t.Fatal(err)
	}
	for i, done := range results {
		if err := mustWait(t, fmt.Sprintf("candidate %d", i), done); err != nil {
			t.Errorf("candidate %d: %v", i, err)
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Errorf("leaders in order %v, want %v", order, want)
	}
	tokens = append([]int64{firstToken}, tokens...)
	if !slices.IsSorted(tokens) || len(slices.Compact(slices.Clone(tokens))) != len(tokens) {
		t.Errorf("tokens %v do not grow with every leader", tokens)
	}
	settles(t, conn, dir, 0)
}

// A Campaign ended by its ctx, waiting or before it starts, leaves no node
// and no leadership.
func testCampaignCancelledLeavesNoNode(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Campaign(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Campaign(cancelled) = %v", err)
	}
	if ok, _, err := connA.Exists(dir); ok || err != nil {
		t.Fatalf("a cancelled Campaign touched the server: exists %v, %v", ok, err)
	}

	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	bDone := campaignAsync(ctx, b)
	settles(t, connB, dir, 2)
	cancel()
	if err := mustWait(t, "B's Campaign", bDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("B's Campaign = %v, want context.Canceled", err)
	}
	settles(t, connA, dir, 1)
	if b.IsLeader() || b.State() != recipe.MutexUnlocked || b.Token() != 0 {
		t.Fatalf("B after its Campaign was cancelled: leader %v state %v token %d", b.IsLeader(), b.State(), b.Token())
	}
	if err := b.Resign(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("B.Resign() = %v, want ErrNotLocked", err)
	}
	wantLeader(t, "after B gave up", currentLeader(t, connB, dir), a, connA, "a")

	ctx, cancel = context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer cancel()
	if err := b.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Campaign past its deadline = %v, want context.DeadlineExceeded", err)
	}
	settles(t, connA, dir, 1)
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	settles(t, connA, dir, 0)
}

// Campaign on a leading Election returns at once and does not count up:
// one Resign ends the leadership.
func testCampaignWhileLeading(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))
	for range 3 {
		if err := a.Campaign(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if ids := contenders(t, connA, dir); len(ids) != 1 {
		t.Fatalf("repeated Campaigns made nodes: %v", ids)
	}
	bDone := campaignAsync(testCtx(t), b)
	settles(t, connB, dir, 2)
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "B's Campaign after one Resign", bDone); err != nil {
		t.Fatal(err)
	}
	if a.IsLeader() || !b.IsLeader() {
		t.Fatalf("after one Resign: A leads %v, B leads %v", a.IsLeader(), b.IsLeader())
	}
	if err := a.Resign(); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("a second Resign = %v, want ErrNotLocked", err)
	}
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}

// Each candidate watches only its predecessor: every change of leader
// wakes exactly one candidate, and each candidate wakes once in all.
func testOneWakeupPerCandidate(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	checkOneWakeupPerHandover(t, env, dir, 8, func(conn recipe.Conn, wake func(zk.Event)) handover {
		e := recipe.NewElection(conn, dir, nil, recipe.WithWakeHook(wake))
		return handover{take: e.Campaign, give: e.Resign}
	})
}

// An election without candidates — no directory, an empty one, or one
// with only children that are not candidates — has no leader; reading it
// creates nothing.
func testLeaderOfNoElection(t *testing.T, env zktest.Env) {
	conn, _ := env.Connect(t, sessionTimeout)
	missing := env.Base() + "/nothing/here"
	if _, err := recipe.CurrentLeader(testCtx(t), conn, missing); !errors.Is(err, recipe.ErrNoLeader) {
		t.Errorf("CurrentLeader of a missing directory: %v, want ErrNoLeader", err)
	}
	if _, err := recipe.NewElection(conn, missing, nil).Leader(testCtx(t)); !errors.Is(err, recipe.ErrNoLeader) {
		t.Errorf("Leader of a missing directory: %v, want ErrNoLeader", err)
	}
	if ok, _, err := conn.Exists(env.Base() + "/nothing"); ok || err != nil {
		t.Errorf("reading the leader created the directory: %v, %v", ok, err)
	}

	dir := env.Base() + "/election"
	if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := recipe.CurrentLeader(testCtx(t), conn, dir); !errors.Is(err, recipe.ErrNoLeader) {
		t.Errorf("CurrentLeader of an empty directory: %v, want ErrNoLeader", err)
	}
	if _, err := conn.Create(dir+"/config", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := recipe.CurrentLeader(testCtx(t), conn, dir); !errors.Is(err, recipe.ErrNoLeader) {
		t.Errorf("CurrentLeader with only a foreign child: %v, want ErrNoLeader", err)
	}

	for _, bad := range []string{"", "relative", dir + "/"} {
		if _, err := recipe.CurrentLeader(testCtx(t), conn, bad); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("CurrentLeader(%q) = %v, want zk.ErrInvalidPath", bad, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := recipe.CurrentLeader(ctx, conn, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("CurrentLeader(cancelled) = %v", err)
	}
	// Observe gives up on a path that can never be read: its channel
	// closes without a value.
	select {
	case l, ok := <-recipe.NewElection(conn, "relative", nil).Observe(testCtx(t)):
		if ok {
			t.Errorf("Observe of an invalid path reported %+v", l)
		}
	case <-time.After(time.Minute):
		t.Error("Observe of an invalid path kept its channel open")
	}
}

// vanishingConn deletes, through another session, the first node it is
// asked to Get, just before the Get: the leader resigns between the
// listing and the read.
type vanishingConn struct {
	recipe.Conn
	other  zktest.Conn
	prefix string
	gone   atomic.Value // the node deleted
}

func (v *vanishingConn) Get(path string) ([]byte, *zk.Stat, error) {
	if strings.HasPrefix(path, v.prefix) && v.gone.CompareAndSwap(nil, path) {
		if err := v.other.Delete(path, -1); err != nil {
			return nil, nil, fmt.Errorf("vanishingConn: %w", err)
		}
	}
	return v.Conn.Get(path)
}

// The leader that was first in the listing goes before it is read:
// CurrentLeader lists again and reports the next candidate.
func testLeaderGoneBeforeRead(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	reader, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	bDone := campaignAsync(testCtx(t), b)
	settles(t, reader, dir, 2)
	v := &vanishingConn{Conn: reader, other: connA, prefix: dir + "/"}
	got, err := recipe.CurrentLeader(testCtx(t), v, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "B's Campaign", bDone); err != nil {
		t.Fatal(err)
	}
	if gone, _ := v.gone.Load().(string); gone == "" || got.Node == gone {
		t.Fatalf("CurrentLeader = %+v; the node deleted before the read was %q", got, gone)
	}
	wantLeader(t, "CurrentLeader after the first vanished", got, b, connB, "b")
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}

// An observer sees the leader, the vacancy when it resigns, and the next
// leader; it watches only the leader's node while there is one, so a
// candidate joining or leaving the line does not wake it; and it creates
// the missing directory, to have something to watch.
func testObserveVacancyAndNextLeader(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/a/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	connC, _ := env.Connect(t, sessionTimeout)
	raw, _ := env.Connect(t, sessionTimeout)
	connO := countRequests(raw)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))
	c := recipe.NewElection(connC, dir, []byte("c"))

	ctx, cancel := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	if got := nextLeader(t, "the empty seat", observed); got.Node != "" || got.Value != nil {
		t.Fatalf("first observed %+v, want the zero Leader", got)
	}
	for _, p := range []string{env.Base() + "/a", dir} {
		ok, stat, err := connO.Exists(p)
		if err != nil || !ok || stat.EphemeralOwner != 0 {
			t.Fatalf("Observe left %s: exists %v, stat %+v, err %v (want persistent)", p, ok, stat, err)
		}
	}
	eventually(t, "the observer watching the directory", func() bool {
		op, path := connO.lastWatch()
		return op == "getChildren" && path == dir
	})

	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantLeader(t, "observed", nextLeader(t, "A", observed), a, connA, "a")
	aNode := currentLeader(t, connA, dir).Node
	eventually(t, "the observer watching the leader's node", func() bool {
		op, path := connO.lastWatch()
		return op == "getData" && path == aNode
	})

	// A candidate joins the line and leaves it again: no news, and not a
	// single request from the observer.
	before := connO.Requests.Load()
	cctx, ccancel := context.WithCancel(testCtx(t))
	cDone := campaignAsync(cctx, c)
	settles(t, connA, dir, 2)
	noNews(t, "a candidate joined", observed)
	ccancel()
	if err := mustWait(t, "C's Campaign", cDone); !errors.Is(err, context.Canceled) {
		t.Fatalf("C's Campaign = %v", err)
	}
	settles(t, connA, dir, 1)
	noNews(t, "a candidate left", observed)
	if n := connO.Requests.Load() - before; n != 0 {
		t.Fatalf("the observer sent %d requests while only candidates came and went", n)
	}

	// A change of the leader's data alone is no change of leader.
	if _, err := connA.Set(aNode, []byte("a2"), -1); err != nil {
		t.Fatal(err)
	}
	noNews(t, "the leader's data changed", observed)

	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, "the vacancy", observed); got.Node != "" {
		t.Fatalf("observed %+v after A resigned, want the zero Leader", got)
	}
	if err := b.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantLeader(t, "observed", nextLeader(t, "B", observed), b, connB, "b")
	cancel()
	drained(t, "after ctx ended", observed)
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}

// betweenConn makes a candidate arrive, through another session, right
// before the observer's first watched listing of the directory: the plain
// listing found the seat empty, the watched one finds a leader.
type betweenConn struct {
	recipe.Conn
	arrive func()
	done   atomic.Bool
}

func (b *betweenConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if b.done.CompareAndSwap(false, true) {
		b.arrive()
	}
	return b.Conn.ChildrenW(path)
}

// The observer reports the candidate that came between its two listings,
// and, having waited on the children watch, the vacancy when it goes.
func testObserveCandidateBetweenListings(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	raw, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	campaigned := make(chan error, 1)
	connO := &betweenConn{Conn: raw, arrive: func() { campaigned <- a.Campaign(testCtx(t)) }}
	ctx, cancel := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	if err := mustWait(t, "A's Campaign", campaigned); err != nil {
		t.Fatal(err)
	}
	wantLeader(t, "observed first", nextLeader(t, "A", observed), a, connA, "a")
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, "the vacancy", observed); got.Node != "" {
		t.Fatalf("observed %+v after A resigned, want the zero Leader", got)
	}
	cancel()
	drained(t, "after ctx ended", observed)
}

// The observer's watch outlives a partition of its own connection: the
// leader that resigned meanwhile is reported once it reconnects.
func testObserveThroughPartition(t *testing.T, env zktest.Env) {
	p := partitioner(t, env)
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	connO, _ := env.Connect(t, 10*time.Second)
	a := recipe.NewElection(connA, dir, []byte("a"))
	b := recipe.NewElection(connB, dir, []byte("b"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	wantLeader(t, "observed", nextLeader(t, "A", observed), a, connA, "a")
	zktest.Require(t, p.Partition(connO))
	bDone := campaignAsync(testCtx(t), b)
	settles(t, connA, dir, 2)
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if err := mustWait(t, "B's Campaign", bDone); err != nil {
		t.Fatal(err)
	}
	noNews(t, "cut off", observed)
	zktest.Require(t, p.Heal(connO))
	wantLeader(t, "observed after the heal", nextLeader(t, "B", observed), b, connB, "b")
	cancel()
	drained(t, "after ctx ended", observed)
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}

// The observer's own session expires: go-zookeeper ends its watch and
// carries on with a new session, on which the observer reads again — no
// news while the leader is the same, and the next change is reported.
func testObserveThroughItsSessionExpiry(t *testing.T, env zktest.Env) {
	expirer, ok := env.(zktest.Expirer)
	if !ok {
		t.Skip("target cannot expire sessions")
	}
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connO, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("a"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	wantLeader(t, "observed", nextLeader(t, "A", observed), a, connA, "a")
	old := connO.SessionID()
	zktest.Require(t, expirer.Expire(connO))
	connO.Exists(dir) // learn of the expiry
	eventually(t, "the observer's client on a new session", func() bool {
		return connO.SessionID() != old && connO.State() == zk.StateHasSession
	})
	noNews(t, "the observer's session expired, the leader stayed", observed)
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, "the vacancy", observed); got.Node != "" {
		t.Fatalf("observed %+v after A resigned, want the zero Leader", got)
	}
	cancel()
	drained(t, "after ctx ended", observed)
}

// Observe's goroutine ends once ctx is done, whether it waits for its
// value to be received, for a watch, or for a request held while the
// connection is cut.
func testObserveEndsWithCtx(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connO, _ := env.Connect(t, 10*time.Second)
	a := recipe.NewElection(connA, dir, []byte("a"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	before := observerGoroutines()
	o := recipe.NewElection(connO, dir, nil)

	// Nobody receives.
	ctx, cancel := observeCtx(t)
	unread := o.Observe(ctx)
	eventually(t, "the observer started", func() bool { return observerGoroutines() == before+1 })
	time.Sleep(100 * time.Millisecond) // it has read the leader and waits to send it
	cancel()
	eventually(t, "the unread observer ended", func() bool { return observerGoroutines() == before })
	drained(t, "unread", unread)

	// Waiting on the leader's node.
	ctx, cancel = observeCtx(t)
	waiting := o.Observe(ctx)
	wantLeader(t, "observed", nextLeader(t, "A", waiting), a, connA, "a")
	cancel()
	eventually(t, "the waiting observer ended", func() bool { return observerGoroutines() == before })
	drained(t, "waiting", waiting)

	// Cut off: its first request waits for the connection to come back.
	if p, ok := env.(zktest.Partitioner); ok {
		zktest.Require(t, p.Partition(connO))
		ctx, cancel = observeCtx(t)
		cut := o.Observe(ctx)
		time.Sleep(100 * time.Millisecond)
		cancel()
		drained(t, "cut off", cut)
		// The request it abandoned ends when the client answers it.
		zktest.Require(t, p.Heal(connO))
		eventually(t, "the cut-off observer ended", func() bool { return observerGoroutines() == before })
	}
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
}

// Closing the Conn closes the observer's channel.
func testObserveEndsWhenConnCloses(t *testing.T, env zktest.Env) {
	dir := env.Base() + "/election"
	connO, _ := env.Connect(t, sessionTimeout)
	before := observerGoroutines()
	ctx, _ := observeCtx(t)
	observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
	if got := nextLeader(t, "the empty seat", observed); got.Node != "" {
		t.Fatalf("observed %+v, want the zero Leader", got)
	}
	connO.Close()
	drained(t, "after Close", observed)
	eventually(t, "the observer ended", func() bool { return observerGoroutines() == before })
}
