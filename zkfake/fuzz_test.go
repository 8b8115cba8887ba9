package zkfake

import (
	"fmt"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

// FuzzOps drives three sessions through random op sequences — every kind of
// create, set, delete, multi, watches, closes, expiries, partitions, lost
// replies, time passing — and checks after every op that nothing panicked
// and the tree's invariants hold. Its seed corpus runs in every `go test`.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 3, 2, 4, 0, 5, 1})
	f.Add([]byte{0, 3, 0, 3, 0, 3, 6, 0, 7, 1, 8, 2, 9, 0, 10, 1, 11, 2})
	f.Add([]byte{12, 0, 0, 1, 13, 0, 14, 1, 0, 2, 15, 0, 1, 1, 2, 2})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"))
	f.Add([]byte{240, 0, 0, 0, 0, 0, 0, 241, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 0, 1, 0, 2, 0, 0, 0, 241, 0, 0, 0, 0, 0, 0, 3, 245, 1, 1, 0, 0, 0, 0, 244, 2, 2, 0, 0, 3, 0, 243, 0, 1, 0, 0, 0, 1, 5, 9, 0, 0, 1, 0, 8, 0})
	f.Fuzz(func(t *testing.T, program []byte) {
		synctest.Test(t, func(t *testing.T) { runProgram(t, program) })
	})
}

var fuzzPaths = []string{"/a", "/a/b", "/a/b/c", "/c", "/c/d", "/a/", "/zookeeper", "/", "bad", "/a//b"}

