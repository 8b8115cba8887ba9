package zkfake

import (
	"cmp"
	"slices"
	"strings"
)

// ZooKeeper leaves several orders to a Java hash set: a listing, the
// ephemerals an ended session deletes, the watches a reconnecting client
// re-arms. The fake keeps each one fixed, so that a seeded scenario
// replays; but client libraries name nodes with GUIDs drawn from
// crypto/rand (protected creates, kazoo's lock and lease nodes), so an
// order by name would change from run to run. Where the nodes are at hand
// the fake goes by the order they were made (czxid); where only paths are
// (watches, whose nodes may be gone), by byPathBlindToGUIDs.

// sortByCreation puts paths of nodes of t in the order the nodes were
// made; a multi's nodes, which share a zxid, go by byPathBlindToGUIDs.
func sortByCreation(t *tree, paths []string) {
	slices.SortFunc(paths, func(a, b string) int {
		return byCreationThenPath(t.get(a).czxid, t.get(b).czxid, a, b)
	})
}

// byCreationThenPath compares two nodes by the zxids that made them, and
// those of one multi by byPathBlindToGUIDs. (Not cmp.Or, which would
// compare the paths, at a cost, for every pair.)
func byCreationThenPath(czxidA, czxidB int64, a, b string) int {
	if c := cmp.Compare(czxidA, czxidB); c != 0 {
		return c
	}
	return byPathBlindToGUIDs(a, b)
}

// byPathBlindToGUIDs compares two paths as if each GUID in them (a run of
// 32 hex digits that fills a name, or the protected prefix's "_c_<32
// hex>-") were the same, and only then as they are: two nodes whose names
// differ beyond their GUIDs (a sequence number) keep one order whatever
// GUIDs the client drew.
func byPathBlindToGUIDs(a, b string) int {
	if c := strings.Compare(blindToGUIDs(a), blindToGUIDs(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// blindToGUIDs replaces each GUID in path with "…".
func blindToGUIDs(path string) string {
	var b strings.Builder
	done := 0 // path[:done] is in b already
	for i := 0; i+guidLen <= len(path); {
		atStart := i == 0 || path[i-1] == '/' || strings.HasSuffix(path[:i], protectedPrefix)
		end := i + guidLen
		if atStart && isHexRun(path[i:end]) && (end == len(path) || !isHexDigit(path[end])) {
			b.WriteString(path[done:i])
			b.WriteString("…")
			i, done = end, end
			continue
		}
		i++
	}
	if done == 0 {
		return path
	}
	b.WriteString(path[done:])
	return b.String()
}

// guidLen is how many hex digits a GUID has, written without dashes.
const guidLen = 32

func isHexRun(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
