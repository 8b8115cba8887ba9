package fuzz

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// This file is the leak detector: once every client has stopped, the
// tree holds nothing of theirs and the server no watch.

// node is a znode as Dump shows it.
type node struct {
	path  string
	owner string // the ephemeral owner, "" for a persistent node
}

// tree reads the server's tree from Dump.
func (h *harness) tree() []node {
	var nodes []node
	for _, line := range strings.Split(strings.TrimSpace(h.srv.Dump()), "\n") {
		i := strings.Index(line, " data=")
		if i < 0 {
			continue
		}
		n := node{path: line[:i]}
		if j := strings.Index(line, " owner="); j >= 0 {
			n.owner = line[j+len(" owner="):]
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// leftovers lists the nodes a case may not leave behind: everything but the
// tree a new server holds and the lock's directory with its ancestors.
func (h *harness) leftovers() []node {
	allowed := map[string]bool{"/": true, "/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true}
	for _, p := range ancestry(h.dir) {
		allowed[p] = true
	}
	for _, p := range h.foreign {
		allowed[p] = true
	}
	var left []node
	for _, n := range h.tree() {
		// A Recipe may keep the directories it makes (a semaphore's
		// lock's, beside its own); its ephemeral nodes must all go.
		kept := !h.sub.isLock() && n.owner == "" && strings.HasPrefix(n.path, h.dir+"/")
		if !allowed[n.path] && !kept {
			left = append(left, n)
		}
	}
	return left
}

// describeNodes lists nodes, GUIDs elided, in an order that does not
// depend on the GUIDs: rapid compares the summaries of two runs of a case.
func describeNodes(nodes []node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = StableName(n.path)
		if n.owner != "" {
			parts[i] += " (ephemeral, owner " + n.owner + ")"
		}
	}
	sort.Strings(parts)
	return abbreviated(parts, ", ")
}

// watchedPaths describes where the server holds watches, among the paths
// the case has used.
func (h *harness) watchedPaths() string {
	paths := map[string]bool{h.dir: true}
	for _, n := range h.tree() {
		paths[n.path] = true
	}
	for _, r := range h.srv.Log() {
		if r.Path != "" {
			paths[r.Path] = true
		}
	}
	var list []string
	for p := range paths {
		if n := h.srv.WatchCount(p); n > 0 {
			list = append(list, fmt.Sprintf("%s (%d)", StableName(p), n))
		}
	}
	sort.Strings(list)
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// children returns the nodes under the lock's directory.
func (h *harness) children() []node {
	var out []node
	for _, n := range h.tree() {
		if strings.HasPrefix(n.path, h.dir+"/") {
			out = append(out, n)
		}
	}
	return out
}

// finalChecks runs once every client has stopped: after the sessions of
// crashed processes have expired, the lock's directory must be empty and the
// server must hold no watch; after every client closes its session, nothing
// may remain at all.
func (h *harness) finalChecks() {
	h.tick()
	h.begin("every client has unlocked and stopped; time passes for what runs in the background to settle, and for any session no client holds to expire")
	settle := 2 * h.maxTimeout
	if h.pipe != nil {
		// go-zookeeper dials again a second after a failed round, and
		// starts a new session after an expiry only then.
		settle += 2 * time.Second
	}
	h.background(settle)
	h.probe(true)
	h.checkSettled()
	h.checkFinal()
	h.closeReader()
	if h.finding != nil {
		return
	}
	if left := h.leftovers(); len(left) > 0 {
		h.found(Leak, "once every client had %s, the tree still holds %s", map[bool]string{true: "unlocked", false: "stopped"}[h.sub.isLock()], describeNodes(left))
		return
	}
	// A Recipe's reader may leave the watch it waits on armed when it
	// stops (go-zookeeper v1.0.4 cannot remove a watch), until the node
	// changes or the session closes: only a lock must leave none.
	if n := h.srv.TotalWatches(); n > 0 && h.sub.isLock() {
		h.found(Leak, "once every client had unlocked, the server still holds %d watch%s: %s", n, map[bool]string{true: "", false: "es"}[n == 1], h.watchedPaths())
		return
	}
	h.tick()
	h.begin("every client closes its session")
	for _, s := range h.slots {
		s.inc.conn.Close()
	}
	h.settle()
	h.advance(2 * h.maxTimeout)
	if left := h.leftovers(); len(left) > 0 {
		h.found(Leak, "once every session was closed, the tree still holds %s", describeNodes(left))
		return
	}
	if ids := h.srv.Sessions(); len(ids) > 0 {
		h.found(Leak, "once every client had closed its session, the server still holds %d session(s)", len(ids))
		return
	}
	if n := h.srv.TotalWatches(); n > 0 {
		h.found(Leak, "once every session was closed, the server still holds %d watch(es): %s", n, h.watchedPaths())
	}
}
