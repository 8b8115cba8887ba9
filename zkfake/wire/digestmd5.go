package wire

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf16"
)

// This file is the server side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper
// 3.8 runs it for a JAAS DigestLoginModule: Java's DigestMD5Server (JDK
// 17, com.sun.security.sasl.digest), created by ZooKeeperSaslServer with
// protocol "zookeeper", server name "zk-sasl-md5" and no properties, and
// ZooKeeper's SaslServerCallbackHandler for the passwords. What it sends,
// and which answers fail a login and how, were checked against a 3.8.0
// ensemble with a raw client (sasl_test.go runs those checks on both).

// The server's names, fixed by ZooKeeper: the realm it offers is its
// server name, and the digest-uri a client must name is protocol/server.
const (
	saslRealm     = "zk-sasl-md5"
	saslDigestURI = "zookeeper/zk-sasl-md5"
)

// maxSASLResponse is the longest token the server evaluates (Java's
// MAX_RESPONSE_LENGTH); a longer one fails the login, at any step.
const maxSASLResponse = 4096

// The two ways a step fails. errSASLRefused is a SaslException, which
// ZooKeeper answers with AUTHFAILED before it closes the connection;
// errSASLBroken is any other exception (Java's Integer.parseInt of a
// malformed number, say), which escapes processSasl: the worker thread
// closes the connection without a reply.
var (
	errSASLRefused = errors.New("DIGEST-MD5 login refused")
	errSASLBroken  = errors.New("DIGEST-MD5 login failed with an exception")
)

func refused(why string) error { return fmt.Errorf("%w: %s", errSASLRefused, why) }
func broken(why string) error  { return fmt.Errorf("%w: %s", errSASLBroken, why) }

// digestServer is one connection's DIGEST-MD5 server: ZooKeeper makes one
// per connection, so a client that reconnects starts a login afresh.
type digestServer struct {
	users map[string]string // user → password, the JAAS Server section's
	// step is Java's: 1 before the challenge, 3 before the client's
	// response, 0 once that response is judged, whatever the verdict.
	step  int
	nonce []byte
}

func newDigestServer(users map[string]string) *digestServer {
	return &digestServer{users: users, step: 1}
}

// evaluate is SaslServer.evaluateResponse: the challenge for the client's
// first token, then, for its digest-response, the rspauth that proves the
// server knows the password too and the user the login proved (user is ""
// until then).
func (d *digestServer) evaluate(response []byte) (reply []byte, user string, err error) {
	if len(response) > maxSASLResponse {
		return nil, "", refused("Invalid digest response length")
	}
	switch d.step {
	case 1:
		// Java 17's server ignores an initial response (a client that
		// tries subsequent authentication) and challenges all the same.
		d.nonce = newNonce()
		d.step = 3
		return d.challenge(), "", nil
	case 3:
		d.step = 0
		v, err := parseDirectives(response)
		if err != nil {
			return nil, "", err
		}
		return d.validate(v)
	}
	return nil, "", refused("Server at illegal state")
}

