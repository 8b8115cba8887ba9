package fuzz

import (
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file adapts the project's own lock, recipe.Mutex, to the lock loop.

// RecipeMutex is the NewLocker of the project's own lock, recipe.Mutex,
// which offers every optional behaviour.
// In a case its nodes carry the client's name, as kazoo's identifier does,
// for whoever reads the tree, and the harness listens to the changes of
// state of every other client's lock (see StateReporter).
func RecipeMutex(conn zktest.Conn, path string) Locker {
	var opts []recipe.MutexOption
	if g, ok := conn.(*gatedConn); ok {
		opts = append(opts, recipe.WithNodeData([]byte(g.inc.slot.name())))
		if g.inc.slot.id%2 == 0 {
			// Clients 0, 2, 4... listen, as a program that stops work
			// while its hold is suspended does; the others do not.
			g.inc.heard.on = true
			opts = append(opts, recipe.WithStateListener(g.inc.heard.hear))
		}
	}
	return recipeMutex{recipe.NewMutex(conn, path, opts...), conn}
}

// recipeMutex is a recipe.Mutex that says it is reentrant.
type recipeMutex struct {
	*recipe.Mutex
	conn zktest.Conn
}

func (recipeMutex) Reentrant() bool { return true }

func (recipeMutex) SharedHandle() bool { return true }

func (m recipeMutex) Contenders() ([]string, error) { return recipe.Contenders(m.conn, m.Path()) }
