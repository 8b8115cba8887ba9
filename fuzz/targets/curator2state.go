package targets

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is the connection state of curator2.go's client as Curator
// follows it: when the connection went down, and when Curator gives its
// session up on its own clock (ConnectionState.checkTimeouts' reset in
// 2.x, ConnectionStateManager's injected session expiration from 3.0 on),
// through the harness Conn's AbandonSession: a new session, while the
// server keeps the old one until it expires it.

// connected is CuratorZookeeperClient.isConnected, which notes when the
// connection went down.
func (c *curator2Client) connected() bool {
	up := c.conn.State() == zk.StateHasSession
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case up:
		c.downSince = time.Time{}
	case c.downSince.IsZero():
		c.downSince = time.Now()
	}
	return up
}

// checkTimeouts is ConnectionState.checkTimeouts, which getZooKeeper runs
// before each try of an operation while the client is not connected: once
// the connection has been down for longer than both the session and the
// connection timeout, the client resets it, closing its ZooKeeper handle,
// whose close cannot reach the server, and opening a new one: a new
// session, while the server keeps the old one until it expires it.
func (c *curator2Client) checkTimeouts() {
	if c.injectExpiry || c.connected() {
		return
	}
	c.mu.Lock()
	elapsed := time.Since(c.downSince)
	c.mu.Unlock()
	if elapsed <= max(curator2SessionTimeout, curator2ConnectionTimeout) {
		return
	}
	// log.warn("Connection attempt unsuccessful after %d (greater than
	// max timeout of %d). Resetting connection and trying again with a
	// new connection.")
	if a, ok := c.conn.(interface{ AbandonSession() bool }); ok && a.AbandonSession() {
		c.mu.Lock()
		c.downSince = time.Now()
		c.mu.Unlock()
	}
}

// sessionAbandoner is the Conn of a process that can give up its
// session on its own: the harness's, in process.
type sessionAbandoner interface {
	AbandonSession() bool
	SessionTimeout() time.Duration
}

// watchSession runs ConnectionStateManager's check
// (checkSessionExpiration) while a call is under way, and returns what
// ends it: once the connection has been down (SUSPENDED) for the
// negotiated session timeout, the client injects a session expiration,
// giving its session up (CURATOR-405: the clock starts again after it).
// Curator's thread checks also while no call is under way; the port's
// lock, a fuzz.Locker, has no goroutine that lives as long as its process
// to run it on, so it checks while an acquire or a release is under way.
func (c *curator2Client) watchSession() (stop func()) {
	a, ok := c.conn.(sessionAbandoner)
	if !c.injectExpiry || !ok {
		return func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watching++; c.watching == 1 {
		c.stopWatch = make(chan struct{})
		go c.checkSessionExpiration(a, c.stopWatch)
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.watching--; c.watching == 0 {
			close(c.stopWatch)
		}
	}
}

// checkSessionExpiration is the state manager's loop until stop: it
// looks every curator2Poll while connected and, while not, sleeps until
// the session timeout would have passed (the event queue's poll).
func (c *curator2Client) checkSessionExpiration(a sessionAbandoner, stop <-chan struct{}) {
	next := curator2Poll
	for {
		select {
		case <-stop:
			return
		case <-time.After(next):
		}
		next = curator2Poll
		if c.connected() {
			continue
		}
		c.mu.Lock()
		elapsed := time.Since(c.downSince)
		c.mu.Unlock()
		timeout := a.SessionTimeout()
		if timeout <= 0 {
			continue
		}
		if elapsed < timeout {
			next = max(curator2Poll, timeout-elapsed)
			continue
		}
		// log.warn("Session timeout has elapsed while SUSPENDED.
		// Injecting a session expiration.")
		if a.AbandonSession() {
			c.mu.Lock()
			c.downSince = time.Now()
			c.mu.Unlock()
		}
	}
}
