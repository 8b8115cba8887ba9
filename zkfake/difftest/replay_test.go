package difftest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/difftest"
)

// corpusDir holds ZooKeeper's recorded answers (make record).
const corpusDir = "../../testdata/diff"

func readCorpus(t *testing.T) ([]string, map[string]*difftest.Transcript) {
	t.Helper()
	corpus, files, err := difftest.ReadCorpus(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 200 {
		t.Fatalf("%s holds %d sequences; want a few hundred (make record)", corpusDir, len(files))
	}
	return files, corpus
}

// TestReplayCorpus runs every recorded sequence on the fake and compares
// its answers with ZooKeeper's, zxids included: the recorder kept only
// answers that two runs in a row agreed on, so no other client's writes are
// in them.
func TestReplayCorpus(t *testing.T) {
	replayCorpus(t)
}

// TestReplayCorpusShuffledChildren replays the corpus on a fake that lists
// children in a seeded order, as ZooKeeper lists them in an order of its
// own: the transcripts compare listings as sets.
func TestReplayCorpusShuffledChildren(t *testing.T) {
	replayCorpus(t, zkfake.WithShuffledChildren())
}

func replayCorpus(t *testing.T, opts ...zkfake.Option) {
	files, corpus := readCorpus(t)
	known := map[string]int{}
	for _, f := range files {
		recorded := corpus[f]
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			side := &difftest.FakeSide{Options: append(difftest.FakeOptions(recorded.Quorum, recorded.SASLScheme), opts...)}
			fake, err := runFake(t, side, recorded.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			d := difftest.Compare("recorded", recorded, "fake", fake)
			if d == nil {
				return
			}
			if desc := knownDivergence(d); desc != "" {
				known[desc]++
				return
			}
			t.Errorf("%s:\n%s", f, d)
		})
	}
	for desc, n := range known {
		t.Logf("%d sequences stop at a known divergence: %s", n, desc)
	}
}

// TestCorpusCoverage checks that the recorded corpus exercises every call,
// every multi sub-operation, the errors ZooKeeper and go-zookeeper give and
// every kind of watch event, so that replaying it means something.
func TestCorpusCoverage(t *testing.T) {
	files, corpus := readCorpus(t)
	kinds := map[difftest.Kind]int{}
	var answers strings.Builder
	for _, f := range files {
		tr := corpus[f]
		for i, op := range tr.Sequence.Ops {
			kinds[op.Kind]++
			for _, s := range op.Sub {
				kinds["multi:"+s.Kind]++
			}
			for _, l := range tr.Steps[i].Lines {
				answers.WriteString(l + "\n")
			}
		}
	}
	for _, k := range append(difftest.Kinds(), "multi:create", "multi:delete", "multi:set", "multi:check") {
		if kinds[k] == 0 {
			t.Errorf("no %s in the corpus", k)
		}
	}
	text := answers.String()
	for _, want := range []string{
		"err=ErrNoNode", "err=ErrNodeExists", "err=ErrBadVersion", "err=ErrNotEmpty",
		"err=ErrNoChildrenForEphemerals", "err=ErrNoAuth", "err=ErrInvalidACL", "err=ErrBadArguments",
		"err=ErrInvalidPath", "err=ErrConnectionClosed", "~ErrInvalidFlags", `"invalid flag value: [7]"`,
		`"unknown error: -2"`, "err=ErrClosing",
		"EventNodeCreated", "EventNodeDeleted", "EventNodeDataChanged", "EventNodeChildrenChanged",
		"EventNotWatching", "StateDisconnected", "eph=s1", "_c_GUID-", "path=a/0000000",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in the corpus's answers", want)
		}
	}
}
