package jute

// Op codes of ZooKeeper 3.8's client protocol (ZooDefs.OpCode).
const (
	OpNotify               = 0
	OpCreate               = 1
	OpDelete               = 2
	OpExists               = 3
	OpGetData              = 4
	OpSetData              = 5
	OpGetACL               = 6
	OpSetACL               = 7
	OpGetChildren          = 8
	OpSync                 = 9
	OpPing                 = 11
	OpGetChildren2         = 12
	OpCheck                = 13
	OpMulti                = 14
	OpCreate2              = 15
	OpReconfig             = 16
	OpCheckWatches         = 17
	OpRemoveWatches        = 18
	OpCreateContainer      = 19
	OpCreateTTL            = 21
	OpMultiRead            = 22
	OpClose                = -11
	OpSetAuth              = 100
	OpSetWatches           = 101
	OpSASL                 = 102
	OpGetEphemerals        = 103
	OpGetAllChildrenNumber = 104
	OpSetWatches2          = 105
	OpAddWatch             = 106
	OpWhoAmI               = 107
	OpError                = -1
)

// Reserved xids: notifications carry -1, pings -2, auth -4, setWatches -8.
const (
	XidNotification = -1
	XidPing         = -2
	XidAuth         = -4
	XidSetWatches   = -8
)

// Error codes of ZooKeeper's KeeperException.Code.
const (
	CodeOK                  = 0
	CodeSystemError         = -1
	CodeRuntimeInconsistent = -2
	CodeMarshallingError    = -5
	CodeUnimplemented       = -6
	CodeBadArguments        = -8
	CodeAPIError            = -100
	CodeNoNode              = -101
	CodeNoAuth              = -102
	CodeBadVersion          = -103
	CodeNoChildrenForEphem  = -108
	CodeNodeExists          = -110
	CodeNotEmpty            = -111
	CodeSessionExpired      = -112
	CodeInvalidACL          = -114
	CodeAuthFailed          = -115
	CodeSessionMoved        = -118
	CodeNoWatcher           = -121
	CodeReconfigDisabled    = -123
)

// The watcher types of checkWatches and removeWatches (Watcher.WatcherType).
const (
	WatcherChildren = 1
	WatcherData     = 2
	WatcherAny      = 3
)

// The modes of addWatch (ZooDefs.AddWatchModes).
const (
	AddWatchPersistent          = 0
	AddWatchPersistentRecursive = 1
)
