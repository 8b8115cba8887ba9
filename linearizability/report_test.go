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