func runProgram(t *testing.T, program []byte) {
	srv := NewServer(WithSeed(uint64(len(program))), WithTickTime(100*time.Millisecond), WithEnsemble(3))
	defer srv.Close()
	var conns [3]*Conn
	for i := range conns {
		c, _, err := srv.Connect(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	acls := [][]zk.ACL{zk.WorldACL(zk.PermAll), zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "u", "p"), nil}
	next := func() byte {
		if len(program) == 0 {
			return 0
		}
		b := program[0]
		program = program[1:]
		return b
	}
	for steps := 0; len(program) > 0 && steps < 200; steps++ {
		op, c := next(), conns[int(next())%len(conns)]
		path := fuzzPaths[int(next())%len(fuzzPaths)]
		data := []byte{next()}
		version := int32(next()%4) - 1
		if op >= 240 {
			// ZooKeeper 3.8's requests go-zookeeper cannot send, on the
			// bytes the corpus used least, so that its inputs keep their
			// meaning.
			runExtraOp(srv, c, op-240, path, data, next)
			op = 255 // no op of the switch below
		}
		switch op % 20 {
		case 0:
			c.Create(path, data, int32(next()%8), acls[int(next())%len(acls)])
		case 1:
			c.Delete(path, version)
		case 2:
			c.Set(path, data, version)
		case 3:
			c.GetW(path)
		case 4:
			c.ExistsW(path)
		case 5:
			c.ChildrenW(path)
		case 6:
			c.Multi(&zk.CreateRequest{Path: path, Data: data, Acl: acls[0], Flags: int32(next() % 8)},
				&zk.SetDataRequest{Path: fuzzPaths[int(next())%len(fuzzPaths)], Data: data, Version: version},
				&zk.DeleteRequest{Path: fuzzPaths[int(next())%len(fuzzPaths)], Version: -1},
				&zk.CheckVersionRequest{Path: path, Version: version})
		case 7:
			c.Close()
			if nc, _, err := srv.Connect(time.Second); err == nil {
				conns[int(op)%len(conns)] = nc
			}
		case 8:
			srv.Expire(c.SessionID())
		case 9:
			c.Partition()
		case 10:
			c.Heal()
		case 11:
			srv.LoseReplies(ReplyLoss{Nth: 1, Applied: next()%2 == 0, SessionID: c.SessionID()})
		case 12:
			time.Sleep(time.Duration(next()) * 10 * time.Millisecond)
		case 13:
			c.CreateTTL(path, data, zk.FlagTTL, acls[0], time.Duration(next())*time.Millisecond)
		case 14:
			c.CreateContainer(path, data, zk.FlagContainer, acls[0])
		case 15:
			c.AddAuth("digest", []byte("u:p"))
		case 16:
			srv.SetLagging(int(next())%3, next()%2 == 0)
		case 17:
			c.Sync(path)
		case 18:
			srv.StopMember(int(next()) % 3)
		case 19:
			srv.StartMember(int(next()) % 3)
		}
		if op == 255 {
			op = 240
		}
		srv.mu.Lock()
		err := srv.st.checkInvariants()
		if err == nil {
			err = srv.checkFollowers()
		}
		srv.mu.Unlock()
		if err != nil {
			t.Fatalf("after step %d (op %d on %s): %v\n%s", steps, op%20, path, err, srv.Dump())
		}
	}
	for i := 0; i < 3; i++ {
		srv.StartMember(i)
	}
	for _, c := range conns {
		c.Heal()
		c.Close()
	}
}

// runExtraOp runs one of the extras (extras.go), with modes and types
// drawn beyond the valid ones too. The persistent watches' channels go
// unread: the server must not wait for them, and Close ends them.
func runExtraOp(srv *Server, c *Conn, op byte, path string, data []byte, next func() byte) {
	other := fuzzPaths[int(next())%len(fuzzPaths)]
	switch op % 6 {
	case 0:
		c.AddWatch(path, AddWatchMode(next()%3))
	case 1:
		c.RemoveWatches(path, WatcherType(next()%5))
	case 2:
		c.CheckWatches(path, WatcherType(next()%5))
	case 3:
		c.Create2(path, data, int32(next()%8), zk.WorldACL(zk.PermAll), time.Duration(next())*time.Millisecond)
	case 4:
		c.MultiRead(&GetDataRequest{Path: path}, &GetChildrenRequest{Path: other})
	case 5:
		c.GetEphemerals(path)
		c.GetAllChildrenNumber(other)
		c.WhoAmI()
	}
}

// checkInvariants checks what must hold of the state after every op.
func (st *state) checkInvariants() error {
	for path, n := range st.tree.nodes {
		if n.czxid > st.zxid || n.mzxid > st.zxid || n.pzxid > st.zxid {
			return fmt.Errorf("%s: a zxid beyond the server's %d", path, st.zxid)
		}
		if n.mzxid < n.czxid || n.pzxid < n.czxid {
			return fmt.Errorf("%s: mzxid or pzxid before czxid", path)
		}
		// The server's own nodes were not created by a request.
		builtin := map[string]int{"/": 1, "/zookeeper": 2}[path]
		if int(n.creates) < len(n.children)-builtin {
			return fmt.Errorf("%s: %d children but only %d ever created", path, len(n.children), n.creates)
		}
		for child := range n.children {
			c := st.tree.nodes[joinPath(path, child)]
			if c == nil {
				return fmt.Errorf("%s lists a missing child %s", path, child)
			}
			if c.czxid > n.pzxid && path != "/" && path != "/zookeeper" {
				return fmt.Errorf("%s: pzxid %d older than child %s's czxid %d", path, n.pzxid, child, c.czxid)
			}
		}
		if path != "/" {
			parent := st.tree.nodes[parentOf(path)]
			if parent == nil {
				return fmt.Errorf("%s has no parent", path)
			}
			if _, ok := parent.children[baseName(path)]; !ok {
				return fmt.Errorf("%s is not among its parent's children", path)
			}
		}
		if n.kind == kindEphemeral {
			owner := st.sessions[n.ephemeralOwner]
			if owner == nil {
				return fmt.Errorf("ephemeral %s owned by dead session %#x", path, n.ephemeralOwner)
			}
			if _, ok := owner.ephemerals[path]; !ok {
				return fmt.Errorf("ephemeral %s missing from its session's list", path)
			}
			if len(n.children) > 0 {
				return fmt.Errorf("ephemeral %s has children", path)
			}
		} else if n.ephemeralOwner != 0 {
			return fmt.Errorf("%s is not ephemeral but has owner %#x", path, n.ephemeralOwner)
		}
	}
	for id, sess := range st.sessions {
		for p := range sess.ephemerals {
			if n := st.tree.nodes[p]; n == nil || n.ephemeralOwner != id {
				return fmt.Errorf("session %#x lists %s, which it does not own", id, p)
			}
		}
	}
	for _, table := range []watchSet{st.watches.data, st.watches.child} {
		recursive := map[string]int{}
		for path, set := range table.paths {
			for _, mode := range set {
				if mode == modePersistentRecursive {
					recursive[path]++
				}
			}
		}
		if !maps.Equal(recursive, table.recursive) {
			return fmt.Errorf("recursive watch counts %v, but the table holds %v", table.recursive, recursive)
		}
		for path, set := range table.paths {
			for id := range set {
				if st.sessions[id] == nil {
					return fmt.Errorf("watch on %s held by dead session %#x", path, id)
				}
			}
		}
	}
	reapable := 0
	for _, n := range st.tree.nodes {
		if n.kind == kindContainer || n.kind == kindTTL {
			reapable++
		}
	}
	if reapable != st.tree.reapable {
		return fmt.Errorf("reapable count %d, but %d container and TTL nodes", st.tree.reapable, reapable)
	}
	return nil
}

// checkFollowers checks that every follower that has applied all it was
// sent holds the leader's tree exactly.
func (s *Server) checkFollowers() error {
	leader := s.members[0].tree
	for i, m := range s.members[1:] {
		if len(m.queue) > 0 {
			continue
		}
		if len(m.tree.nodes) != len(leader.nodes) {
			return fmt.Errorf("member %d holds %d nodes, the leader %d", i+1, len(m.tree.nodes), len(leader.nodes))
		}
		for path, want := range leader.nodes {
			got := m.tree.nodes[path]
			if got == nil {
				return fmt.Errorf("member %d lacks %s", i+1, path)
			}
			if got.stat() != want.stat() || string(got.data) != string(want.data) || fmt.Sprint(got.acl) != fmt.Sprint(want.acl) {
				return fmt.Errorf("member %d's %s differs: %+v, leader %+v", i+1, path, got.stat(), want.stat())
			}
		}
	}
	return nil
}
