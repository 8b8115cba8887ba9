package linearizability_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zksim/zksim/linearizability"
)

func TestWriteReport(t *testing.T) {
	h := recordLock(t, lockScenario{pause: true})
	res := checkMutex(t, h)
	if res.Outcome != linearizability.Illegal {
		t.Fatalf("got %v, want Illegal", res)
	}
	dir := filepath.Join(t.TempDir(), "reports")
	path, err := res.WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "mutex-") || filepath.Ext(path) != ".html" {
		t.Fatalf("report written to %s, want a mutex-*.html file in %s", path, dir)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{
		"<html",
		"paused past the session timeout", // the fault annotation
		"session expiry",
		"write /lock → accepted",                    // how operations are described
		"held by 0x",                                // how states are described
		"mutex: Illegal",                            // the outcome annotation
		`<script id="zksim-scroll-to-illegal">`,     // opens at the illegal point
		"linearization-invalid linearization-point", // the class it looks for, as porcupine marks the point
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report does not contain %q", want)
		}
	}
	if hook, end := strings.Index(html, "zksim-scroll-to-illegal"), strings.LastIndex(html, "</body>"); hook < 0 || end < hook {
		t.Errorf("the script that scrolls to the illegal point is not in the page's body")
	}
}

func TestWriteReportDefaultDirectory(t *testing.T) {
	h := new(builder).op(0, 0, 10, zop(linearizability.Get, 1, "/x"), zout{Data: "never written"})
	res := checkZnodes(t, h.h)
	path, err := res.WriteReport("")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	if filepath.Dir(path) != linearizability.DefaultReportDir() {
		t.Fatalf("report written to %s, want it in %s", path, linearizability.DefaultReportDir())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `get /x → \"never written\"`) {
		t.Errorf("report does not show the read")
	}
}

func TestWriteReportNeedsACheck(t *testing.T) {
	if _, err := (linearizability.Result{}).WriteReport(t.TempDir()); err == nil {
		t.Fatal("WriteReport of a zero Result succeeded")
	}
}

// A finding that names a call marks it: the report gets a row of its own
// spanning that call, with the finding's words, and opens scrolled to it.
func TestWriteReportMarksTheNamedCall(t *testing.T) {
	h := recordLock(t, lockScenario{pause: true})
	res := checkMutex(t, h)
	named := h.Operations[len(h.Operations)-1]
	path, err := res.Mark(named, "the words of the finding").WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	for _, want := range []string{
		`"Tag":"finding"`,
		`"Description":"✗ the call the finding names"`,
		`"Details":"the words of the finding"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the marked report does not contain %s", want)
		}
	}
	unmarked, err := res.WriteReport(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(unmarked); strings.Contains(string(data), `"Tag":"finding"`) {
		t.Error("a report of an unmarked result has a finding's row")
	}
}
