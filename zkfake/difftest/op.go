package difftest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Kind names a client call a sequence can make.
type Kind string

// The calls of *zk.Conn a sequence makes, plus the sub-operations of Multi.
const (
	Create          Kind = "create"          // Create(path, data, flags, acl)
	CreateContainer Kind = "createContainer" // CreateContainer(path, data, flags, acl)
	CreateTTL       Kind = "createTTL"       // CreateTTL(path, data, flags, acl, ttl)
	CreateProtected Kind = "createProtected" // CreateProtectedEphemeralSequential(path, data, acl)
	Delete          Kind = "delete"          // Delete(path, version)
	Set             Kind = "set"             // Set(path, data, version)
	Get             Kind = "get"             // Get(path)
	GetW            Kind = "getW"            // GetW(path)
	Exists          Kind = "exists"          // Exists(path)
	ExistsW         Kind = "existsW"         // ExistsW(path)
	Children        Kind = "children"        // Children(path)
	ChildrenW       Kind = "childrenW"       // ChildrenW(path)
	GetACL          Kind = "getACL"          // GetACL(path)
	SetACL          Kind = "setACL"          // SetACL(path, acl, version)
	Sync            Kind = "sync"            // Sync(path)
	Multi           Kind = "multi"           // Multi(sub-operations...)
	AddAuth         Kind = "addAuth"         // AddAuth("digest", credential)
	Close           Kind = "close"           // Close()
	Check           Kind = "check"           // CheckVersionRequest, only inside Multi
)

// Kinds returns every Kind a generated sequence can contain at top level,
// in a slice of the caller's own.
func Kinds() []Kind {
	return []Kind{Create, CreateContainer, CreateTTL, CreateProtected, Delete, Set,
		Get, GetW, Exists, ExistsW, Children, ChildrenW, GetACL, SetACL, Sync, Multi, AddAuth, Close}
}

// Op is one step of a sequence: a call made on one session.
//
// Path is written relative to the sequence's base node: "." is the base
// itself, "a/x" is base+"/a/x", a path starting with '/' is absolute (for
// ZooKeeper's own nodes and the empty path ""), and "@3" (or "@3/c") is the
// path that op 3 returned — what a sequential create actually made — or,
// if op 3 returned none, the path op 3 asked for.
type Op struct {
	Label   int    // stable number of the op in its sequence, from 1
	Session int    // the session (1-based) that makes the call; 0 inside Multi
	Kind    Kind   // which call
	Path    string // see above
	Data    []byte // nil and empty are different values
	Flags   int32
	ACL     string        // a name from the ACL palette (see ACLs)
	Version int32         // for delete, set, setACL, check
	TTL     time.Duration // for createTTL
	Scheme  string        // addAuth's scheme; empty means digest
	Auth    string        // addAuth's credentials, "user:password" for digest
	Sub     []Op          // the sub-operations of a multi
}

// ACLs returns the palette of ACL lists a sequence can use, by name (Op.ACL
// names one). Every list that ZooKeeper accepts grants one of the digest
// identities the cleanup session holds enough to remove the node and its
// children, so a real base can always be emptied afterwards. The map and
// its lists are the caller's own: changing them changes no sequence.
func ACLs() map[string][]zk.ACL {
	out := make(map[string][]zk.ACL, len(aclPalette))
	for name, acl := range aclPalette {
		out[name] = slices.Clone(acl)
	}
	return out
}