// newNonce is Java's generateNonce: 30 random bytes in base64, 40
// characters that need no quoting.
func newNonce() []byte {
	raw := make([]byte, 30)
	rand.Read(raw)
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

// challenge is the digest-challenge, directive for directive in the order
// and spelling Java's generateChallenge writes them: the server offers no
// qop (so "auth" alone), the default maxbuf, UTF-8 and no ciphers.
func (d *digestServer) challenge() []byte {
	return fmt.Appendf(nil, `realm="%s",nonce="%s",charset=utf-8,algorithm=md5-sess`, saslRealm, d.nonce)
}

// The directives a digest-response may carry (Java's DIRECTIVE_KEY), by
// index. The count of nonces is looked for as "nonce-count", not as the
// "nc" clients send: the server never reads a client's count, and digests
// with its own, 1.
const (
	dirUsername = iota
	dirRealm
	dirNonce
	dirCnonce
	dirNonceCount
	dirQop
	dirDigestURI
	dirResponse
	dirMaxbuf
	dirCharset
	dirCipher
	dirAuthzid
	dirAuthParam
	numDirectives
)

var directiveKeys = [numDirectives]string{
	"username", "realm", "nonce", "cnonce", "nonce-count", "qop", "digest-uri",
	"response", "maxbuf", "charset", "cipher", "authzid", "auth-param",
}

// directives holds a response's values by index, nil where absent (an
// empty value is present: authzid="" still enters the digest).
type directives [numDirectives][]byte

// set records key=value. A key is compared without regard to ASCII case,
// as Java's equalsIgnoreCase compares the key it decoded; keys it does not
// know are ignored, and a known key given twice fails the login.
func (v *directives) set(key, value []byte) error {
	for i, k := range directiveKeys {
		if !bytes.EqualFold(key, []byte(k)) || !isASCII(key) {
			continue
		}
		if v[i] != nil {
			return refused("peer sent more than one " + k + " directive")
		}
		v[i] = append([]byte{}, value...)
		return nil
	}
	return nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// parseDirectives reads a digest-response as Java's parseDirectives does,
// byte by byte: key=value pairs separated by commas or linear white space,
// a value quoted or not, a backslash in a quoted value taking the next
// byte as it is.
func parseDirectives(buf []byte) (directives, error) {
	var v directives
	var key, value []byte
	gettingKey, quoted, expectSeparator := true, false, false
	i := skipLWS(buf, 0)
	for i < len(buf) {
		c := buf[i]
		switch {
		case gettingKey:
			switch {
			case c == ',':
				if len(key) != 0 {
					return v, refused("Directive key contains a ','")
				}
				i = skipLWS(buf, i+1)
			case c == '=':
				if len(key) == 0 {
					return v, refused("Empty directive key")
				}
				gettingKey = false
				if i = skipLWS(buf, i+1); i >= len(buf) {
					return v, refused("Valueless directive found")
				}
				if buf[i] == '"' {
					quoted = true
					i++
				}
			case isLWS(c):
				if i = skipLWS(buf, i+1); i >= len(buf) || buf[i] != '=' {
					return v, refused("'=' expected after key")
				}
			default:
				key = append(key, c)
				i++
			}
		case quoted:
			switch c {
			case '\\':
				if i++; i >= len(buf) {
					return v, refused("Unmatched quote found")
				}
				value = append(value, buf[i])
				i++
			case '"':
				quoted, expectSeparator = false, true
				i++
			default:
				value = append(value, c)
				i++
			}
		case isLWS(c) || c == ',':
			if err := v.set(key, value); err != nil {
				return v, err
			}
			key, value = nil, nil
			gettingKey, expectSeparator = true, false
			i = skipLWS(buf, i+1)
		case expectSeparator:
			return v, refused("Expecting comma or linear whitespace after quoted string")
		default:
			value = append(value, c)
			i++
		}
	}
	if quoted {
		return v, refused("Unmatched quote found")
	}
	if len(key) > 0 {
		return v, v.set(key, value)
	}
	return v, nil
}

// isLWS is Java's isLws: CR, LF, space or tab, byte by byte.
func isLWS(c byte) bool { return c == '\r' || c == '\n' || c == ' ' || c == '\t' }

func skipLWS(buf []byte, i int) int {
	for i < len(buf) && isLWS(buf[i]) {
		i++
	}
	return i
}

// validate is Java's validateClientResponse, its checks in its order — so
// that a response with several faults fails as the server's does — with
// the password from the users and the authorization ZooKeeper's callback
// grants: whatever authzid the client names, the login proves its
// username. (Not modelled: for a user name with an '@' whose realm no
// krb5.conf knows, ZooKeeper's callback fails to shorten the name, logs
// it, and leaves Java's default, the client's authzid, as the identity.)
func (d *digestServer) validate(v directives) (rspauth []byte, user string, err error) {
	if cs := v[dirCharset]; cs != nil && javaString(cs) != "utf-8" {
		return nil, "", refused("Incompatible charset value")
	}
	if mb := v[dirMaxbuf]; mb != nil {
		if _, ok := javaParseInt(javaString(mb), 10); !ok {
			return nil, "", broken("NumberFormatException in maxbuf")
		}
	}
	if v[dirUsername] == nil {
		return nil, "", refused("Missing username")
	}
	user = javaString(v[dirUsername])
	realm := ""
	if v[dirRealm] != nil {
		realm = javaString(v[dirRealm])
	}
	if realm != saslRealm {
		return nil, "", refused("Nonexistent realm")
	}
	if v[dirNonce] == nil {
		return nil, "", refused("Missing nonce")
	}
	if !bytes.Equal(v[dirNonce], d.nonce) {
		return nil, "", refused("Mismatched nonce")
	}
	if v[dirCnonce] == nil {
		return nil, "", refused("Missing cnonce")
	}
	if nc := v[dirNonceCount]; nc != nil {
		n, ok := javaParseInt(javaString(nc), 16)
		if !ok {
			return nil, "", broken("NumberFormatException in nonce-count")
		}
		if n != 1 {
			return nil, "", refused("Nonce count does not match")
		}
	}
	// The server offers qop "auth" alone: "auth-int" and "auth-conf" it
	// does not support, anything else is no qop.
	if qop := v[dirQop]; qop != nil && javaString(qop) != "auth" {
		return nil, "", refused("Invalid or unsupported QOP")
	}
	if v[dirDigestURI] == nil || !javaEqualFold(javaString(v[dirDigestURI]), saslDigestURI) {
		return nil, "", refused("Mismatched URI")
	}
	// The digest is over the client's own spelling of the URI.
	uri := javaString(v[dirDigestURI])
	if v[dirResponse] == nil {
		return nil, "", refused("Missing response")
	}
	password, ok := d.users[user]
	if !ok {
		return nil, "", refused("cannot acquire password for " + user)
	}
	digest := func(method string) []byte {
		return responseValue(method, uri, user, password, d.nonce, v[dirCnonce], v[dirAuthzid])
	}
	if !bytes.Equal(v[dirResponse], digest("AUTHENTICATE")) {
		return nil, "", refused("Mismatched response")
	}
	return append([]byte("rspauth="), digest("")...), user, nil
}

// responseValue is RFC 2831's response-value with qop "auth" and a nonce
// count of 1, as Java's generateResponseValue computes it: method is
// "AUTHENTICATE" for the client's response, "" for the server's rspauth.
func responseValue(method, uri, user, password string, nonce, cnonce, authzid []byte) []byte {
	hexMD5 := func(parts ...[]byte) []byte {
		sum := md5.Sum(bytes.Join(parts, nil))
		return []byte(hex.EncodeToString(sum[:]))
	}
	colon := []byte(":")
	secret := md5.Sum(bytes.Join([][]byte{latin1OrUTF8(user), latin1OrUTF8(saslRealm), latin1OrUTF8(password)}, colon))
	a1 := [][]byte{secret[:], colon, nonce, colon, cnonce}
	if authzid != nil {
		a1 = append(a1, colon, authzid)
	}
	a2 := hexMD5([]byte(method + ":" + uri))
	return hexMD5(hexMD5(a1...), colon, nonce, []byte(":00000001:"), cnonce, []byte(":auth:"), a2)
}

// latin1OrUTF8 is Java's stringToByte_8859_1 with UTF-8 on: a string
// whose characters all fit ISO 8859-1 in that encoding, any other in
// UTF-8.
func latin1OrUTF8(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return []byte(s)
		}
		out = append(out, byte(r))
	}
	return out
}

