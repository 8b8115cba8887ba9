package difftest

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Distribution counts what sequences draw, class by class, so that a run
// can show what it tried: each call (and each call inside a multi), each
// kind of path, each ACL of the palette, each auth scheme, each size of
// data, each size of multi, and the sessions per sequence. Add sequences,
// then print it.
type Distribution struct {
	counts    map[string]int
	sequences int
	ops       int
}

// Add counts seq's ops.
func (d *Distribution) Add(seq Sequence) {
	if d.counts == nil {
		d.counts = map[string]int{}
	}
	d.sequences++
	d.counts[fmt.Sprintf("sessions: %d", seq.Sessions)]++
	for _, op := range seq.Ops {
		d.addOp(op, "")
	}
}

func (d *Distribution) addOp(op Op, in string) {
	d.ops++
	d.counts["call: "+in+string(op.Kind)]++
	if op.Kind != Multi && op.Kind != AddAuth && op.Kind != Close {
		d.counts["path: "+PathClass(op.Path)]++
	}
	if op.ACL != "" {
		d.counts["acl: "+op.ACL]++
	}
	if op.Kind == AddAuth {
		scheme := op.Scheme
		if scheme == "" {
			scheme = "digest"
		}
		d.counts["auth: "+scheme]++
	}
	if op.Data != nil || op.Kind == Set || isCreate(op.Kind) {
		d.counts["data: "+dataClass(op.Data)]++
	}
	if op.Kind == Multi {
		d.counts[fmt.Sprintf("multi: %d ops", len(op.Sub))]++
		for _, sub := range op.Sub {
			d.addOp(sub, "in a multi: ")
		}
	}
}

// PathClass names the kind of path an op's Path is: the base and its
// small tree, a node an earlier create made, a name beyond ASCII that the
// server takes, a name the server refuses though the client sends it, a
// path the client refuses, ZooKeeper's own nodes, or the ensemble's
// configuration node among them (/zookeeper/config and below).
func PathClass(p string) string {
	switch {
	case p == ".":
		return "the base and its small tree"
	case p == "" || clientRefuses(p):
		return "refused by the client"
	case p == "/zookeeper/config" || strings.HasPrefix(p, "/zookeeper/config/"):
		return "ZooKeeper's configuration node"
	case p == "/" || strings.HasPrefix(p, "/zookeeper"):
		return "ZooKeeper's own nodes"
	case strings.HasPrefix(p, "@"):
		return "a node an earlier create made"
	case serverRefuses(p):
		return "refused by the server, sent by the client"
	case utf8.RuneCountInString(p) != len(p) || strings.ContainsAny(p, " "):
		return "names beyond ASCII, and spaces"
	}
	return "the base and its small tree"
}

// clientRefuses reports the relative paths the generator draws that
// go-zookeeper refuses: an empty, "." or ".." segment, a control
// character, or a trailing '/' (which only a sequential create may have;
// the generator draws one for a plain op).
func clientRefuses(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return strings.Contains(p, "//") || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 }) ||
		(strings.HasSuffix(p, "/") && !strings.HasPrefix(p, "@"))
}

// serverRefuses reports a character ZooKeeper's PathUtils.validatePath
// refuses and go-zookeeper sends: U+E000 to U+EFFF, U+FFFF, and any
// character outside the Basic Multilingual Plane.
func serverRefuses(p string) bool {
	return strings.ContainsFunc(p, func(r rune) bool { return r >= 0xe000 && r < 0xf000 || r >= 0xffff })
}

// dataClass names the size of an op's data, by the limits that matter:
// none, empty, small, large, and at or past the server's 1 MB buffer.
func dataClass(data []byte) string {
	switch {
	case data == nil:
		return "none"
	case len(data) == 0:
		return "empty"
	case len(data) < 1000:
		return "under 1 kB"
	case len(data) < 1_047_000:
		return "1 kB to 1 MB"
	}
	return "at or past jute.maxbuffer (1 MB)"
}

// Count returns how often class was drawn ("path: refused by the server,
// sent by the client").
func (d *Distribution) Count(class string) int { return d.counts[class] }

// String renders the distribution, a class a line with its count and
// its share of the ops (of the sequences, for sessions), grouped by what
// it counts.
func (d *Distribution) String() string {
	classes := make([]string, 0, len(d.counts))
	for c := range d.counts {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	var b strings.Builder
	fmt.Fprintf(&b, "%d sequences, %d ops (multis' own ops included)\n", d.sequences, d.ops)
	for _, c := range classes {
		of := d.ops
		if strings.HasPrefix(c, "sessions: ") {
			of = d.sequences
		}
		fmt.Fprintf(&b, "  %-58s %7d  %5.1f%%\n", c, d.counts[c], 100*float64(d.counts[c])/float64(max(of, 1)))
	}
	return b.String()
}
