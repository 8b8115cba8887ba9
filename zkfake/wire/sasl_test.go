package wire_test

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/jute"
	"github.com/zksim/zksim/zkfake/wire"
)

// This file holds the served fake's SASL DIGEST-MD5 logins to what
// ZooKeeper 3.8.0 answers: a raw client logs in, fails to, and sends what
// no SASL library would. On the served fake the users are those of
// testdata/sasl/jaas.conf; with ZK_SERVERS set the tests run against the
// first server named there, which must have them (.ci/ensemble gives its
// members that file).

// saslUsers reads the users the tests log in as, the ensemble's.
func saslUsers(t testing.TB) map[string]string {
	t.Helper()
	conf, err := os.ReadFile("../../testdata/sasl/jaas.conf")
	if err != nil {
		t.Fatal(err)
	}
	users, err := wire.JAASUsers(conf)
	if err != nil {
		t.Fatal(err)
	}
	return users
}

// saslAddress is a served fake with those users and the sasl ACL scheme,
// or the first of ZK_SERVERS.
func saslAddress(t *testing.T) string {
	if servers := os.Getenv("ZK_SERVERS"); servers != "" {
		return strings.Split(servers, ",")[0]
	}
	return serveWith(t, []zkfake.Option{zkfake.WithSASLScheme()}, wire.WithSASLUsers(saslUsers(t)))
}

func serveWith(t *testing.T, opts []zkfake.Option, wireOpts ...wire.Option) string {
	t.Helper()
	srv := zkfake.NewServer(append(opts, zkfake.WithTickTime(testTick))...)
	l, err := wire.Listen(srv, "127.0.0.1:0", wireOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		srv.Close()
	})
	return l.Addr().String()
}

// saslSession is a raw session that logs in.
type saslSession struct {
	rawSession
	t      *testing.T
	addr   string
	id     int64
	passwd []byte
}

func openSASL(t *testing.T, addr string) *saslSession {
	t.Helper()
	c := dialRaw(t, addr)
	_, id, passwd := c.connect(4000, 0, make([]byte, 16))
	return &saslSession{rawSession: rawSession{c: c}, t: t, addr: addr, id: id, passwd: passwd}
}

// send sends a SASL token, nil as a null buffer.
func (s *saslSession) send(token []byte) {
	s.xid++
	s.c.write(frame(cat(be32(s.xid), be32(jute.OpSASL), saslBuffer(token))))
}

func saslBuffer(b []byte) []byte {
	if b == nil {
		return be32(-1)
	}
	return cat(be32(int32(len(b))), b)
}

// reply reads the reply to the last request: its whole frame, which must
// be the reply to it.
func (s *saslSession) reply() []byte {
	s.t.Helper()
	r := s.c.read()
	if len(r) < 16 || int32(binary.BigEndian.Uint32(r)) != s.xid {
		s.t.Fatalf("reply %x, want one to xid %d", r, s.xid)
	}
	return r
}

// token reads the reply to a token that the server must take: zxid 0, no
// error, and the server's token.
func (s *saslSession) token() []byte {
	s.t.Helper()
	r := s.reply()
	if zxid, code := int64(binary.BigEndian.Uint64(r[4:])), int32(binary.BigEndian.Uint32(r[12:])); zxid != 0 || code != 0 {
		s.t.Fatalf("reply to a SASL token: zxid %d, code %d, want 0 and 0 (%x)", zxid, code, r)
	}
	n := int32(binary.BigEndian.Uint32(r[16:]))
	if n < 0 || int(n) != len(r)-20 {
		s.t.Fatalf("reply's token of length %d in %x", n, r)
	}
	return r[20:]
}

// refused checks the server's refusal of the last token, as the real
// server sends it: AUTHFAILED with zxid 0 and a null token; then it
// closes the connection, answering nothing more.
func (s *saslSession) refused(what string) {
	s.t.Helper()
	if got, want := s.c.read(), cat(be32(s.xid), be64(0), be32(jute.CodeAuthFailed), be32(-1)); !bytes.Equal(got, want) {
		s.t.Fatalf("%s: reply %x, want %x (AUTHFAILED)", what, got, want)
	}
	s.closedUnanswered(what + ", after AUTHFAILED")
}