// javaString is the string Java decodes from UTF-8 bytes: malformed
// bytes become U+FFFD.
func javaString(b []byte) string { return string([]rune(string(b))) }

// javaEqualFold is Java's String.equalsIgnoreCase: UTF-16 units compared
// one by one, equal if equal as they are, in upper case, or in the lower
// case of their upper case.
func javaEqualFold(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	if len(ua) != len(ub) {
		return false
	}
	for i := range ua {
		x, y := rune(ua[i]), rune(ub[i])
		if x == y {
			continue
		}
		if x, y = unicode.ToUpper(x), unicode.ToUpper(y); x != y && unicode.ToLower(x) != unicode.ToLower(y) {
			return false
		}
	}
	return true
}

// javaParseInt is Java's Integer.parseInt(s, radix): an optional sign,
// then at least one digit as Character.digit reads them — decimal digits
// of any script, Latin letters, ASCII or fullwidth, past 9 — within an
// int32.
func javaParseInt(s string, radix int) (int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for _, r := range s {
		d := javaDigit(r)
		if d < 0 || d >= radix {
			return 0, false
		}
		if n = n*int64(radix) + int64(d); n > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// javaDigit is the value Java's Character.digit gives r in radix 36, or
// -1.
func javaDigit(r rune) int {
	switch {
	case unicode.IsDigit(r):
		// Nd digits come in runs of ten from a zero; adjacent runs
		// continue one another, so the value is the offset modulo 10.
		zero := r
		for unicode.IsDigit(zero - 1) {
			zero--
		}
		return int(r-zero) % 10
	case r >= 'a' && r <= 'z':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'Z':
		return int(r-'A') + 10
	case r >= '\uff41' && r <= '\uff5a': // fullwidth a-z
		return int(r-'\uff41') + 10
	case r >= '\uff21' && r <= '\uff3a': // fullwidth A-Z
		return int(r-'\uff21') + 10
	}
	return -1
}
