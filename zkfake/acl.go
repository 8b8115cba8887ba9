package zkfake

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"net"
	"slices"
	"strconv"
	"strings"
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

// ipMatches implements the ip scheme: an address, or an address with a
// prefix length.
func ipMatches(pattern, addr string) bool {
	ip := net.ParseIP(addr)
	if _, network, err := net.ParseCIDR(pattern); err == nil {
		return network.Contains(ip)
	}
	p := net.ParseIP(pattern)
	return p != nil && p.Equal(ip)
}

// fixupACL validates an ACL list given to create or setACL and expands the
// "auth" scheme into the session's authenticated ids, as ZooKeeper's
// PrepRequestProcessor.fixupACL does.
func fixupACL(acl []zk.ACL, ids []authID) ([]zk.ACL, error) {
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
		default:
			return nil, zk.ErrInvalidACL
		}
	}
	return out, nil
}

// validIPPattern accepts what ZooKeeper's IPAuthenticationProvider accepts:
// an IPv4 or IPv6 address, optionally with a prefix length.
func validIPPattern(id string) bool {
	addr, bits, hasBits := strings.Cut(id, "/")
	ip := net.ParseIP(addr)
	if ip == nil {
		return false
	}
	if !hasBits {
		return true
	}
	n, err := strconv.Atoi(bits)
	max := 128
	if ip.To4() != nil {
		max = 32
	}
	return err == nil && n >= 0 && n <= max
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