// aclPalette is the palette ACLs returns a copy of.
var aclPalette = map[string][]zk.ACL{
	"open":      zk.WorldACL(zk.PermAll),
	"read":      append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "secret")...),
	"alice":     zk.DigestACL(zk.PermAll, "alice", "secret"),
	"nodelete":  append(zk.WorldACL(zk.PermAll&^zk.PermDelete), zk.DigestACL(zk.PermAll, "alice", "secret")...),
	"creator":   zk.AuthACL(zk.PermAll),
	"loopback":  append([]zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}, zk.DigestACL(zk.PermAll, "alice", "secret")...),
	"elsewhere": append([]zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.1.2.3"}}, zk.DigestACL(zk.PermAll, "alice", "secret")...),
	"empty":     {},
	"bogus":     {{Perms: zk.PermAll, Scheme: "bogus", ID: "x"}},
	"someone":   {{Perms: zk.PermAll, Scheme: "world", ID: "someone"}},
	// ip ids in their odd forms: ranges, a zero prefix, IPv6, and ids
	// ZooKeeper refuses (a bad prefix length, a name, an empty id).
	"loopnet":   withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.0/8"}),
	"anyip":     withAlice(zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "0.0.0.0/0"}),
	"tennet":    withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/8"}),
	"hostbits":  withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/24"}),
	"ipv6":      withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "::1"}),
	"badprefix": withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/33"}),
	"ipname":    withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "localhost"}),
	"ipempty":   withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: ""}),
	"ipshort":   withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.1"}),
	// digest ids without their hash, or without a name; world ids other
	// than anyone; the auth scheme with an id; odd permission bits.
	"nohash":    {{Perms: zk.PermAll, Scheme: "digest", ID: "alice"}},
	"noname":    withAlice(zk.ACL{Perms: zk.PermRead, Scheme: "digest", ID: ":secret"}),
	"authid":    withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "auth", ID: "bob"}),
	"worldread": withAlice(zk.WorldACL(zk.PermRead)...),
	"noperms":   withAlice(zk.ACL{Perms: 0, Scheme: "world", ID: "anyone"}),
	"allbits":   withAlice(zk.ACL{Perms: 0x7fffffff, Scheme: "world", ID: "anyone"}),
	"twice":     withAlice(zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}, zk.ACL{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}),
	// sasl ids (no session of a sequence logs in with SASL): a user, a
	// Kerberos principal, and a name KerberosName refuses.
	"sasl":      withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: "jaasuser"}),
	"saslprinc": withAlice(zk.ACL{Perms: zk.PermRead, Scheme: "sasl", ID: "zookeeper/localhost@EXAMPLE.COM"}),
	"saslbad":   withAlice(zk.ACL{Perms: zk.PermAll, Scheme: "sasl", ID: "a@b@c"}),
}

// withAlice is acl with alice's digest identity granted everything, so that
// the cleanup session can remove what a node with it holds.
func withAlice(acl ...zk.ACL) []zk.ACL {
	return append(acl, zk.DigestACL(zk.PermAll, "alice", "secret")...)
}

// credentials are the digest identities sessions authenticate with. The
// cleanup session of a real run holds all of them.
var credentials = []string{"alice:secret", "alice:wrong", "bob:pw"}

// allDigests are every digest credential a sequence can authenticate with,
// which the admin session of either side holds, so that it can list and
// delete what a node's "creator" ACL gave to one of them.
func allDigests() []string {
	out := slices.Clone(credentials)
	for _, c := range otherCredentials {
		if c[0] == "digest" {
			out = append(out, c[1])
		}
	}
	return out
}

// otherCredentials are addAuth's calls with the other schemes and with
// malformed digests: ZooKeeper refuses some (AUTHFAILED, which closes the
// connection) and ignores none silently.
var otherCredentials = [][2]string{
	{"digest", "nocolon"}, {"digest", ":nouser"}, {"digest", ""}, {"ip", "127.0.0.1"}, {"world", "anyone"},
	{"bogus", "x"}, {"auth", ""}, {"super", "x"},
}

var flagNames = map[int32]string{
	zk.FlagPersistent:                  "persistent",
	zk.FlagEphemeral:                   "ephemeral",
	zk.FlagSequence:                    "sequential",
	zk.FlagEphemeralSequential:         "ephemeral-sequential",
	zk.FlagContainer:                   "container",
	zk.FlagTTL:                         "ttl",
	zk.FlagPersistentSequentialWithTTL: "sequential-ttl",
}

func formatFlags(f int32) string {
	if name, ok := flagNames[f]; ok {
		return name
	}
	return strconv.Itoa(int(f))
}

func parseFlags(s string) (int32, error) {
	for f, name := range flagNames {
		if name == s {
			return f, nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("flags %q: not a flag name or number", s)
	}
	return int32(n), nil
}

// quoteIfNeeded writes s bare when that reads back unchanged, quoted
// otherwise.
func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-@:", r)) {
			return strconv.Quote(s)
		}
	}
	return s
}

func formatData(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) > 64 && bytes.Count(b, b[:1]) == len(b) {
		// Data at the size limits would make lines of a megabyte.
		return fmt.Sprintf("%c*%d", b[0], len(b))
	}
	return strconv.Quote(string(b))
}

