package fuzz

// ClientCloser is a handle — a Locker, or a Recipe's handle — whose
// library has a close of its own that its code sees, as kazoo's
// KazooClient.stop() or Curator's CuratorFramework.close(). When the
// harness draws a process's close (the Close fault), it calls CloseClient
// first, on its own goroutine, and then closes the Conn. The library's
// code, knowing it is closed, fails its calls at once as the library does
// (kazoo's ConnectionClosedError, which its retry policy does not retry),
// instead of taking the closed Conn's zk.ErrConnectionClosed for a lost
// connection and retrying it for as long as its policy allows. Without
// it, the harness closes the Conn alone, as a program on go-zookeeper
// does, whose code then has only the Conn's answers to go by: more than
// 20 requests on the closed Conn are a liveness finding either way.
//
// CloseClient must not wait for the server or for the process's other
// calls: it marks the client closed.
type ClientCloser interface {
	CloseClient()
}
