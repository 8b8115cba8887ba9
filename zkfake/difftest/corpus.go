package difftest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zksim/zksim/zkfake"
)

// WriteTranscript writes a transcript in the corpus format: comment lines
// from header, then "sequence <name>", "sessions <n>", for an ensemble
// "quorum server.ID=..." per server its /zookeeper/config lists
// (Transcript.Quorum), "scheme sasl" for servers with that ACL scheme
// (Transcript.SASLScheme), and per op its line followed by its observations
// indented by two spaces; the side's failed checks, if any, come last as
// "check: ..." lines.
func WriteTranscript(w io.Writer, header string, t *Transcript) error {
	bw := bufio.NewWriter(w)
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(bw, "# %s\n", l)
		}
	}
	fmt.Fprintf(bw, "sequence %s\nsessions %d\n", t.Sequence.Name, t.Sequence.Sessions)
	for _, q := range t.Quorum {
		fmt.Fprintf(bw, "quorum server.%d=%s\n", q.ID, q)
	}
	if t.SASLScheme {
		fmt.Fprintln(bw, "scheme sasl")
	}
	for i, op := range t.Sequence.Ops {
		fmt.Fprintln(bw, op.Line())
		for _, l := range t.Steps[i].Lines {
			fmt.Fprintf(bw, "  %s\n", l)
		}
	}
	for _, c := range t.Checks {
		fmt.Fprintln(bw, c)
	}
	return bw.Flush()
}

// ReadTranscript reads what WriteTranscript writes.
func ReadTranscript(r io.Reader) (*Transcript, error) {
	t := &Transcript{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, args ...any) (*Transcript, error) {
			return nil, fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "  "):
			if len(t.Steps) == 0 {
				return fail("an observation before the first op")
			}
			last := &t.Steps[len(t.Steps)-1]
			last.Lines = append(last.Lines, line[2:])
		case strings.HasPrefix(line, "sequence "):
			t.Sequence.Name = strings.TrimPrefix(line, "sequence ")
		case strings.HasPrefix(line, "sessions "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "sessions "))
			if err != nil || n < 1 {
				return fail("bad session count %q", line)
			}
			t.Sequence.Sessions = n
		case strings.HasPrefix(line, "check: "):
			t.Checks = append(t.Checks, line)
		case line == "scheme sasl":
			t.SASLScheme = true
		case strings.HasPrefix(line, "quorum "):
			// The lines of a configuration that lists servers, so
			// standalone or not, it is an ensemble's.
			q, err := zkfake.ParseZooCfg("standaloneEnabled=false\n" + strings.TrimPrefix(line, "quorum "))
			if err != nil || len(q) != 1 {
				return fail("bad quorum line %q: %v", line, err)
			}
			t.Quorum = append(t.Quorum, q[0])
		default:
			op, err := ParseLine(line)
			if err != nil {
				return fail("%v", err)
			}
			if op.Session > t.Sequence.Sessions {
				return fail("op on s%d in a sequence of %d sessions", op.Session, t.Sequence.Sessions)
			}
			t.Sequence.Ops = append(t.Sequence.Ops, op)
			t.Steps = append(t.Steps, Step{})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.Sequence.Name == "" || t.Sequence.Sessions == 0 {
		return nil, fmt.Errorf("missing the sequence or sessions line")
	}
	return t, nil
}

// ReadCorpus reads every *.txt transcript in dir, in name order.
func ReadCorpus(dir string) (map[string]*Transcript, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	out := map[string]*Transcript{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, nil, err
		}
		t, err := ReadTranscript(fh)
		fh.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", f, err)
		}
		out[f] = t
	}
	return out, files, nil
}
