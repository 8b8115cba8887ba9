package difftest_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/difftest"
	"github.com/zksim/zksim/zkfake/zktest"
)

// mutantSide is the fake with one planted divergence, for checking that
// the comparer notices and the shrinker finds it.
type mutantSide struct {
	difftest.FakeSide
	wrap    func(zktest.Conn) zktest.Conn
	onEvent func(zk.Event) bool // false drops the event
}

func (m *mutantSide) Connect(onEvent func(zk.Event)) (zktest.Conn, <-chan zk.Event, error) {
	cb := onEvent
	if m.onEvent != nil {
		cb = func(ev zk.Event) {
			if m.onEvent(ev) {
				onEvent(ev)
			}
		}
	}
	c, events, err := m.FakeSide.Connect(cb)
	if err != nil || m.wrap == nil {
		return c, events, err
	}
	return m.wrap(c), events, nil
}

// setVersionOff reports one more than the real version after a Set.
type setVersionOff struct{ zktest.Conn }

func (c setVersionOff) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	st, err := c.Conn.Set(path, data, version)
	if err == nil && st != nil {
		off := *st
		off.Version++
		st = &off
	}
	return st, err
}

// deleteWrapsErrors returns a wrapped error instead of the sentinel.
type deleteWrapsErrors struct{ zktest.Conn }

func (c deleteWrapsErrors) Delete(path string, version int32) error {
	if err := c.Conn.Delete(path, version); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

func TestCheckerFindsPlantedDivergences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutant *mutantSide
		at     difftest.Kind // the call the minimal sequence must end with
	}{
		{"set reports a wrong version", &mutantSide{wrap: func(c zktest.Conn) zktest.Conn { return setVersionOff{c} }}, difftest.Set},
		{"delete wraps its errors", &mutantSide{wrap: func(c zktest.Conn) zktest.Conn { return deleteWrapsErrors{c} }}, difftest.Delete},
		{"NodeDeleted events are lost", &mutantSide{onEvent: func(ev zk.Event) bool { return ev.Type != zk.EventNodeDeleted }}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checker := &difftest.Checker{
				Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) {
					return runFake(t, &difftest.FakeSide{}, seq)
				},
				Fake: func(seq difftest.Sequence) (*difftest.Transcript, error) { return runFake(t, tc.mutant, seq) },
			}
			for seed := uint64(1); seed <= 300; seed++ {
				seq := difftest.Generate(seed, difftest.DefaultConfig())
				res, err := checker.Check(seq)
				if err != nil {
					t.Fatal(err)
				}
				if res.Divergence == nil {
					continue
				}
				d := res.Divergence
				if len(d.Sequence.Ops) > 4 || len(d.Sequence.Ops) >= len(seq.Ops) {
					t.Errorf("%s shrunk from %d to %d ops; want at most 4:\n%s", seq.Name, len(seq.Ops), len(d.Sequence.Ops), d)
				}
				if last := d.Sequence.Ops[d.Step]; tc.at != "" && last.Kind != tc.at && !hasSub(last, tc.at) {
					t.Errorf("divergence at %s; want at a %s:\n%s", last.Line(), tc.at, d)
				}
				if !strings.Contains(d.String(), "  !  ") {
					t.Errorf("report marks no differing line:\n%s", d)
				}
				t.Logf("found in %s, shrunk from %d to %d ops:\n%s", seq.Name, len(seq.Ops), len(d.Sequence.Ops), d)
				return
			}
			t.Fatal("no generated sequence showed the planted divergence")
		})
	}
}

func hasSub(op difftest.Op, k difftest.Kind) bool {
	for _, s := range op.Sub {
		if s.Kind == k {
			return true
		}
	}
	return false
}

var zxidRe = regexp.MustCompile(`z\+([0-9]+)`)

// shiftZxids returns a copy of tr with by added to every zxid offset of at
// least from: what other clients' writes, or a zxid the fake did not use,
// look like.
func shiftZxids(tr *difftest.Transcript, from, by int) *difftest.Transcript {
	out := *tr
	out.Steps = make([]difftest.Step, len(tr.Steps))
	for i, st := range tr.Steps {
		lines := make([]string, len(st.Lines))
		for j, l := range st.Lines {
			lines[j] = zxidRe.ReplaceAllStringFunc(l, func(tok string) string {
				n, _ := strconv.Atoi(tok[2:])
				if n >= from {
					n += by
				}
				return "z+" + strconv.Itoa(n)
			})
		}
		out.Steps[i] = difftest.Step{Lines: lines, Returned: st.Returned}
	}
	return &out
}

