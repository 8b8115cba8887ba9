package targets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// CURATOR-391: Curator's PathChildrenCache (curator-recipes,
// cache/PathChildrenCache.java, Curator 2.11.1, before the merge of
// 26720494 in 4.0.0), ported for its NORMAL start with data cached: the
// refresh, the data and children watchers, the operations' executor and
// applyNewData.

func curator391() KnownBug {
	return KnownBug{
		Name:   "CURATOR-391",
		Title:  "PathChildrenCache missing events upon reconnection",
		Recipe: "PathChildrenCache, Curator's cache of a directory's children (curator-recipes 2.11.1)",
		Mechanism: "PathChildrenCache tells its listeners CHILD_UPDATED only when the node's data version differs from the cached one. " +
			"A child deleted and made again while the cache is disconnected comes back at version 0, as it was: after the reconnection the cache reads the new data and keeps it, but tells its listeners nothing.",
		Schedule:  "the cache's client is cut off while another client deletes a child and creates it again with new data; the cut heals and the session resumes",
		Symptom:   "a listener's copy of the directory keeps the old data for good, while the cache itself has the new",
		Fixed:     "fixed in Curator 4.0.0 (merge 26720494, March 2017): a change is told by the node's mzxid, not its version",
		Detectors: []fuzz.Detector{fuzz.Convergence},
		Mark:      "the listener was told",
		Target:    ChildrenCache(newCuratorChildrenCache),
		// The bug needs one partition; the other faults only make it
		// rarer, and the cache's own herd (every write wakes it, by
		// design) is no herd of waiters.
		Options: []fuzz.Option{fuzz.WithoutFaults(allFaultsBut(fuzz.Partition)...)},
	}
}

// ChildCache is a cache of a directory's children as its client uses it:
// it is started when its process starts, and tells its listener of every
// child added (with its data), updated, or removed.
type ChildCache interface {
	Start(listener func(kind, child string, data []byte))
}

// NewChildCache makes the ChildCache one process uses, on its connection,
// for the directory dir.
type NewChildCache func(ctx context.Context, client fuzz.Client, dir string) ChildCache

// cachedChildren are the names of the children the writers replace.
var cachedChildren = []string{"config", "routes"}

// ChildrenCache is the Target of a cache of a directory's children,
// described as a Recipe: client 0 keeps a ChildCache of the directory and
// a copy of it made only of what its listener was told, as a user of the
// cache keeps one; the other clients Replace a child (delete it, and
// create it again with new data). Its Settled holds the listener's copy to
// the server: once everything has settled, it is the directory's children
// with their data (Convergence).
func ChildrenCache(newCache NewChildCache) fuzz.Target {
	return fuzz.Recipe[*cacheClient]{
		Name: "children-cache",
		Path: "/caches/services",
		New: func(ctx context.Context, client fuzz.Client, dir string) *cacheClient {
			c := &cacheClient{conn: client, dir: dir, n: client.N}
			if client.N == 0 {
				c.copy = map[string]string{}
				newCache(ctx, client, dir).Start(c.told)
			}
			return c
		},
		Ops: []fuzz.Op[*cacheClient]{
			{Name: "Replace", Enabled: func(c *cacheClient) bool { return c.n != 0 }, Call: (*cacheClient).replace},
			{Name: "Look", Enabled: func(c *cacheClient) bool { return c.n == 0 }, Call: func(*cacheClient, context.Context, *fuzz.Call) error { return nil }},
		},
		Settled: (*cacheClient).settled,
	}
}

// cacheClient is one process of the cache's Recipe.
type cacheClient struct {
	conn   fuzz.Client
	dir    string
	n      int
	writes int
	// copy is the listener's copy, path → data, written on the cache's
	// own goroutine and read by Settled; mu guards it.
	mu   sync.Mutex
	copy map[string]string
}

func (c *cacheClient) told(kind, child string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case "CHILD_ADDED", "CHILD_UPDATED":
		c.copy[child] = string(data)
	case "CHILD_REMOVED":
		delete(c.copy, child)
	}
}

// replace deletes a child, if it is there, and creates it again with new
// data: a configuration rewritten by deleting and recreating it.
func (c *cacheClient) replace(_ context.Context, _ *fuzz.Call) error {
	c.writes++
	child := c.dir + "/" + cachedChildren[c.writes%len(cachedChildren)]
	if err := c.conn.Conn.Delete(child, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	data := fmt.Sprintf("written by client %d, session %#x, write %d", c.n, c.conn.Conn.SessionID(), c.writes)
	for _, p := range []string{path.Dir(c.dir), c.dir} {
		if _, err := c.conn.Conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	_, err := c.conn.Conn.Create(child, []byte(data), 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil // another writer's, made since the delete
	}
	return err
}

func (c *cacheClient) settled(v fuzz.View) string {
	if c.n != 0 {
		return ""
	}
	children, _, err := v.Read.Children(c.dir)
	if errors.Is(err, zk.ErrNoNode) {
		children, err = nil, nil
	}
	if err != nil {
		return ""
	}
	server := map[string]string{}
	for _, name := range children {
		data, _, err := v.Read.Get(c.dir + "/" + name)
		if err != nil {
			return ""
		}
		server[c.dir+"/"+name] = string(data)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if maps.Equal(server, c.copy) {
		return ""
	}
	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(server)) {
		if got, ok := c.copy[p]; !ok || got != server[p] {
			diffs = append(diffs, fmt.Sprintf("%s holds %q, and the listener was told %q", p, server[p], got))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(c.copy)) {
		if _, ok := server[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is gone, and the listener was told %q", p, c.copy[p]))
		}
	}
	return strings.Join(diffs, "; ")
}
