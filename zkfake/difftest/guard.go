package difftest

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// safeOutside lists the writes outside the base a sequence may make, by
// kind and path: ZooKeeper refuses each of them whatever the state of the
// server (NodeExists, BadArguments, NoAuth), so they change nothing on a
// shared server. The set of /zookeeper/quota and the setACL of /zookeeper
// are generated with a version no node reaches (BadVersion); every write
// to /zookeeper/config or under it but a delete is NoAuth (its ACL is
// world:anyone READ), a delete BadArguments.
var safeOutside = map[Kind]map[string]bool{
	Create: {"/": true, "/zookeeper": true, "/zookeeper/config/x": true},
	Delete: {"/": true, "/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true},
	Set:    {"/zookeeper/config": true, "/zookeeper/quota": true},
	SetACL: {"/zookeeper": true, "/zookeeper/config": true},
}

// guard refuses an op that could change the server outside the base.
func (r *run) guard(op Op) error {
	if !op.writes() && op.Kind != Check {
		return nil
	}
	for _, sub := range op.Sub {
		if err := r.guard(sub); err != nil {
			return err
		}
	}
	if op.Kind == Multi || op.Kind == Close {
		return nil
	}
	p := r.resolve(op.Path)
	if p == "" || p == r.base || strings.HasPrefix(p, r.base+"/") {
		return nil
	}
	sequential := (op.Kind == Create || op.Kind == CreateTTL) && op.Flags&zk.FlagSequence != 0
	if safeOutside[op.Kind][p] && !sequential || op.Kind == Check {
		return nil
	}
	return fmt.Errorf("op %d (%s): refusing to write %s, outside the base %s", op.Label, op, p, r.base)
}