// repeated reads formatData's "x*N": N bytes of x.
func repeated(s string) ([]byte, bool) {
	c, n, ok := strings.Cut(s, "*")
	if !ok || len(c) != 1 {
		return nil, false
	}
	count, err := strconv.Atoi(n)
	if err != nil || count <= 64 {
		return nil, false
	}
	return bytes.Repeat([]byte(c), count), true
}

// String renders the op on one line, without its label and session; the
// parser reads it back.
func (o Op) String() string {
	var b strings.Builder
	b.WriteString(string(o.Kind))
	if o.Kind == Multi {
		b.WriteString(" {")
		for i, s := range o.Sub {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			b.WriteString(s.String())
		}
		if len(o.Sub) > 0 {
			b.WriteString(" ")
		}
		b.WriteString("}")
		return b.String()
	}
	if o.Kind == Close {
		return b.String()
	}
	if o.Kind == AddAuth {
		fmt.Fprintf(&b, " %s %s", o.scheme(), quoteIfNeeded(o.Auth))
		return b.String()
	}
	fmt.Fprintf(&b, " %s", quoteIfNeeded(o.Path))
	switch o.Kind {
	case Create, CreateContainer:
		fmt.Fprintf(&b, " data=%s flags=%s acl=%s", formatData(o.Data), formatFlags(o.Flags), o.ACL)
	case CreateTTL:
		fmt.Fprintf(&b, " data=%s flags=%s acl=%s ttl=%s", formatData(o.Data), formatFlags(o.Flags), o.ACL, o.TTL)
	case CreateProtected:
		fmt.Fprintf(&b, " data=%s acl=%s", formatData(o.Data), o.ACL)
	case Set:
		fmt.Fprintf(&b, " data=%s version=%d", formatData(o.Data), o.Version)
	case SetACL:
		fmt.Fprintf(&b, " acl=%s version=%d", o.ACL, o.Version)
	case Delete, Check:
		fmt.Fprintf(&b, " version=%d", o.Version)
	}
	return b.String()
}

// scheme is addAuth's scheme.
func (o Op) scheme() string {
	if o.Scheme == "" {
		return "digest"
	}
	return o.Scheme
}

// Line renders a top-level op as a corpus line: "3 s1 create a ...".
func (o Op) Line() string { return fmt.Sprintf("%d s%d %s", o.Label, o.Session, o) }

// ParseLine reads back what Line writes.
func ParseLine(line string) (Op, error) {
	toks, err := tokenize(line)
	if err != nil {
		return Op{}, err
	}
	if len(toks) < 3 {
		return Op{}, fmt.Errorf("op line %q: want label, session and call", line)
	}
	label, err := strconv.Atoi(toks[0].text)
	if err != nil || label < 1 {
		return Op{}, fmt.Errorf("op line %q: bad label %q", line, toks[0].text)
	}
	if !strings.HasPrefix(toks[1].text, "s") {
		return Op{}, fmt.Errorf("op line %q: bad session %q", line, toks[1].text)
	}
	session, err := strconv.Atoi(toks[1].text[1:])
	if err != nil || session < 1 {
		return Op{}, fmt.Errorf("op line %q: bad session %q", line, toks[1].text)
	}
	op, rest, err := parseOp(toks[2:])
	if err != nil {
		return Op{}, fmt.Errorf("op line %q: %v", line, err)
	}
	if len(rest) > 0 {
		return Op{}, fmt.Errorf("op line %q: unexpected %q", line, rest[0].text)
	}
	op.Label, op.Session = label, session
	return op, nil
}

type token struct {
	text   string
	quoted bool // the value part (after '=' if any) was a quoted string
}

// tokenize splits on spaces, keeping quoted strings (also as the value of
// key="...") whole and making '{', '}' and ';' tokens of their own.
func tokenize(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ':
			i++
		case c == '{' || c == '}' || c == ';':
			toks = append(toks, token{text: string(c)})
			i++
		default:
			start := i
			var b strings.Builder
			quoted := false
			for i < len(s) && s[i] != ' ' && s[i] != ';' && s[i] != '}' && s[i] != '{' {
				if s[i] == '"' {
					q, err := strconv.QuotedPrefix(s[i:])
					if err != nil {
						return nil, fmt.Errorf("bad quoted string at %q", s[start:])
					}
					u, _ := strconv.Unquote(q)
					b.WriteString(u)
					quoted = true
					i += len(q)
					continue
				}
				b.WriteByte(s[i])
				i++
			}
			toks = append(toks, token{text: b.String(), quoted: quoted})
		}
	}
	return toks, nil
}

