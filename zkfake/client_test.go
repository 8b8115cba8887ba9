package zkfake

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// Each create call takes its own create modes and refuses the others
// before it sends anything, checking the flags first, the path second and
// the mode last, as go-zookeeper's Create, CreateContainer and CreateTTL
// do.
func TestCheckCreateRefusesAsGoZookeeper(t *testing.T) {
	badFlag := errors.New("invalid flag value: [99]")
	tests := []struct {
		op    string
		path  string
		flags int32
		want  error // compared by errors.Is, or by text for badFlag
	}{
		{"create", "/a", zk.FlagPersistent, nil},
		{"create", "/a", zk.FlagEphemeral, nil},
		{"create", "/a-", zk.FlagSequence, nil},
		{"create", "/a/", zk.FlagEphemeralSequential, nil},
		{"create", "/a", zk.FlagContainer, nil},
		{"create", "/a", zk.FlagTTL, zk.ErrInvalidFlags},
		{"create", "/a", zk.FlagPersistentSequentialWithTTL, zk.ErrInvalidFlags},
		{"create", "/a/", zk.FlagPersistent, zk.ErrInvalidPath},
		{"create", "/a", 99, badFlag},
		{"create", "a", 99, badFlag}, // the flags are checked before the path
		{"create", "a", zk.FlagTTL, zk.ErrInvalidPath},

		{"createContainer", "/a", zk.FlagContainer, nil},
		{"createContainer", "/a", zk.FlagPersistent, zk.ErrInvalidFlags},
		{"createContainer", "/a", zk.FlagTTL, zk.ErrInvalidFlags},
		{"createContainer", "/a/", zk.FlagSequence, zk.ErrInvalidFlags}, // the path passes: sequential
		{"createContainer", "//a", zk.FlagPersistent, zk.ErrInvalidPath},

		{"createTTL", "/a", zk.FlagTTL, nil},
		{"createTTL", "/a/", zk.FlagPersistentSequentialWithTTL, nil},
		{"createTTL", "/a", zk.FlagPersistent, zk.ErrInvalidFlags},
		{"createTTL", "/a", zk.FlagContainer, zk.ErrInvalidFlags},
		{"createTTL", "/a/", zk.FlagTTL, zk.ErrInvalidPath},
		{"createTTL", "/a", 99, badFlag},
	}
	for _, tt := range tests {
		err := checkCreate(tt.op, tt.path, tt.flags)
		ok := errors.Is(err, tt.want)
		if tt.want == badFlag {
			ok = err != nil && err.Error() == badFlag.Error()
		}
		if !ok {
			t.Errorf("checkCreate(%q, %q, %d) = %v, want %v", tt.op, tt.path, tt.flags, err, tt.want)
		}
	}
}

// go-zookeeper's Multi gives nil with ErrConnectionClosed, an empty slice
// for any other failure without results, and, because v1.0.4 cannot decode
// the server's answer to a container create, ErrAPIError with the results
// before the first one of a multi that succeeded.
func TestMultiReplyShapes(t *testing.T) {
	create := &zk.CreateRequest{Path: "/a", Flags: zk.FlagPersistent}
	container := &zk.CreateRequest{Path: "/c", Flags: zk.FlagContainer}
	del := &zk.DeleteRequest{Path: "/d", Version: -1}
	results := []zk.MultiResponse{{String: "/a"}, {String: "/c"}, {}}
	tests := []struct {
		name     string
		ops      []any
		mr       []zk.MultiResponse
		err      error
		wantLen  int // -1 for a nil slice
		wantErr  error
		wantSame bool // the results come back as the server gave them
	}{
		{"lost", []any{create}, nil, zk.ErrConnectionClosed, -1, zk.ErrConnectionClosed, false},
		{"no server", []any{create}, nil, zk.ErrNoServer, 0, zk.ErrNoServer, false},
		{"applied", []any{create, del}, results[:2], nil, 2, nil, true},
		{"container", []any{create, container, del}, results, nil, 1, zk.ErrAPIError, false},
		{"container first", []any{container, create}, results[:2], nil, 0, zk.ErrAPIError, false},
		{"failed with a container", []any{container, del}, results[:2], zk.ErrNoNode, 2, zk.ErrNoNode, true},
	}
	for _, tt := range tests {
		mr, err := multiReply(tt.ops, tt.mr, tt.err)
		switch {
		case err != tt.wantErr:
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.wantErr)
		case tt.wantLen < 0 && mr != nil, tt.wantLen >= 0 && (mr == nil || len(mr) != tt.wantLen):
			t.Errorf("%s: results %v (nil %v), want %d of them", tt.name, mr, mr == nil, tt.wantLen)
		case tt.wantSame && &mr[0] != &tt.mr[0]:
			t.Errorf("%s: results copied, want the server's", tt.name)
		}
	}
}
