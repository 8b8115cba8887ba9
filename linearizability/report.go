package linearizability

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
)

// DefaultReportDir is where reports go when the caller names no directory.
func DefaultReportDir() string {
	return filepath.Join(os.TempDir(), "zksim-linearizability")
}

// faultColors tells the faults apart in reports.
var faultColors = map[FaultKind]string{
	FaultCrash:     "#ff9191",
	FaultExpiry:    "#ffc891",
	FaultPartition: "#efaefc",
	FaultLostReply: "#91c8ff",
}

// WriteReport writes porcupine's HTML visualization of the checked history
// to a new file in dir (created if needed; [DefaultReportDir] when dir is
// empty) and returns the file's path. The report shows each client's
// operations on a timeline, the injected faults on their clients' rows (or
// on a row of their own), and the longest linearizations the checker found:
// for an illegal history, where each of them gets stuck.
//
// The check is run again, with the same timeout, to collect what the
// visualization needs.
func (r Result) WriteReport(dir string) (string, error) {
	if r.model.Init == nil {
		return "", errors.New("linearizability: WriteReport needs the Result of a check")
	}
	if dir == "" {
		dir = DefaultReportDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_, info := porcupine.CheckOperationsVerbose(r.model, r.ops, r.timeout)
	info.AddAnnotations(r.annotations())
	f, err := os.CreateTemp(dir, r.name+"-*.html")
	if err != nil {
		return "", err
	}
	var page bytes.Buffer
	if err := porcupine.Visualize(r.model, info, &page); err != nil {
		f.Close()
		return "", err
	}
	if _, err := f.Write(withScrollToIllegal(page.Bytes())); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// mark is an operation a finding names (Result.Mark).
type mark struct {
	op   Operation
	note string
}

// markLabel labels the marked operation's row in a report; the page's
// script finds it by this text.
const markLabel = "✗ the call the finding names"

// Mark returns r with op, an operation of the checked history, marked in
// its report: a row of its own ("finding") spans the operation, labelled
// so, with note (the finding's summary) shown when it is clicked, and the
// page opens scrolled to it rather than to porcupine's first illegal
// point. A finding that names one call marks it, so that its summary and
// its report point at the same call: porcupine marks every call that
// could not come next, which may be a neighbour of the one the summary
// names.
func (r Result) Mark(op Operation, note string) Result {
	r.mark = &mark{op: op, note: note}
	return r
}

// scrollToIllegal is the script a report runs once loaded: it scrolls the
// page to the call the finding names (Result.Mark), or else to the first
// point porcupine marks as an illegal linearization point (the leftmost
// one of the longest partial linearizations, which porcupine shows at
// first), as its "jump to first error" link does, but without selecting
// it. A legal history has none, and the page stays where it opens.
const scrollToIllegal = `<script id="zksim-scroll-to-illegal">
window.addEventListener('load', function () {
  var marked = Array.prototype.filter.call(document.querySelectorAll('svg text'),
    function (t) { return t.textContent === '` + markLabel + `' })
  if (marked.length > 0) {
    marked[0].scrollIntoView({inline: 'center', block: 'center'})
    return
  }
  var points = Array.prototype.filter.call(
    document.querySelectorAll('line.linearization-invalid.linearization-point'),
    function (p) { return !p.parentElement.classList.contains('hidden') })
  if (points.length === 0) {
    return
  }
  points.sort(function (a, b) { return a.x1.baseVal.value - b.x1.baseVal.value })
  points[0].scrollIntoView({inline: 'center', block: 'center'})
})
</script>
`

// withScrollToIllegal puts scrollToIllegal at the end of the page's body.
func withScrollToIllegal(page []byte) []byte {
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		return append(page, scrollToIllegal...)
	}
	out := make([]byte, 0, len(page)+len(scrollToIllegal))
	out = append(out, page[:i]...)
	out = append(out, scrollToIllegal...)
	return append(out, page[i:]...)
}

// annotations turns the faults into report annotations, and adds one
// spanning the history that states the outcome.
func (r Result) annotations() []porcupine.Annotation {
	var annotations []porcupine.Annotation
	first, last := int64(0), int64(0)
	for i, op := range r.ops {
		if i == 0 || op.Call < first {
			first = op.Call
		}
		if op.Return != Never && op.Return > last {
			last = op.Return
		}
	}
	for _, f := range r.faults {
		a := porcupine.Annotation{
			ClientId:        f.ClientID,
			Start:           f.Start,
			End:             f.End,
			Description:     string(f.Kind),
			Details:         f.Detail,
			BackgroundColor: faultColors[f.Kind],
		}
		if f.ClientID < 0 {
			a.ClientId, a.Tag = 0, "faults"
		}
		annotations = append(annotations, a)
		last = max(last, f.End)
	}
	if m := r.mark; m != nil {
		end := m.op.Return
		if end == Never {
			end = max(last, m.op.Call)
		}
		annotations = append(annotations, porcupine.Annotation{
			Tag:             "finding",
			Start:           m.op.Call,
			End:             end,
			Description:     markLabel,
			Details:         m.note,
			BackgroundColor: "#ff6b6b",
		})
	}
	annotations = append(annotations, porcupine.Annotation{
		Tag:         "checker",
		Start:       first,
		End:         max(first, last),
		Description: fmt.Sprintf("%s: %s", r.name, r.Outcome),
		Details:     r.String(),
	})
	return annotations
}

// String summarizes the result.
func (r Result) String() string {
	return fmt.Sprintf("%s (%d operations, %d with unknown outcome)", r.Outcome, r.Operations, r.UnknownOperations)
}

// describeMetadata shows an operation's tag in reports.
func describeMetadata(metadata any) string {
	if tag, ok := metadata.(string); ok {
		return "tag " + tag
	}
	return ""
}
