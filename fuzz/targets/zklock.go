package targets

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// ZKLock is go-zookeeper v1.0.4's own zk.Lock, fuzzed as it is: every
// client is a real go-zookeeper client over a pipe to the fake
// (fuzz.LockZK), and the lock is zk.NewLock on its *zk.Conn. zk.Lock's
// Lock takes no context, so the wrapper's Lock calls it as it is and
// heeds no deadline, as a program calling it does; nothing else is
// wrapped.
func ZKLock() fuzz.Target {
	return fuzz.LockZK(func(conn *zk.Conn, path string) fuzz.Locker {
		return zkLock{zk.NewLock(conn, path, zk.WorldACL(zk.PermAll))}
	})
}

// zkLock is a zk.Lock as a fuzz.Locker.
type zkLock struct{ l *zk.Lock }

// Lock calls zk.Lock's Lock, which has no context.
func (z zkLock) Lock(context.Context) error { return z.l.Lock() }

func (z zkLock) Unlock() error { return z.l.Unlock() }

// ZKLockDefect is one defect of zk.Lock the harness finds, with the
// campaign that looks for it alone: its options leave out the draws that
// trigger zk.Lock's other defects first. (zk.Lock hands out no fencing
// token: a campaign reports what it cannot promise once, and goes on.)
// The orphan's campaign draws
// no outside writes: zk.Lock never checks that its own node is still
// there, so a node someone else deleted lets two clients hold the lock,
// which is another weakness than #229's.
type ZKLockDefect struct {
	Name string // the zkfuzz name: zk.Lock/<defect>
	Bug  string // what is wrong, and its upstream record
	// Detectors are those that find it: a node left behind is a leak
	// once every client has stopped, and a liveness finding first if a
	// client waits behind it.
	Detectors []fuzz.Detector
	// Mark is a line of the shrunk story that only this defect tells.
	Mark    string
	Options []fuzz.Option
}

// ZKLockDefects lists zk.Lock's defects the harness finds.
func ZKLockDefects() []ZKLockDefect {
	return []ZKLockDefect{
		{Name: "zk.Lock/orphan", Detectors: []fuzz.Detector{fuzz.Liveness, fuzz.Leak}, Mark: "'s Lock fails: zk: ",
			Bug: "an error after the create (the connection lost while it lists the directory) leaves Lock's node behind, alive with the session, " +
				"and the client's next Lock, and everyone's after it, waits behind it for ever (samuel/go-zookeeper #229, open; go-zookeeper v1.0.4 has it)",
			Options: []fuzz.Option{fuzz.WithoutForeignChildren(), fuzz.WithoutSequenceWrap(), fuzz.WithoutFaults(fuzz.OutsideWrite)}},
		{Name: "zk.Lock/foreign-child", Detectors: []fuzz.Detector{fuzz.Leak, fuzz.Liveness}, Mark: "strconv.Atoi",
			Bug: "a child of the lock's directory that zk.Lock did not make (a name with no number after \"lock-\") fails every Lock with strconv's error, " +
				"and the node Lock made stays behind (the same missing cleanup as #229)",
			Options: []fuzz.Option{fuzz.WithoutSequenceWrap()}},
		{Name: "zk.Lock/negative-sequence", Detectors: []fuzz.Detector{fuzz.Leak, fuzz.Liveness}, Mark: "zk: invalid path",
			Bug: "past the int32 wrap, or the sign change near it, ZooKeeper's sequence numbers are negative: zk.Lock looks for the node ahead of its own " +
				"among numbers above -1, finds none, and watches the directory's path with a trailing slash, so Lock fails with zk.ErrInvalidPath " +
				"and its node stays behind (go-zookeeper/zk#65 fixed the parsing of a negative number, not this search)",
			Options: []fuzz.Option{fuzz.WithoutForeignChildren()}},
	}
}