// closedUnanswered checks that the connection closes with nothing more
// from the server.
func (s *saslSession) closedUnanswered(what string) {
	s.t.Helper()
	s.c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := s.c.nc.Read(make([]byte, 64))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		s.t.Fatalf("%s: connection still open after 5s", what)
	}
	if n > 0 {
		s.t.Fatalf("%s: %d more bytes, want the connection closed", what, n)
	}
	s.end()
}

// end closes the session, over a new connection if the server closed
// its own, so that on a real ensemble no expiry of it comes later, in the
// middle of another test's writes.
func (s *saslSession) end() {
	s.t.Helper()
	c := dialRaw(s.t, s.addr)
	c.connect(4000, s.id, s.passwd)
	(&rawSession{c: c}).close()
}

var challengeShape = regexp.MustCompile(`^realm="zk-sasl-md5",nonce="([A-Za-z0-9+/]{40})",charset=utf-8,algorithm=md5-sess$`)

// challenge sends the first token and returns the challenge's nonce,
// checking the challenge is the server's to the byte but for the nonce.
func (s *saslSession) challenge(first []byte) string {
	s.t.Helper()
	s.send(first)
	ch := s.token()
	m := challengeShape.FindSubmatch(ch)
	if m == nil {
		s.t.Fatalf("challenge %q, want the shape %s", ch, challengeShape)
	}
	return string(m[1])
}

// digest is a client's DIGEST-MD5 answer (RFC 2831), computed as kazoo's
// pure-sasl computes it.
type digest struct {
	user, password, uri, authzid string
	cnonce                       string
}

func hexMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// response returns the digest-response to nonce and the rspauth the
// server must answer it with.
func (d digest) response(nonce string) (response, rspauth string) {
	if d.uri == "" {
		d.uri = "zookeeper/zk-sasl-md5"
	}
	if d.cnonce == "" {
		d.cnonce = "OA6MHXh6VqTrRk"
	}
	secret := md5.Sum([]byte(d.user + ":zk-sasl-md5:" + d.password))
	a1 := string(secret[:]) + ":" + nonce + ":" + d.cnonce
	if d.authzid != "" {
		a1 += ":" + d.authzid
	}
	kd := func(a2 string) string {
		return hexMD5(hexMD5(a1) + ":" + nonce + ":00000001:" + d.cnonce + ":auth:" + hexMD5(a2))
	}
	response = fmt.Sprintf(`charset=utf-8,username="%s",realm="zk-sasl-md5",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		d.user, nonce, d.cnonce, d.uri, kd("AUTHENTICATE:"+d.uri))
	if d.authzid != "" {
		response += `,authzid="` + d.authzid + `"`
	}
	return response, "rspauth=" + kd(":"+d.uri)
}

// login logs in and checks the server's rspauth.
func (s *saslSession) login(user, password string) {
	s.t.Helper()
	resp, rspauth := digest{user: user, password: password}.response(s.challenge([]byte{}))
	s.send([]byte(resp))
	if got := s.token(); string(got) != rspauth {
		s.t.Fatalf("login as %s: server's token %q, want %q", user, got, rspauth)
	}
}

// whoAmI returns the session's identities as "scheme:user".
func (s *saslSession) whoAmI() []string {
	s.t.Helper()
	code, body := s.ask(jute.OpWhoAmI, nil)
	r := jute.NewReader(body)
	var ids []string
	for n := r.Int32(); n > 0 && r.Err() == nil; n-- {
		ids = append(ids, r.String()+":"+r.String())
	}
	if code != 0 || r.Err() != nil {
		s.t.Fatalf("whoAmI: code %d, %x", code, body)
	}
	return ids
}

func saslACL(id string) []byte { return cat(be32(1), be32(31), str("sasl"), str(id)) }

// A good login: the server challenges, checks the digest, proves it knows
// the password too, and the session has the identity sasl:USER, which a
// sasl ACL grants to it and to sasl:super alone.
func TestSASLLoginAnsweredAsTheServer(t *testing.T) {
	addr := saslAddress(t)
	user := openSASL(t, addr)
	user.login("jaasuser", "jaas_password")
	if got, want := fmt.Sprint(user.whoAmI()), "[ip:127.0.0.1 sasl:jaasuser]"; got != want {
		t.Errorf("whoAmI after the login: %s, want %s", got, want)
	}
	path := fmt.Sprintf("/sasl-%d", time.Now().UnixNano())
	if code, _ := user.ask(jute.OpCreate, cat(str(path), be32(1), []byte("x"), saslACL("jaasuser"), be32(0))); code != 0 {
		t.Fatalf("create %s with sasl:jaasuser's ACL: code %d", path, code)
	}
	other := openSASL(t, addr)
	defer other.close()
	super := openSASL(t, addr)
	defer super.close()
	super.login("super", "super_secret")
	for _, s := range []struct {
		who     string
		session *saslSession
		want    int32
	}{{"sasl:jaasuser", user, 0}, {"a session without a login", other, jute.CodeNoAuth}, {"sasl:super", super, 0}} {
		if code, _ := s.session.ask(jute.OpGetData, cat(str(path), []byte{0})); code != s.want {
			t.Errorf("getData %s by %s: code %d, want %d", path, s.who, code, s.want)
		}
	}
	if code, _ := user.ask(jute.OpDelete, cat(str(path), be32(-1))); code != 0 {
		t.Errorf("delete %s: code %d", path, code)
	}
	// The login is over: any further token fails it, and closes.
	user.send([]byte{})
	user.refused("a token after the login")
}

// Bad credentials: the server refuses the digest-response with AUTHFAILED
// and closes the connection, leaving a request sent behind it unanswered.
func TestSASLBadCredentialsAnsweredAsTheServer(t *testing.T) {
	addr := saslAddress(t)
	for _, tc := range []struct{ what, user, password string }{
		{"a bad password", "jaasuser", "not_the_password"},
		{"a bad user", "baduser", "badpassword"},
	} {
		s := openSASL(t, addr)
		resp, _ := digest{user: tc.user, password: tc.password}.response(s.challenge([]byte{}))
		s.xid++
		getData := frame(cat(be32(s.xid+1), be32(jute.OpGetData), str("/"), []byte{0}))
		s.c.write(cat(frame(cat(be32(s.xid), be32(jute.OpSASL), saslBuffer([]byte(resp)))), getData))
		s.refused(tc.what)
	}
}

// Tokens no SASL library sends, each answered as the real server answers
// it: the response's directives are read and checked as Java's
// DigestMD5Server reads and checks them, in its order; what it refuses
// fails the login with AUTHFAILED, and what throws another exception
// (Java's Integer.parseInt of a malformed number) closes the connection
// with no reply at all.
func TestSASLTokensAnsweredAsTheServer(t *testing.T) {
	addr := saslAddress(t)
	good := digest{user: "jaasuser", password: "jaas_password"}
	const (
		ok       = "ok"
		refused  = "refused"
		unanswer = "closed unanswered"
	)
	for _, tc := range []struct {
		what      string
		first     string                // the first token
		nullFirst bool                  // sends a null buffer as the first token instead
		edit      func(r string) string // edits the digest-response; nil: none is sent
		d         *digest               // computes it, if not good
		want      string
	}{
		{what: "a first token that is not empty is ignored", first: "xyz", edit: same, want: ok},
		{what: "a first token of 4096 bytes is ignored", first: strings.Repeat("x", 4096), edit: same, want: ok},
		{what: "a first token of 4097 bytes", first: strings.Repeat("x", 4097), want: refused},
		{what: "a null first token", nullFirst: true, want: unanswer},
		{what: "another mechanism's login (PLAIN)", first: "\x00jaasuser\x00jaas_password", edit: func(string) string { return "\x00jaasuser\x00jaas_password" }, want: refused},
		{what: "a digest-uri in capitals, digested as sent", d: &digest{user: "jaasuser", password: "jaas_password", uri: "ZOOKEEPER/ZK-SASL-MD5"}, edit: same, want: ok},
		{what: "a digest-uri with a Kelvin sign for its k", d: &digest{user: "jaasuser", password: "jaas_password", uri: "zoo\u212aeeper/zk-sasl-md5"}, edit: same, want: ok},
		{what: "an authzid, digested, proves the username", d: &digest{user: "jaasuser", password: "jaas_password", authzid: "super"}, edit: same, want: ok},
		{what: "a quoted-pair in a value", edit: replace(`username="jaasuser"`, `username="jaas\user"`), want: ok},
		{what: "spaces, empty elements and an unknown directive", edit: func(r string) string { return " , foo=bar ,, " + strings.ReplaceAll(r, ",", " , ") }, want: ok},
		{what: "nc, which the server does not read", edit: replace("nc=00000001", "nc=00000002"), want: ok},
		{what: "nonce-count=1, which it reads", edit: suffix(",nonce-count=1"), want: ok},
		{what: "nonce-count=+1, in a fullwidth digit", edit: suffix(",nonce-count=+\uff11"), want: ok},
		{what: "nonce-count=2", edit: suffix(",nonce-count=2"), want: refused},
		{what: "nonce-count not a number", edit: suffix(",nonce-count=zz"), want: unanswer},
		{what: "maxbuf not a number", edit: replace("maxbuf=65536", "maxbuf=abc"), want: unanswer},
		{what: "maxbuf in Arabic-Indic digits", edit: replace("maxbuf=65536", "maxbuf=\u0666\u0665\u0665\u0663\u0666"), want: ok},
		{what: "maxbuf past an int", edit: replace("maxbuf=65536", "maxbuf=2147483648"), want: unanswer},
		{what: "charset in capitals", edit: replace("charset=utf-8", "charset=UTF-8"), want: refused},
		{what: "no realm", edit: replace(`realm="zk-sasl-md5",`, ""), want: refused},
		{what: "another nonce", edit: func(r string) string {
			return regexp.MustCompile(`,nonce="[^"]*"`).ReplaceAllString(r, `,nonce="AAAA"`)
		}, want: refused},
		{what: "qop auth-int", edit: replace("qop=auth", "qop=auth-int"), want: refused},
		{what: "a username given twice", edit: suffix(`,username="jaasuser"`), want: refused},
		{what: "an unmatched quote", edit: suffix(`,cipher="rc4`), want: refused},
		{what: "the response in capitals", edit: func(r string) string {
			i := strings.Index(r, "response=") + len("response=")
			return r[:i] + strings.ToUpper(r[i:i+32]) + r[i+32:]
		}, want: refused},
		{what: "an empty response", edit: func(string) string { return "" }, want: refused},
		{what: "a bad charset, checked before a malformed maxbuf", edit: func(r string) string {
			return replace("maxbuf=65536", "maxbuf=abc")(replace("charset=utf-8", "charset=latin1")(r))
		}, want: refused},
		{what: "a malformed maxbuf, read before a missing username", edit: func(r string) string {
			return replace("maxbuf=65536", "maxbuf=abc")(regexp.MustCompile(`username="[^"]*",`).ReplaceAllString(r, ""))
		}, want: unanswer},
	} {
		t.Run(tc.what, func(t *testing.T) {
			s := openSASL(t, addr)
			if tc.nullFirst {
				s.send(nil)
			} else {
				s.send([]byte(tc.first))
			}
			switch {
			case tc.edit == nil && tc.want == unanswer:
				s.closedUnanswered(tc.what)
				return
			case tc.edit == nil:
				s.refused(tc.what)
				return
			}
			ch := s.token()
			nonce := challengeShape.FindSubmatch(ch)
			if nonce == nil {
				t.Fatalf("challenge %q", ch)
			}
			d := good
			if tc.d != nil {
				d = *tc.d
			}
			resp, rspauth := d.response(string(nonce[1]))
			s.send([]byte(tc.edit(resp)))
			switch tc.want {
			case ok:
				if got := s.token(); string(got) != rspauth {
					t.Fatalf("server's token %q, want %q", got, rspauth)
				}
				if got, want := fmt.Sprint(s.whoAmI()), "[ip:127.0.0.1 sasl:jaasuser]"; got != want {
					t.Errorf("whoAmI after the login: %s, want %s", got, want)
				}
				s.close()
			case refused:
				s.refused(tc.what)
			default:
				s.closedUnanswered(tc.what)
			}
		})
	}
}

