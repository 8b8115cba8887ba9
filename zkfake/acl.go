package zkfake

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/go-zookeeper/zk"
)

// authID is one identity a session has proved, as ZooKeeper's Id: a scheme
// and an id within it ("ip"/"127.0.0.1", "digest"/"user:base64(sha1)").
type authID struct {
	scheme, id string
}

// clientIP is the address every fake session connects from, so "ip" ACLs
// behave as they do for a client on loopback.
const clientIP = "127.0.0.1"

// digestID turns "user:password" into the id ZooKeeper's digest scheme
// stores: "user:" + base64(sha1("user:password")).
// Like the server, it takes the whole string as the user when there is no
// colon.
func digestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// checkACL reports whether a session with ids may do perm on a node with acl,
// as ZooKeeper's checkACL decides: the super user is not modelled, an empty
// ACL list allows everything, and any matching entry with the bit grants it.
// A sasl entry matches as SASLAuthenticationProvider.matches does: the
// session's sasl identity is the entry's, or is "super".
func checkACL(acl []zk.ACL, perm int32, ids []authID) error {
	if len(acl) == 0 {
		return nil
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		switch a.Scheme {
		case "world":
			if a.ID == "anyone" {
				return nil
			}
		case "ip":
			if ipMatches(a.ID, clientIP) {
				return nil
			}
		case "sasl":
			for _, id := range ids {
				if id.scheme == "sasl" && (id.id == "super" || id.id == a.ID) {
					return nil
				}
			}
		default:
			for _, id := range ids {
				if id.scheme == a.Scheme && id.id == a.ID {
					return nil
				}
			}
		}
	}
	return zk.ErrNoAuth
}

// ipMatches implements the ip scheme as ZooKeeper 3.8's
// IPAuthenticationProvider.matches does: the pattern's address and the
// client's, both masked to the pattern's prefix length, are equal.
func ipMatches(pattern, addr string) bool {
	p, bits, ok := ipPattern(pattern)
	if !ok {
		return false
	}
	a, ok := ipv4(addr)
	return ok && masked(p, bits) == masked(a, bits)
}

// ipPattern reads an ip ACL id, "address" or "address/bits", as ZooKeeper
// 3.8 reads it: an IPv4 address only (its IPv6 parsing is a TODO there,
// so "::1" is refused) and a prefix length from 0 to 32, both numbers read
// by Java's Integer.parseInt.
func ipPattern(id string) (addr [4]byte, bits int, ok bool) {
	a, b, hasBits := strings.Cut(id, "/")
	if addr, ok = ipv4(a); !ok {
		return addr, 0, false
	}
	if !hasBits {
		return addr, 32, true
	}
	n, ok := javaParseInt(b)
	return addr, n, ok && n >= 0 && n <= 32
}

// ipv4 reads a dotted quad as ZooKeeper 3.8's v4addr2Bytes does: exactly
// four parts, each a Java integer from 0 to 255 — so "010.0.0.1", "+1.2.3.4"
// and fullwidth digits pass, "1.2.3.4." does not.
func ipv4(s string) (addr [4]byte, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return addr, false
	}
	for i, part := range parts {
		v, ok := javaParseInt(part)
		if !ok || v < 0 || v > 255 {
			return addr, false
		}
		addr[i] = byte(v)
	}
	return addr, true
}

// javaParseInt is Java's Integer.parseInt(s, 10): an optional sign, then
// one or more decimal digits of any script, within an int32.
func javaParseInt(s string) (int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	n := int64(0)
	for _, r := range s {
		d := unicodeDigit(r)
		if d < 0 {
			return 0, false
		}
		n = n*10 + int64(d)
		if n > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, false
	}
	return int(n), true
}

// unicodeDigit is Java's Character.digit(r, 10) for decimal digits: the
// value of a character of Unicode category Nd, or -1.
func unicodeDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if !unicode.IsDigit(r) {
		return -1
	}
	// Nd characters come in blocks of ten consecutive code points from a
	// zero, and adjacent blocks run on: the run's start is a zero.
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10
}

// masked keeps the first bits bits of addr.
func masked(addr [4]byte, bits int) [4]byte {
	for i := range addr {
		switch keep := bits - 8*i; {
		case keep <= 0:
			addr[i] = 0
		case keep < 8:
			addr[i] &= byte(0xff << (8 - keep))
		}
	}
	return addr
}

