package difftest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Divergence is the first place where two transcripts of one sequence
// differ.
type Divergence struct {
	Sequence Sequence
	// Step is the index in Sequence.Ops of the op whose observations
	// differ, or len(Sequence.Ops) when only the final checks differ.
	Step int
	// WantName and GotName name the sides: "real" or "recorded", "fake".
	WantName, GotName string
	// Want and Got are the full transcripts.
	Want, Got *Transcript
}

// Compare returns the first divergence of got from want, or nil if their
// observations are the same line for line. Both must be transcripts of the
// same sequence.
func Compare(wantName string, want *Transcript, gotName string, got *Transcript) *Divergence {
	d := &Divergence{Sequence: want.Sequence, WantName: wantName, GotName: gotName, Want: want, Got: got}
	for i := range want.Steps {
		if i >= len(got.Steps) || !equalLines(want.Steps[i].Lines, got.Steps[i].Lines) {
			d.Step = i
			return d
		}
	}
	if len(got.Steps) > len(want.Steps) || !equalLines(want.Checks, got.Checks) {
		d.Step = len(want.Steps)
		return d
	}
	return nil
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var zxidToken = regexp.MustCompile(`z[+-][0-9]+`)

// ZxidShift describes how two transcripts of a sequence differ in their
// zxids, up to the first op whose answers differ in something else.
type ZxidShift struct {
	// OnlyZxids is true when the transcripts are equal once every zxid is
	// blanked out.
	OnlyZxids bool
	// Interference is true when the zxid differences (up to the first other
	// difference) could come from other clients' writes on want's server
	// during the run: the zxids map one to one in the same order, and no
	// gap between two of want's zxids is smaller than the gap between the
	// corresponding zxids of got.
	Interference bool
	// Extra holds, for each gap between two consecutive zxids of got (keyed
	// by that pair), how many more zxids want has in it. Other clients'
	// writes land in different gaps on each run; a zxid the fake fails to
	// use shows in the same gap every time.
	Extra map[[2]int64]int64

	toGot map[int64]int64 // want's zxid offsets → got's
}

// CompareZxids tells whether want and got differ only in their zxids, and
// whether the difference could be interference (see ZxidShift).
func CompareZxids(want, got *Transcript) ZxidShift {
	blank := func(l string) string { return zxidToken.ReplaceAllString(l, "z") }
	// The steps, then the checks, up to the first that differs in more
	// than zxids.
	wantParts, gotParts := parts(want), parts(got)
	res := ZxidShift{OnlyZxids: len(wantParts) == len(gotParts), Interference: true, Extra: map[[2]int64]int64{}}
	// Offsets count from the base's creation, offset 0 on both sides.
	toGot, toWant := map[int64]int64{0: 0}, map[int64]int64{0: 0}
	for i := 0; i < min(len(wantParts), len(gotParts)); i++ {
		wl, gl := wantParts[i], gotParts[i]
		same := len(wl) == len(gl)
		for j := 0; same && j < len(wl); j++ {
			same = blank(wl[j]) == blank(gl[j])
		}
		if !same {
			res.OnlyZxids = false
			break
		}
		for j := range wl {
			wt, gt := zxidToken.FindAllString(wl[j], -1), zxidToken.FindAllString(gl[j], -1)
			for k := range wt {
				wz, _ := strconv.ParseInt(wt[k][1:], 10, 64)
				gz, _ := strconv.ParseInt(gt[k][1:], 10, 64)
				if g, ok := toGot[wz]; ok && g != gz {
					res.Interference = false
				}
				if w, ok := toWant[gz]; ok && w != wz {
					res.Interference = false
				}
				toGot[wz], toWant[gz] = gz, wz
			}
		}
	}
	gots := make([]int64, 0, len(toWant))
	for g := range toWant {
		gots = append(gots, g)
	}
	sort.Slice(gots, func(i, j int) bool { return gots[i] < gots[j] })
	for i := 1; i < len(gots); i++ {
		g0, g1 := gots[i-1], gots[i]
		extra := (toWant[g1] - toWant[g0]) - (g1 - g0)
		if extra < 0 || toWant[g1] <= toWant[g0] {
			res.Interference = false
		}
		res.Extra[[2]int64{g0, g1}] = extra
	}
	res.toGot = toGot
	return res
}

// Normalize rewrites the zxids of want (the transcript CompareZxids was
// given as want) as got's: those seen in both through the mapping, later
// ones shifted as the last mapped zxid before them. Comparing the result
// with got then shows the first difference that is not in zxids alone.
func (s ZxidShift) Normalize(want *Transcript) *Transcript {
	mapped := make([]int64, 0, len(s.toGot))
	for w := range s.toGot {
		mapped = append(mapped, w)
	}
	sort.Slice(mapped, func(i, j int) bool { return mapped[i] < mapped[j] })
	rewrite := func(l string) string {
		return zxidToken.ReplaceAllStringFunc(l, func(tok string) string {
			w, _ := strconv.ParseInt(tok[1:], 10, 64)
			g, ok := s.toGot[w]
			if !ok {
				// The last mapped zxid below w (offset 0 is always mapped).
				i := sort.Search(len(mapped), func(i int) bool { return mapped[i] > w }) - 1
				if i < 0 {
					return tok
				}
				g = s.toGot[mapped[i]] + w - mapped[i]
			}
			return fmt.Sprintf("z%+d", g)
		})
	}
	out := &Transcript{Sequence: want.Sequence, Steps: make([]Step, len(want.Steps))}
	for i, st := range want.Steps {
		lines := make([]string, len(st.Lines))
		for j, l := range st.Lines {
			lines[j] = rewrite(l)
		}
		out.Steps[i] = Step{Lines: lines, Returned: st.Returned}
	}
	for _, c := range want.Checks {
		out.Checks = append(out.Checks, rewrite(c))
	}
	return out
}

// parts splits a transcript into its steps' lines and, last, its checks.
func parts(t *Transcript) [][]string {
	out := make([][]string, 0, len(t.Steps)+1)
	for _, st := range t.Steps {
		out = append(out, st.Lines)
	}
	return append(out, t.Checks)
}

func allLines(t *Transcript) []string {
	var out []string
	for _, st := range t.Steps {
		out = append(out, st.Lines...)
	}
	return append(out, t.Checks...)
}

// Explain says in a sentence what kind of difference the divergence is.
func (d *Divergence) Explain() string {
	want, got := d.lines(d.Want), d.lines(d.Got)
	if len(want) == len(got) {
		onlyZxids := true
		for i := range want {
			if zxidToken.ReplaceAllString(want[i], "z") != zxidToken.ReplaceAllString(got[i], "z") {
				onlyZxids = false
			}
		}
		if onlyZxids {
			return "only zxids differ: the two servers used a different number of zxids before this op " +
				"(each write, failed or not, each multi, session creation and close takes exactly one)"
		}
	}
	if d.Step == len(d.Sequence.Ops) {
		return "the time checks differ: a side's ctime/mtime do not follow its zxids"
	}
	return "the answers or events differ"
}

func (d *Divergence) lines(t *Transcript) []string {
	if d.Step == len(d.Sequence.Ops) {
		return t.Checks
	}
	if d.Step < len(t.Steps) {
		return t.Steps[d.Step].Lines
	}
	return nil
}

// String renders the divergence readably: the sequence with the agreed
// observations up to the op where the sides part, then both sides' lines
// for that op.
func (d *Divergence) String() string {
	var b strings.Builder
	where := "in the final checks"
	if d.Step < len(d.Sequence.Ops) {
		where = fmt.Sprintf("at op %d", d.Sequence.Ops[d.Step].Label)
	}
	fmt.Fprintf(&b, "%s diverges from %s %s of %s: %s\n", d.GotName, d.WantName, where, d.Sequence.Name, d.Explain())
	fmt.Fprintf(&b, "sessions %d\n", d.Sequence.Sessions)
	for i, op := range d.Sequence.Ops {
		if i > d.Step {
			fmt.Fprintf(&b, "%s   (not compared)\n", op.Line())
			continue
		}
		b.WriteString(op.Line() + "\n")
		if i < d.Step {
			for _, l := range d.Want.Steps[i].Lines {
				b.WriteString("  " + l + "\n")
			}
		}
		if i == d.Step {
			d.writeBoth(&b)
		}
	}
	if d.Step == len(d.Sequence.Ops) {
		d.writeBoth(&b)
	}
	return b.String()
}

func (d *Divergence) writeBoth(b *strings.Builder) {
	want, got := d.lines(d.Want), d.lines(d.Got)
	fmt.Fprintf(b, "  %s:\n", d.WantName)
	for i, l := range want {
		mark := " "
		if i >= len(got) || got[i] != l {
			mark = "!"
		}
		fmt.Fprintf(b, "  %s  %s\n", mark, l)
	}
	fmt.Fprintf(b, "  %s:\n", d.GotName)
	for i, l := range got {
		mark := " "
		if i >= len(want) || want[i] != l {
			mark = "!"
		}
		fmt.Fprintf(b, "  %s  %s\n", mark, l)
	}
}
