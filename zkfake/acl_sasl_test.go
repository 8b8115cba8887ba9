package zkfake_test

import (
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// The "sasl" ACL scheme, as a ZooKeeper 3.8.0 ensemble with
// SASLAuthenticationProvider and a JAAS file answered it to raw clients
// that logged in with DIGEST-MD5 (the served fake's logins are tested in
// package wire, on the fake and on that ensemble).

func saslConns(t *testing.T, opts ...zkfake.Option) []*zkfake.Conn {
	t.Helper()
	srv := zkfake.NewServer(opts...)
	t.Cleanup(srv.Close)
	var conns []*zkfake.Conn
	for range 3 {
		c, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns = append(conns, c)
	}
	return conns
}

func saslACL(id string) []zk.ACL { return []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: id}} }

// A sasl entry grants its permissions to the session with that sasl
// identity and to sasl:super, and to no other.
func TestSASLACLMatches(t *testing.T) {
	c := saslConns(t, zkfake.WithSASLScheme())
	user, other, super := c[0], c[1], c[2]
	if _, err := other.Create("/s", []byte("x"), 0, saslACL("jaasuser")); err != nil {
		t.Fatal(err)
	}
	for _, login := range []struct {
		conn *zkfake.Conn
		id   string
	}{{user, "jaasuser"}, {other, "jaasuser2"}, {super, "super"}} {
		if err := login.conn.AddSASLIdentity(login.id); err != nil {
			t.Fatalf("AddSASLIdentity(%q): %v", login.id, err)
		}
	}
	for name, tc := range map[string]struct {
		conn *zkfake.Conn
		want error
	}{"sasl:jaasuser": {user, nil}, "sasl:jaasuser2": {other, zk.ErrNoAuth}, "sasl:super": {super, nil}} {
		if _, _, err := tc.conn.Get("/s"); err != tc.want {
			t.Errorf("Get by %s: %v, want %v", name, err, tc.want)
		}
	}
	// The server lists the identities in its hash set's order, as whoAmI
	// answered these two on the ensemble.
	for _, tc := range []struct {
		conn *zkfake.Conn
		want []zkfake.ClientInfo
	}{
		{user, []zkfake.ClientInfo{{Scheme: "ip", User: "127.0.0.1"}, {Scheme: "sasl", User: "jaasuser"}}},
		{super, []zkfake.ClientInfo{{Scheme: "sasl", User: "super"}, {Scheme: "ip", User: "127.0.0.1"}}},
	} {
		if got, err := tc.conn.WhoAmI(); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("WhoAmI = %v, %v; want %v", got, err, tc.want)
		}
	}
	// The auth scheme takes the sasl identity, not the ip one.
	if _, err := user.Create("/a", nil, 0, []zk.ACL{{Perms: zk.PermRead, Scheme: "auth"}}); err != nil {
		t.Fatal(err)
	}
	if acl, _, err := user.GetACL("/a"); err != nil || !reflect.DeepEqual(acl, []zk.ACL{{Perms: zk.PermRead, Scheme: "sasl", ID: "jaasuser"}}) {
		t.Fatalf("GetACL of an auth ACL: %v, %v", acl, err)
	}
}

// A sasl ACL id is valid when ZooKeeper's KerberosName parses it; without
// WithSASLScheme no sasl entry is, as on a server without the provider.
func TestSASLACLValidity(t *testing.T) {
	c := saslConns(t, zkfake.WithSASLScheme())[0]
	plain := saslConns(t)[0]
	for id, valid := range map[string]bool{
		"jaasuser": true, "": true, "a/b": true, "a/b/c": true, "user@REALM": true, "user/host@REALM": true, "@": true, "user@": true,
		"a@b@c": false, "a/b/c@R": false, "a@b/c": false, "/a/b@R": false,
	} {
		want := error(nil)
		if !valid {
			want = zk.ErrInvalidACL
		}
		if _, err := c.Create("/v", nil, 0, saslACL(id)); err != want {
			t.Errorf("create with sasl:%q: %v, want %v", id, err, want)
		}
		c.Delete("/v", -1)
		if _, err := plain.Create("/v", nil, 0, saslACL(id)); err != zk.ErrInvalidACL {
			t.Errorf("create with sasl:%q on a server without the scheme: %v, want %v", id, err, zk.ErrInvalidACL)
		}
	}
	// A login's name goes through the same parse: one it refuses fails the
	// login before the identity is added.
	if err := c.AddSASLIdentity("a@b@c"); err != zk.ErrBadArguments {
		t.Fatalf("AddSASLIdentity of a malformed name: %v, want %v", err, zk.ErrBadArguments)
	}
	if got, _ := c.WhoAmI(); len(got) != 1 {
		t.Fatalf("WhoAmI after a refused name: %v", got)
	}
}

// A login's identity on a server without the sasl scheme, as on a
// ZooKeeper given a JAAS file but no SASLAuthenticationProvider: the auth
// scheme does not take it ("Missing AuthenticationProvider for sasl", and
// InvalidACL with no other identity) and WhoAmI leaves it out; with the
// scheme, both have it.
func TestSASLIdentityWithoutTheScheme(t *testing.T) {
	for _, scheme := range []bool{false, true} {
		var opts []zkfake.Option
		if scheme {
			opts = append(opts, zkfake.WithSASLScheme())
		}
		c := saslConns(t, opts...)[0]
		if err := c.AddSASLIdentity("jaasuser"); err != nil {
			t.Fatal(err)
		}
		_, err := c.Create("/a", nil, 0, zk.AuthACL(zk.PermAll))
		who, whoErr := c.WhoAmI()
		if whoErr != nil {
			t.Fatal(whoErr)
		}
		listed := false
		for _, info := range who {
			listed = listed || info.Scheme == "sasl"
		}
		if scheme && (err != nil || !listed) {
			t.Errorf("with the scheme: create with the auth scheme %v, WhoAmI %v", err, who)
		}
		if !scheme && (err != zk.ErrInvalidACL || listed) {
			t.Errorf("without the scheme: create with the auth scheme %v (want ErrInvalidACL), WhoAmI %v", err, who)
		}
	}
}

// A login is taken outside the request pipeline: a rule that loses the
// session's next request loses its next request, not the login.
func TestSASLIdentityPassesLossRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithSASLScheme())
		defer srv.Close()
		c, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		srv.LoseReplies(zkfake.ReplyLoss{SessionID: c.SessionID(), Nth: 1})
		if err := c.AddSASLIdentity("jaasuser"); err != nil {
			t.Fatalf("login under a loss rule: %v", err)
		}
		if _, _, err := c.Exists("/"); err != zk.ErrConnectionClosed {
			t.Fatalf("the request after the login: %v, want the loss rule's ErrConnectionClosed", err)
		}
	})
}