func same(r string) string { return r }

func replace(old, new string) func(string) string {
	return func(r string) string { return strings.Replace(r, old, new, 1) }
}

func suffix(s string) func(string) string { return func(r string) string { return r + s } }

// The sasl ACL scheme: an id is valid when Kerberos can parse it, and the
// auth scheme takes a session's sasl identity.
func TestSASLACLsAnsweredAsTheServer(t *testing.T) {
	addr := saslAddress(t)
	s := openSASL(t, addr)
	defer s.close()
	base := fmt.Sprintf("/sasl-acl-%d", time.Now().UnixNano())
	for id, want := range map[string]int32{
		"jaasuser": 0, "": 0, "a/b/c": 0, "user@REALM": 0, "user/host@REALM": 0,
		"a@b@c": jute.CodeInvalidACL, "a/b/c@REALM": jute.CodeInvalidACL, "/a/b@R": jute.CodeInvalidACL,
	} {
		if code, _ := s.ask(jute.OpCreate, cat(str(base), be32(0), saslACL(id), be32(0))); code != want {
			t.Errorf("create with sasl:%q: code %d, want %d", id, code, want)
		}
		s.ask(jute.OpDelete, cat(str(base), be32(-1)))
	}
	s.login("jaasuser", "jaas_password")
	authACL := cat(be32(1), be32(zkPermRead), str("auth"), str(""))
	if code, _ := s.ask(jute.OpCreate, cat(str(base), be32(0), authACL, be32(0))); code != 0 {
		t.Fatalf("create with the auth scheme: code %d", code)
	}
	defer s.ask(jute.OpDelete, cat(str(base), be32(-1)))
	code, body := s.ask(jute.OpGetACL, str(base))
	if want := cat(be32(1), be32(zkPermRead), str("sasl"), str("jaasuser")); code != 0 || !bytes.HasPrefix(body, want) {
		t.Fatalf("getACL of an auth ACL: code %d, %x; want the ACL %x", code, body, want)
	}
}