// fixupACL validates an ACL list given to create or setACL and expands the
// "auth" scheme into the session's authenticated ids, as ZooKeeper's
// PrepRequestProcessor.fixupACL does. sasl says whether the server has the
// "sasl" scheme (WithSASLScheme).
func fixupACL(acl []zk.ACL, ids []authID, sasl bool) ([]zk.ACL, error) {
	if len(acl) == 0 {
		return nil, zk.ErrInvalidACL
	}
	// Nearly every node has a single world:anyone entry: share one
	// immutable slice per permission set instead of a copy per node.
	if len(acl) == 1 && acl[0].Scheme == "world" && acl[0].ID == "anyone" && acl[0].Perms >= 0 && int(acl[0].Perms) < len(worldACLs) {
		return worldACLs[acl[0].Perms], nil
	}
	var out []zk.ACL
	seen := map[zk.ACL]bool{}
	add := func(a zk.ACL) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, a := range acl {
		switch a.Scheme {
		case "world":
			if a.ID != "anyone" {
				return nil, zk.ErrInvalidACL
			}
			add(a)
		case "auth":
			found := false
			for _, id := range ids {
				if id.scheme == "ip" {
					continue // the ip id is not an authenticated identity
				}
				if id.scheme == "sasl" && !sasl {
					// A login's identity with no provider for its scheme:
					// "Missing AuthenticationProvider for sasl".
					continue
				}
				add(zk.ACL{Perms: a.Perms, Scheme: id.scheme, ID: id.id})
				found = true
			}
			if !found {
				return nil, zk.ErrInvalidACL
			}
		case "digest":
			// The server splits the id at ':' and wants two parts (Java's
			// split drops a trailing empty part, so "user:" has one).
			if _, digest, _ := strings.Cut(a.ID, ":"); strings.Count(a.ID, ":") != 1 || digest == "" {
				return nil, zk.ErrInvalidACL
			}
			add(a)
		case "ip":
			if !validIPPattern(a.ID) {
				return nil, zk.ErrInvalidACL
			}
			add(a)
		case "sasl":
			if !sasl || !kerberosName(a.ID) {
				return nil, zk.ErrInvalidACL
			}
			add(a)
		default:
			return nil, zk.ErrInvalidACL
		}
	}
	return out, nil
}

// kerberosName reports whether ZooKeeper's KerberosName accepts name, as
// SASLAuthenticationProvider.isValid asks of a sasl ACL id and the server's
// SASL login asks of the user it authenticated: a name with no '@' is a
// simple name; one with an '@' must read service[/host]@realm, no part
// holding a '/' or an '@'.
func kerberosName(name string) bool {
	return !strings.Contains(name, "@") || kerberosPrincipal.MatchString(name)
}

// kerberosPrincipal is KerberosName's nameParser, anchored as Java's
// Matcher.matches anchors it.
var kerberosPrincipal = regexp.MustCompile(`^[^/@]*(/[^/@]*)?@[^/@]*$`)

// addIdentity adds an identity the server proved by other means than an
// auth packet (a SASL login) to a session, once.
func (st *state) addIdentity(session int64, id authID) error {
	sess := st.sessions[session]
	if sess == nil {
		return zk.ErrSessionExpired
	}
	if !slices.Contains(sess.ids, id) {
		sess.ids = append(sess.ids, id)
	}
	return nil
}

// validIPPattern accepts what ZooKeeper 3.8's IPAuthenticationProvider
// accepts (see ipPattern).
func validIPPattern(id string) bool {
	_, _, ok := ipPattern(id)
	return ok
}

// worldACLs holds, for every permission set, the one-entry world:anyone ACL
// that nodes share. Nothing modifies a node's ACL slice in place: setACL
// replaces it and getACL copies it.
var worldACLs = func() (acls [zk.PermAll + 1][]zk.ACL) {
	for perms := range acls {
		acls[perms] = []zk.ACL{{Perms: int32(perms), Scheme: "world", ID: "anyone"}}
	}
	return acls
}()

// authOrder returns a session's identities in the order ZooKeeper 3.8
// lists them (whoAmI): its connection keeps them in a set backed by a
// ConcurrentHashMap, which iterates its bins in order and each bin in
// insertion order. The bin is the spread of the Id record's hash, modulo
// the table's size: 16 bins for up to 11 identities, doubling each time
// the count reaches three quarters of the bins. (Past the first doubling
// the map's resize may reorder a bin's entries; no session has that many
// identities.)
func authOrder(ids []authID) []authID {
	bins := int32(16)
	for len(ids) >= int(bins)*3/4 {
		bins *= 2
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b authID) int {
		return cmp.Compare(chmBin(a, bins), chmBin(b, bins))
	})
	return out
}

// chmBin is the bin of id in a ConcurrentHashMap of the given size: the
// hash jute generates for the Id record (17, then 37 times it plus each
// field's String.hashCode), spread as the map spreads it.
func chmBin(id authID, bins int32) int32 {
	h := int32(17)
	h = 37*h + javaStringHash(id.scheme)
	h = 37*h + javaStringHash(id.id)
	spread := (h ^ int32(uint32(h)>>16)) & 0x7fffffff
	return spread & (bins - 1)
}

// javaStringHash is Java's String.hashCode: the string's UTF-16 code
// units, s[0]*31^(n-1) + ... + s[n-1], in int arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}