// TestCheckerTellsInterferenceFromDivergence feeds the checker reference
// runs whose zxids were shifted: at random places (other clients' writes),
// which must pass; and at the same place every time (a zxid the fake did
// not use), which must be reported.
func TestCheckerTellsInterferenceFromDivergence(t *testing.T) {
	fake := func(seq difftest.Sequence) (*difftest.Transcript, error) {
		return runFake(t, &difftest.FakeSide{}, seq)
	}
	// A sequence whose answers show several zxids.
	var seq difftest.Sequence
	for seed := uint64(1); ; seed++ {
		seq = difftest.Generate(seed, difftest.DefaultConfig())
		tr, err := fake(seq)
		if err != nil {
			t.Fatal(err)
		}
		if len(zxidRe.FindAllString(strings.Join(allLines(tr), "\n"), -1)) >= 12 {
			break
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := &difftest.Checker{Fake: fake, Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) {
		tr, err := fake(seq)
		if err != nil || rng.IntN(4) == 0 {
			return tr, err
		}
		return shiftZxids(tr, 1+rng.IntN(12), 1+rng.IntN(3)), nil
	}}
	res, err := noisy.Check(seq)
	if err != nil || res.Divergence != nil || res.Unverified {
		t.Errorf("random extra zxids: Check = %+v, %v; want agreement", res, err)
	}

	stuck := &difftest.Checker{Fake: fake, Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) {
		tr, err := fake(seq)
		if err != nil {
			return nil, err
		}
		return shiftZxids(tr, 4, 1), nil
	}}
	res, err = stuck.Check(seq)
	if err != nil || res.Divergence == nil {
		t.Fatalf("one extra zxid at the same place: Check = %+v, %v; want a divergence", res, err)
	}
	if !strings.Contains(res.Divergence.Explain(), "only zxids differ") {
		t.Errorf("explanation %q does not say only zxids differ", res.Divergence.Explain())
	}

	// Other clients' writes before a difference in something else: the
	// difference is reported, at its own op.
	last := len(seq.Ops) - 1
	hard := &difftest.Checker{Fake: fake, Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) {
		tr, err := fake(seq)
		if err != nil {
			return nil, err
		}
		tr = shiftZxids(tr, 1+rng.IntN(3), 1+rng.IntN(3))
		end := len(tr.Steps) - 1
		tr.Steps[end].Lines = append(tr.Steps[end].Lines, "s1 event planted")
		return tr, nil
	}}
	res, err = hard.Check(seq)
	if err != nil || res.Divergence == nil || res.Original.Step != last {
		t.Fatalf("shifted zxids, then a planted difference at op %d: Check = %+v, %v; want the planted difference", last+1, res, err)
	}
	if want := "!  s1 event planted"; !strings.Contains(res.Original.String(), want) {
		t.Errorf("report does not show %q:\n%s", want, res.Original)
	}

	// Fewer zxids on the reference than on the fake cannot be other clients.
	fewer := &difftest.Checker{Fake: fake, Reference: func(seq difftest.Sequence) (*difftest.Transcript, error) {
		tr, err := fake(seq)
		if err != nil {
			return nil, err
		}
		return shiftZxids(tr, 4, -1), nil
	}}
	res, err = fewer.Check(seq)
	if err != nil || res.Divergence == nil {
		t.Errorf("one zxid fewer: Check = %+v, %v; want a divergence", res, err)
	}
}

func allLines(tr *difftest.Transcript) []string {
	var out []string
	for _, st := range tr.Steps {
		out = append(out, st.Lines...)
	}
	return out
}

func TestCompareZxids(t *testing.T) {
	// mk makes a transcript of one-line steps.
	mk := func(lines ...string) *difftest.Transcript {
		tr := &difftest.Transcript{}
		for _, l := range lines {
			tr.Steps = append(tr.Steps, difftest.Step{Lines: []string{l}})
		}
		return tr
	}
	for _, tc := range []struct {
		name               string
		want, got          *difftest.Transcript
		only, interference bool
	}{
		{"equal", mk("c=z+1 m=z+3"), mk("c=z+1 m=z+3"), true, true},
		{"shifted in a later step", mk("c=z+1", "m=z+4"), mk("c=z+1", "m=z+3"), true, true},
		{"extra zxids on want", mk("c=z+2 m=z+5"), mk("c=z+1 m=z+3"), true, true},
		{"fewer zxids on want", mk("c=z+1 m=z+2"), mk("c=z+1 m=z+3"), true, false},
		{"order differs", mk("c=z+3 m=z+2"), mk("c=z+1 m=z+3"), true, false},
		{"one zxid maps to two", mk("c=z+2 m=z+2"), mk("c=z+1 m=z+3"), true, false},
		{"other text differs", mk("c=z+1 v=1"), mk("c=z+1 v=2"), false, true},
		{"shifted, then other text differs", mk("c=z+2", "m=z+4 v=1"), mk("c=z+1", "m=z+3 v=2"), false, true},
		{"fewer, then other text differs", mk("c=z+1", "m=z+4 v=1"), mk("c=z+2", "m=z+3 v=2"), false, false},
	} {
		got := difftest.CompareZxids(tc.want, tc.got)
		if got.OnlyZxids != tc.only || got.Interference != tc.interference {
			t.Errorf("%s: CompareZxids = %+v; want only=%t interference=%t", tc.name, got, tc.only, tc.interference)
		}
	}

	// Mapped through the zxids seen before it, the shifted transcript
	// differs from the other only where the text does.
	want := &difftest.Transcript{Steps: []difftest.Step{{Lines: []string{"c=z+2"}}, {Lines: []string{"m=z+4 p=z+9 v=1"}}}}
	got := &difftest.Transcript{Steps: []difftest.Step{{Lines: []string{"c=z+1"}}, {Lines: []string{"m=z+3 p=z+8 v=2"}}}}
	norm := difftest.CompareZxids(want, got).Normalize(want)
	if l := norm.Steps[1].Lines[0]; l != "m=z+3 p=z+8 v=1" {
		t.Errorf("Normalize gives %q; want %q", l, "m=z+3 p=z+8 v=1")
	}
}