func parseOp(toks []token) (Op, []token, error) {
	if len(toks) == 0 {
		return Op{}, nil, fmt.Errorf("missing call")
	}
	op := Op{Kind: Kind(toks[0].text)}
	toks = toks[1:]
	switch op.Kind {
	case Multi:
		if len(toks) == 0 || toks[0].text != "{" {
			return Op{}, nil, fmt.Errorf("multi: want '{'")
		}
		toks = toks[1:]
		for {
			if len(toks) == 0 {
				return Op{}, nil, fmt.Errorf("multi: missing '}'")
			}
			if toks[0].text == "}" && !toks[0].quoted {
				return op, toks[1:], nil
			}
			if toks[0].text == ";" && !toks[0].quoted {
				toks = toks[1:]
				continue
			}
			sub, rest, err := parseOp(toks)
			if err != nil {
				return Op{}, nil, fmt.Errorf("multi: %v", err)
			}
			op.Sub = append(op.Sub, sub)
			toks = rest
		}
	case Close:
		return op, toks, nil
	case AddAuth:
		if len(toks) < 2 {
			return Op{}, nil, fmt.Errorf("addAuth: want 'scheme credentials'")
		}
		if toks[0].text != "digest" {
			op.Scheme = toks[0].text
		}
		op.Auth = toks[1].text
		return op, toks[2:], nil
	case Create, CreateContainer, CreateTTL, CreateProtected, Delete, Set, Get, GetW,
		Exists, ExistsW, Children, ChildrenW, GetACL, SetACL, Sync, Check:
	default:
		return Op{}, nil, fmt.Errorf("unknown call %q", op.Kind)
	}
	if len(toks) == 0 {
		return Op{}, nil, fmt.Errorf("%s: missing path", op.Kind)
	}
	op.Path = toks[0].text
	toks = toks[1:]
	for len(toks) > 0 {
		key, value, ok := strings.Cut(toks[0].text, "=")
		if !ok || toks[0].text == ";" || toks[0].text == "}" {
			break
		}
		var err error
		switch key {
		case "data":
			if value == "nil" && !toks[0].quoted {
				op.Data = nil
			} else if data, ok := repeated(value); ok && !toks[0].quoted {
				op.Data = data
			} else {
				op.Data = []byte(value)
			}
		case "flags":
			op.Flags, err = parseFlags(value)
		case "acl":
			if _, known := aclPalette[value]; !known {
				err = fmt.Errorf("unknown acl %q", value)
			}
			op.ACL = value
		case "version":
			var v int64
			v, err = strconv.ParseInt(value, 10, 32)
			op.Version = int32(v)
		case "ttl":
			op.TTL, err = time.ParseDuration(value)
		default:
			err = fmt.Errorf("unknown argument %q", key)
		}
		if err != nil {
			return Op{}, nil, fmt.Errorf("%s: %v", op.Kind, err)
		}
		toks = toks[1:]
	}
	return op, toks, nil
}

// writes reports whether the op can change the tree or end a session, so
// that other sessions may receive watch events because of it.
func (o Op) writes() bool {
	switch o.Kind {
	case Create, CreateContainer, CreateTTL, CreateProtected, Delete, Set, SetACL, Multi, Close:
		return true
	}
	return false
}

// refs returns the labels of the ops this op's paths refer to.
func (o Op) refs() []int {
	var out []int
	if l, ok := refLabel(o.Path); ok {
		out = append(out, l)
	}
	for _, s := range o.Sub {
		out = append(out, s.refs()...)
	}
	return out
}

// refLabel parses "@3" or "@3/rest" and returns 3.
func refLabel(p string) (int, bool) {
	if !strings.HasPrefix(p, "@") {
		return 0, false
	}
	num, _, _ := strings.Cut(p[1:], "/")
	n, err := strconv.Atoi(num)
	return n, err == nil
}
