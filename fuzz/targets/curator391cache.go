package targets

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// curatorChildrenCache is PathChildrenCache (Curator 2.11.1) with its data
// cached, started in NORMAL mode. Its currentData is touched on the
// framework's event thread only (watchers and background callbacks), as
// in Curator; its operations run one at a time on its executor, a
// goroutine of its own, through offerOperation's quantizer, which drops
// an operation equal to one still queued. Left out: the None events ZooKeeper
// also hands every registered watcher (the children watcher refreshes on
// them; the reconnection's own refresh, which is kept, reads more).
type curatorChildrenCache struct {
	f        *curatorFramework
	path     string
	executor chan func()
	// quantizer is operationsQuantizer's set, guarded by the channel.
	quantizer   chan map[string]bool
	currentData map[string]cachedChild
	ensured     bool
	listener    func(kind, child string, data []byte)
}

type cachedChild struct {
	stat *zk.Stat
	data []byte
}

// The refresh modes.
const (
	refreshStandard = "STANDARD"
	refreshForce    = "FORCE_GET_DATA_AND_STAT"
)

func newCuratorChildrenCache(ctx context.Context, client fuzz.Client, dir string) ChildCache {
	c := &curatorChildrenCache{
		f:           newCuratorFramework(ctx, client.Conn, client.Events),
		path:        dir,
		executor:    make(chan func(), 256),
		quantizer:   make(chan map[string]bool, 1),
		currentData: map[string]cachedChild{},
	}
	c.quantizer <- map[string]bool{}
	go func() {
		for {
			select {
			case op := <-c.executor:
				op()
			case <-ctx.Done():
				return
			}
		}
	}()
	return c
}

// Start is start(StartMode.NORMAL), with listener as the one
// PathChildrenCacheListener.
func (c *curatorChildrenCache) Start(listener func(kind, child string, data []byte)) {
	c.listener = listener
	c.f.run(func() { c.f.addListener(c.handleStateChange) })
	c.offerOperation("refresh "+refreshStandard, func() { c.refresh(refreshStandard) })
}

// offerOperation queues op on the executor, unless an equal one (the same
// key; "" for an EventOperation, which equals no other) is queued.
func (c *curatorChildrenCache) offerOperation(key string, op func()) {
	pending := <-c.quantizer
	if key != "" && pending[key] {
		c.quantizer <- pending
		return
	}
	if key != "" {
		pending[key] = true
	}
	c.quantizer <- pending
	run := func() {
		pending := <-c.quantizer
		delete(pending, key)
		c.quantizer <- pending
		op()
	}
	select {
	case c.executor <- run:
	case <-c.f.ctx.Done():
	}
}

// event is an EventOperation: the listener hears it on the executor.
func (c *curatorChildrenCache) event(kind, child string, data []byte) {
	c.offerOperation("", func() { c.listener(kind, child, data) })
}

// refresh ensures the path (once), and lists the children with the
// children watcher, in the background.
func (c *curatorChildrenCache) refresh(mode string) {
	if !c.ensured {
		err := c.f.retry(func() error {
			for _, p := range []string{path.Dir(c.path), c.path} {
				if _, err := c.f.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return // handleException: logged
		}
		c.ensured = true
	}
	var children []string
	c.f.background(func() error {
		list, _, ch, err := c.f.conn.ChildrenW(c.path)
		if err == nil {
			children = list
			c.f.watch(ch, c.childrenWatcher)
		}
		return err
	}, func(err error) {
		if err == nil {
			c.processChildren(children, mode)
		}
	})
}

func (c *curatorChildrenCache) childrenWatcher(zk.Event) {
	c.offerOperation("refresh "+refreshStandard, func() { c.refresh(refreshStandard) })
}

func (c *curatorChildrenCache) dataWatcher(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		c.remove(ev.Path)
	case zk.EventNodeDataChanged:
		p := ev.Path
		c.offerOperation("get "+p, func() { c.getDataAndStat(p) })
	}
}

// getDataAndStat reads the child with the data watcher, in the
// background, and applies what it read.
func (c *curatorChildrenCache) getDataAndStat(fullPath string) {
	var data []byte
	var stat *zk.Stat
	c.f.background(func() error {
		d, st, ch, err := c.f.conn.GetW(fullPath)
		if err == nil {
			data, stat = d, st
			c.f.watch(ch, c.dataWatcher)
		}
		return err
	}, func(err error) { c.applyNewData(fullPath, err, stat, data) })
}

func (c *curatorChildrenCache) remove(fullPath string) {
	if data, ok := c.currentData[fullPath]; ok {
		delete(c.currentData, fullPath)
		c.event("CHILD_REMOVED", fullPath, data.data)
	}
}

func (c *curatorChildrenCache) handleStateChange(s curatorState) {
	switch s {
	case curatorSuspended:
		c.event("CONNECTION_SUSPENDED", "", nil)
	case curatorLost:
		c.event("CONNECTION_LOST", "", nil)
	case curatorReconnected:
		c.offerOperation("refresh "+refreshForce, func() { c.refresh(refreshForce) })
		c.event("CONNECTION_RECONNECTED", "", nil)
	}
}

func (c *curatorChildrenCache) processChildren(children []string, mode string) {
	listed := map[string]bool{}
	for _, name := range children {
		listed[path.Join(c.path, name)] = true
	}
	for fullPath := range c.currentData {
		if !listed[fullPath] {
			c.remove(fullPath)
		}
	}
	for _, name := range children {
		fullPath := path.Join(c.path, name)
		if _, cached := c.currentData[fullPath]; mode == refreshForce || !cached {
			c.getDataAndStat(fullPath)
		}
	}
}

// applyNewData keeps what was read and tells the listener of a child
// added, or of one whose data version differs from the cached one: the
// bug, as a child made again has its version back at 0.
func (c *curatorChildrenCache) applyNewData(fullPath string, err error, stat *zk.Stat, data []byte) {
	if err != nil {
		return // the node must have dropped: another event comes
	}
	previous, had := c.currentData[fullPath]
	c.currentData[fullPath] = cachedChild{stat: stat, data: data}
	switch {
	case !had:
		c.event("CHILD_ADDED", fullPath, data)
	case previous.stat.Version != stat.Version:
		c.event("CHILD_UPDATED", fullPath, data)
	}
}