func TestOpLinesReadBack(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		seq := difftest.Generate(seed, difftest.DefaultConfig())
		for _, op := range seq.Ops {
			back, err := difftest.ParseLine(op.Line())
			if err != nil {
				t.Fatalf("%s: ParseLine(%q): %v", seq.Name, op.Line(), err)
			}
			if !reflect.DeepEqual(back, op) {
				t.Fatalf("%s: %q reads back as %+v; want %+v", seq.Name, op.Line(), back, op)
			}
		}
	}
	for _, bad := range []string{"", "1 s1", "x s1 get a", "1 t1 get a", "1 s1 frob a", "1 s1 create a acl=nope",
		"1 s1 set a version=x", "1 s1 multi { get a", `1 s1 get "a`, "1 s1 addAuth a:b"} {
		if _, err := difftest.ParseLine(bad); err == nil {
			t.Errorf("ParseLine(%q) = nil error; want one", bad)
		}
	}
}

func TestTranscriptsReadBackAndRepeat(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		seq := difftest.Generate(seed, difftest.DefaultConfig())
		if again := difftest.Generate(seed, difftest.DefaultConfig()); !reflect.DeepEqual(seq, again) {
			t.Fatalf("seed %d generates two different sequences", seed)
		}
		first, err := runFake(t, &difftest.FakeSide{}, seq)
		if err != nil {
			t.Fatal(err)
		}
		second, err := runFake(t, &difftest.FakeSide{}, seq)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Compare("first", first, "second", second); d != nil {
			t.Fatalf("two runs on the fake differ:\n%s", d)
		}
		var buf strings.Builder
		if err := difftest.WriteTranscript(&buf, "a header\nof two lines", first); err != nil {
			t.Fatal(err)
		}
		back, err := difftest.ReadTranscript(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatalf("reading back:\n%s\n%v", buf.String(), err)
		}
		if d := difftest.Compare("written", first, "read", back); d != nil || !reflect.DeepEqual(back.Sequence, seq) {
			t.Fatalf("transcript does not read back:\n%s\n%v", buf.String(), d)
		}
	}
}

// TestReferenceToTheEmptyPath: a path under a reference to an op that
// asked for the empty path is the empty path too, not "/c".
func TestReferenceToTheEmptyPath(t *testing.T) {
	var ops []difftest.Op
	for _, line := range []string{
		`1 s1 create "" data=nil flags=persistent acl=open`,
		`2 s1 set @1/c data=nil version=0`,
	} {
		op, err := difftest.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	tr, err := runFake(t, &difftest.FakeSide{}, difftest.Sequence{Name: "empty-ref", Sessions: 1, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.Steps[1].Lines[0], "-> stat=nil err=ErrInvalidPath"; got != want {
		t.Errorf("set @1/c answered %q; want %q", got, want)
	}
}

func TestRunRefusesWritesOutsideTheBase(t *testing.T) {
	for _, line := range []string{
		"1 s1 delete /elsewhere version=-1",
		"1 s1 create /zookeeper data=nil flags=sequential acl=open",
		"1 s1 multi { create /x data=nil flags=persistent acl=open }",
		"1 s1 set /zookeeper data=nil version=-1",
	} {
		op, err := difftest.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		_, err = runFake(t, &difftest.FakeSide{}, difftest.Sequence{Name: "guard", Sessions: 1, Ops: []difftest.Op{op}})
		if err == nil || !strings.Contains(err.Error(), "outside the base") {
			t.Errorf("%s: Run error = %v; want a refusal", line, err)
		}
	}
}
