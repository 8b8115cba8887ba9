package zkfake_test

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// guids are two GUIDs as a client library draws them, the first below the
// second by name.
var guids = [2]string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"}

// TestRearmedWatchesDoNotHangOnGUIDs holds the events a reconnecting client's
// re-armed watches fire to one order whatever GUIDs its nodes' names carry:
// two protected lock nodes deleted while the watcher was cut off are told
// in the order of their sequence numbers, whichever GUID sorts first.
func TestRearmedWatchesDoNotHangOnGUIDs(t *testing.T) {
	told := func(first, second string) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer(zkfake.WithSeed(1))
			defer srv.Close()
			owner, _ := connect(t, srv, 30*time.Second)
			watcher, _ := connect(t, srv, 30*time.Second)
			mustCreate(t, owner, "/lock", 0)
			paths := []string{"/lock/_c_" + first + "-lock-0000000001", "/lock/_c_" + second + "-lock-0000000002"}
			for _, p := range paths {
				mustCreate(t, owner, p, 0)
				if _, _, _, err := watcher.GetW(p); err != nil {
					t.Fatal(err)
				}
			}
			watcher.Partition()
			for _, p := range paths {
				if err := owner.Delete(p, -1); err != nil {
					t.Fatal(err)
				}
			}
			// Long enough for the client to notice and reconnect, not
			// for the session to expire.
			time.Sleep(20 * time.Second)
			watcher.Heal()
			time.Sleep(10 * time.Second)
			synctest.Wait()
			for _, r := range srv.Log() {
				if r.Kind == zkfake.RecordWatch && r.Session == watcher.SessionID() {
					out = append(out, r.Path[strings.LastIndexByte(r.Path, '-')+1:])
				}
			}
		})
		return out
	}
	in, reversed := told(guids[0], guids[1]), told(guids[1], guids[0])
	if want := []string{"0000000001", "0000000002"}; !slices.Equal(in, want) || !slices.Equal(reversed, want) {
		t.Fatalf("re-armed watches told the deletes of nodes 1 and 2 as %q, and with the GUIDs swapped as %q; want %q both times", in, reversed, want)
	}
}

// TestEphemeralsInTheOrderTheyWereMade: Server.Ephemerals lists a session's
// nodes in the order they were made, which the harness's own deletes of a
// client's nodes follow.
func TestEphemeralsInTheOrderTheyWereMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		defer srv.Close()
		c, _ := connect(t, srv, 10*time.Second)
		made := []string{"/_c_" + guids[1] + "-n", "/_c_" + guids[0] + "-n", "/m"}
		for _, p := range made {
			mustCreate(t, c, p, zk.FlagEphemeral)
		}
		if got := srv.Ephemerals(c.SessionID()); !slices.Equal(got, made) {
			t.Fatalf("Ephemerals = %q; want the order they were made, %q", got, made)
		}
	})
}