const zkPermRead = 1

// A listener without users has no SASL, as a 3.8.0 server without a JAAS
// file has none (read from the ensemble before .ci/ensemble gave it one):
// it answers every token, whatever it holds, with no error and a null
// token, and carries on; a null token still closes the connection.
func TestSASLWithoutUsersAnsweredAsTheServer(t *testing.T) {
	addr := serveWith(t, nil)
	s := openSASL(t, addr)
	for _, token := range [][]byte{{}, []byte("hello"), bytes.Repeat([]byte("x"), 5000)} {
		s.send(token)
		if got, want := s.reply(), cat(be32(s.xid), be64(0), be32(0), be32(-1)); !bytes.Equal(got, want) {
			t.Fatalf("reply to a %d-byte token: %x, want %x", len(token), got, want)
		}
	}
	if code, _ := s.ask(jute.OpExists, cat(str("/"), []byte{0})); code != 0 {
		t.Fatalf("exists / after the tokens: code %d", code)
	}
	s.send(nil)
	s.closedUnanswered("a null token")
}

// Users whose names hold an '@': the server parses the name a login proved
// as a Kerberos principal, and one it cannot parse throws, which closes
// the connection unanswered; the others log in under their names as they
// are. (Read from a standalone 3.8.0 server given this JAAS file: the
// ensemble's users have no '@'.)
func TestSASLKerberosNamesAnsweredAsTheServer(t *testing.T) {
	users, err := wire.JAASUsers([]byte(`Server {
		org.apache.zookeeper.server.auth.DigestLoginModule required
		"user_a@b@c"="pw1" "user_u@REALM"="pw2" "user_u/h@"="pw3";
	};`))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWith(t, []zkfake.Option{zkfake.WithSASLScheme()}, wire.WithSASLUsers(users))
	for _, tc := range []struct{ user, password, whoAmI string }{
		{"u@REALM", "pw2", "[sasl:u@REALM ip:127.0.0.1]"},
		{"u/h@", "pw3", "[sasl:u/h@ ip:127.0.0.1]"},
	} {
		s := openSASL(t, addr)
		s.login(tc.user, tc.password)
		if got := fmt.Sprint(s.whoAmI()); got != tc.whoAmI {
			t.Errorf("whoAmI after logging in as %s: %s, want %s", tc.user, got, tc.whoAmI)
		}
		s.close()
	}
	s := openSASL(t, addr)
	resp, _ := digest{user: "a@b@c", password: "pw1"}.response(s.challenge([]byte{}))
	s.send([]byte(resp))
	s.closedUnanswered("a login as a@b@c")
}
