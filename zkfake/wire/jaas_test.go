package wire_test

import (
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/zksim/zksim/zkfake/wire"
)

// JAASUsers reads what Java's ConfigFile reads (each file checked with Java
// 25's): the kazoo harness's file, and users written in the other ways its
// tokenizer allows.
func TestJAASUsers(t *testing.T) {
	kazoo := map[string]string{"super": "super_secret", "jaasuser": "jaas_password"}
	for _, tc := range []struct {
		what, conf string
		want       map[string]string
	}{
		{"the repository's file, kazoo's users", "", kazoo},
		{"kazoo's harness's text", `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};`, kazoo},
		{"comments, other sections, bare words, a flag in any case", `
// the client's side
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="x"; };
/* the server's
   side */ Server {
	org.apache.zookeeper.server.auth.DigestLoginModule Required
	user_super = "super_secret" / a lone slash comments out the rest of its line
	user_jaasuser=jaas_password username="not a user";
};`, kazoo},
		{"two modules, escapes in quotes, a quoted key", `Server {
	org.apache.zookeeper.server.auth.DigestLoginModule optional user_a="tab\there" user_b="\101\060\1";
	org.apache.zookeeper.server.auth.DigestLoginModule sufficient "user_c d"="q\"uote" user_a="later";
};`, map[string]string{"a": "later", "b": "A0\x01", "c d": `q"uote`}},
		{"a section without users", "Server { org.apache.zookeeper.server.auth.DigestLoginModule required; };", map[string]string{}},
	} {
		conf := []byte(tc.conf)
		if tc.conf == "" {
			conf = []byte(mustRead(t, "../../testdata/sasl/jaas.conf"))
		}
		got, err := wire.JAASUsers(conf)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: JAASUsers = %v, %v; want %v", tc.what, got, err, tc.want)
		}
	}
}

// What Java refuses, JAASUsers refuses (each file checked with Java 25's
// ConfigFile), and so it does what the fake cannot serve: a file with no
// Server section, a login module that is not DigestLoginModule, a system
// property to expand.
func TestJAASUsersRefuses(t *testing.T) {
	const module = "org.apache.zookeeper.server.auth.DigestLoginModule"
	for what, conf := range map[string]string{
		"no Server section":         "Client { " + module + " required user_a=\"b\"; };",
		"an empty file":             "",
		"no closing semicolon":      "Server { " + module + " required user_a=\"b\"; }",
		"no control flag":           "Server { " + module + " user_a=\"b\"; };",
		"an unknown control flag":   "Server { " + module + " always user_a=\"b\"; };",
		"a value that is a number":  "Server { " + module + " required user_a=123; };",
		"an option without a value": "Server { " + module + " required user_a=; };",
		"an unclosed section":       "Server { " + module + " required user_a=\"b\";",
		"two Server sections":       "Server { " + module + " required; }; Server { " + module + " required; };",
		"a Kerberos login module":   "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };",
		"a system property":         "Server { " + module + " required user_a=\"${user.home}\"; };",
		"a stray character":         "Server { " + module + " required user_a=\"b\" #; };",
	} {
		if users, err := wire.JAASUsers([]byte(conf)); err == nil {
			t.Errorf("%s: JAASUsers = %v, want an error", what, users)
		} else if !strings.HasPrefix(err.Error(), "jaas: ") {
			t.Errorf("%s: error %q, want it to start with \"jaas: \"", what, err)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
