// Command zkrecord records a real ZooKeeper's answers to generated op
// sequences into the differential corpus (testdata/diff), which the fake
// replays on every `make test` (see package zkfake/difftest).
//
// Usage:
//
//	zkrecord -servers 127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183 [-n 400] [-seed 1] [-out testdata/diff] [-replace=false]
//
// Each sequence is run until three runs in a row answer identically, so
// that other clients' writes on a shared server (which shift zxids) do not
// end up in the corpus. The old seed-*.txt files in the output directory
// are removed first unless -replace=false. `make record` runs it against
// the project's 3-node ensemble.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zksim/zksim/zkfake/difftest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

func main() {
	servers := flag.String("servers", os.Getenv("ZK_SERVERS"), "comma-separated host:port list (loopback only); default $ZK_SERVERS")
	n := flag.Int("n", 400, "how many sequences to record")
	seed := flag.Uint64("seed", 1, "seed of the first sequence; the others follow")
	out := flag.String("out", "testdata/diff", "directory of the corpus")
	replace := flag.Bool("replace", true, "remove the corpus's other seed-*.txt files first; -replace=false records the given seeds only")
	flag.Parse()
	list, err := ensemble.ParseServers(*servers)
	if err == nil {
		err = record(list, *n, *seed, *out, *replace)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkrecord:", err)
		os.Exit(1)
	}
}

func record(servers []string, n int, first uint64, out string, replace bool) error {
	if len(servers) == 0 {
		return fmt.Errorf("no servers: set -servers or ZK_SERVERS")
	}
	real, err := difftest.NewRealSide(servers)
	if err != nil {
		return err
	}
	defer real.Close()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if replace {
		old, err := filepath.Glob(filepath.Join(out, "seed-*.txt"))
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	header := fmt.Sprintf(`ZooKeeper's answers to one generated op sequence, recorded by cmd/zkrecord
(make record) from a %d-server ZooKeeper %s on loopback, with go-zookeeper v1.0.4.
Replayed on the fake by zkfake/difftest's TestReplayCorpus; the format is
described in that package's documentation.`, len(servers), serverVersion(servers[0]))
	start := time.Now()
	for i := range uint64(n) {
		seq := difftest.Generate(first+i, difftest.DefaultConfig())
		tr, err := stableRun(real, seq)
		if err != nil {
			return fmt.Errorf("%s: %v", seq.Name, err)
		}
		var buf bytes.Buffer
		if err := difftest.WriteTranscript(&buf, header, tr); err != nil {
			return err
		}
		name := filepath.Join(out, fmt.Sprintf("seed-%04d.txt", first+i))
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("recorded %d sequences into %s in %v\n", n, out, time.Since(start).Round(time.Millisecond))
	return nil
}

// stableRun runs seq until three runs in a row give the same transcript.
// Other clients' writes shift zxids; they come in bursts (a test suite
// running) or at a steady pace that a run's own rhythm can fall in step
// with, so runs are spaced by a random pause, which grows after each
// mismatch.
func stableRun(side difftest.Side, seq difftest.Sequence) (*difftest.Transcript, error) {
	const attempts, same = 60, 3
	var prev *difftest.Transcript
	var lastErr error
	streak := 0
	pause := 20 * time.Millisecond
	for range attempts {
		tr, err := difftest.Run(side, seq)
		switch {
		case err != nil:
			lastErr, prev, streak = err, nil, 0
		case prev != nil && difftest.Compare("first", prev, "next", tr) == nil:
			if streak++; streak == same {
				return tr, nil
			}
		default:
			prev, streak = tr, 1
		}
		if streak <= 1 {
			pause = min(2*pause, 2*time.Second)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(pause))))
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, fmt.Errorf("no %d runs in a row answered the same in %d runs: the server is too busy", same, attempts)
}

// serverVersion asks the server with the "srvr" four-letter command, and
// returns "" if it does not answer it.
func serverVersion(server string) string {
	conn, err := net.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Zookeeper version: "); ok {
			// "3.8.0-11+deb12u2-..., built on ..."
			v, _, _ = strings.Cut(v, ",")
			v, _, _ = strings.Cut(v, " built on")
			// Debian's build leaves its git placeholder in: "3.8.0-${mvngit.commit.id}".
			v, _, _ = strings.Cut(v, "-${")
			return "(" + strings.TrimSpace(v) + ")"
		}
	}
	return ""
}
