package zktest

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// MultiBatch is how many ops one Multi of CreateAll, DeleteAll and
// DeleteTree carries: well under the server's 1 MB packet limit
// (jute.maxbuffer) for paths of ordinary length and small data.
const MultiBatch = 1000

// DeleteTree deletes path and everything under it, and is content if path
// does not exist: the clean-up after a scenario or a benchmark on a real
// ensemble. It lists the tree, then deletes it deepest first, a thousand
// nodes to a Multi. Children can appear while it works (a session closing
// late, a sequential create in flight), so a tree that is not empty yet is
// listed again; a node that is already gone (an ephemeral whose session just
// closed) is fine.
func DeleteTree(conn Conn, path string) error {
	for attempt := 0; attempt < 10; attempt++ {
		nodes, err := postOrder(conn, path)
		if err != nil {
			return err
		}
		err = deleteNodes(conn, nodes)
		if !errors.Is(err, zk.ErrNotEmpty) {
			return err
		}
	}
	return fmt.Errorf("deleting %s: it keeps getting new children", path)
}

// postOrder lists path and its descendants, each after all of its own.
func postOrder(conn Conn, path string) ([]string, error) {
	var all []string
	var walk func(p string) error
	walk = func(p string) error {
		children, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", p, err)
		}
		for _, c := range children {
			if err := walk(p + "/" + c); err != nil {
				return err
			}
		}
		all = append(all, p)
		return nil
	}
	return all, walk(path)
}

// deleteNodes deletes nodes in order, a batch to a Multi; a batch that
// fails (a node gone meanwhile, or one that gained a child) is deleted one
// by one, tolerating the missing nodes.
func deleteNodes(conn Conn, nodes []string) error {
	for start := 0; start < len(nodes); start += MultiBatch {
		batch := nodes[start:min(start+MultiBatch, len(nodes))]
		if DeleteAll(conn, batch) == nil {
			continue
		}
		for _, p := range batch {
			if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("deleting %s: %w", p, err)
			}
		}
	}
	return nil
}

// DeleteAll deletes the given childless nodes, any version, MultiBatch to
// a Multi: all of a batch or none of it.
func DeleteAll(conn Conn, paths []string) error {
	return inMultis(conn, paths, "deleting", func(p string) any { return &zk.DeleteRequest{Path: p, Version: -1} })
}

// CreateAll creates the given persistent nodes with data and the open ACL,
// MultiBatch to a Multi: all of a batch or none of it.
func CreateAll(conn Conn, paths []string, data []byte) error {
	return inMultis(conn, paths, "creating", func(p string) any { return &zk.CreateRequest{Path: p, Data: data, Acl: OpenACL} })
}

// inMultis sends op of every path, MultiBatch to a Multi.
func inMultis(conn Conn, paths []string, doing string, op func(path string) any) error {
	for start := 0; start < len(paths); start += MultiBatch {
		end := min(start+MultiBatch, len(paths))
		ops := make([]any, 0, end-start)
		for _, p := range paths[start:end] {
			ops = append(ops, op(p))
		}
		if _, err := conn.Multi(ops...); err != nil {
			return fmt.Errorf("%s %d nodes from %s: %w", doing, len(ops), paths[start], err)
		}
	}
	return nil
}
