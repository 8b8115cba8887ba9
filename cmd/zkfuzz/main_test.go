package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
)

func TestList(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-list"}, &out, &errOut); code != 0 {
		t.Fatalf("-list exited %d: %s", code, errOut.String())
	}
	for _, want := range append([]string{defaultLocker}, mutantNames()...) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-list lacks %s:\n%s", want, out.String())
		}
	}
}

func mutantNames() []string {
	var names []string
	for _, m := range fuzz.Mutants() {
		names = append(names, m.Name)
	}
	return names
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe=nothing"},
		{"-cases=0"},
		{"-clients=9"},
		{"-clients=1"},
		{"-nosuchflag"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%v exited %d, want 2 (%s)", args, code, errOut.String())
		}
		if errOut.Len() == 0 {
			t.Errorf("%v said nothing on stderr", args)
		}
	}
}

// TestBadServers checks that the command refuses a ZK_SERVERS it cannot
// use, rather than running on the fake as if it were unset.
func TestBadServers(t *testing.T) {
	t.Setenv("ZK_SERVERS", "zookeeper.example.com:2181")
	var out, errOut bytes.Buffer
	if code := run([]string{"-cases=1"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "ZK_SERVERS") {
		t.Errorf("exited %d, want 2 naming ZK_SERVERS: %s", code, errOut.String())
	}
}

// TestCampaign builds the command and runs campaigns with it: a program,
// not a test binary, which is what fuzz.Run is for.
func TestCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs campaigns")
	}
	bin := filepath.Join(t.TempDir(), "zkfuzz")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	html := t.TempDir()
	zkfuzz := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		// Fake mode, whatever the environment: the shrunk story is what
		// is checked.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "ZK_SERVERS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &exit):
			return string(out), exit.ExitCode()
		}
		t.Fatalf("running zkfuzz: %v", err)
		return "", -1
	}

	out, code := zkfuzz("-recipe=timed-wait", "-cases=300", "-seed=1", "-html="+html, "-shrinktime=60s", "-nofailfile")
	if code != 1 {
		t.Fatalf("a campaign against timed-wait exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"timed-wait: mutual-exclusion found after", "  1. [+0.000s] ", "porcupine's view of the history: " + html, "replay the campaign: go run ./cmd/zkfuzz -recipe=timed-wait -seed=1 -cases=300", "cases/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	again, _ := zkfuzz("-recipe=timed-wait", "-cases=300", "-seed=1", "-html="+html, "-shrinktime=60s", "-nofailfile", "-quiet")
	if story(again) != story(out) {
		t.Errorf("the same seed told another story:\n%s\n---\n%s", story(out), story(again))
	}

	out, code = zkfuzz("-recipe=sound-for-test", "-cases=10")
	if code != 2 {
		t.Errorf("an unknown locker exited %d, want 2:\n%s", code, out)
	}
}

// story returns the numbered lines of a finding's story.
func story(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "✗") || len(l) > 5 && l[3] == '.' && l[5] == '[' {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
