package wire

import (
	"fmt"
	"strings"
)

// digestLoginModule is the login module whose users a ZooKeeper server
// authenticates with DIGEST-MD5.
const digestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// JAASUsers reads a JAAS configuration, the file a ZooKeeper server is
// given with -Djava.security.auth.login.config, and returns the users and
// passwords of its Server section, for WithSASLUsers: each option
// user_NAME="PASSWORD" of its login modules, as ZooKeeper's
// SaslServerCallbackHandler collects them. The file is read as Java's
// ConfigFile reads it: sections NAME { MODULE FLAG KEY=VALUE ...; ... };
// with // and /* */ comments, values quoted or bare words.
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="super_secret"
//	    user_jaasuser="jaas_password";
//	};
//
// It fails on a file Java would refuse, on one with no Server section (a
// server given it has no SASL, which is not what a caller of JAASUsers
// wants), on a Server section with another login module than
// DigestLoginModule (Kerberos, GSSAPI: not served), and on a value that
// asks for a system property (${...}), which the fake cannot expand.
func JAASUsers(conf []byte) (map[string]string, error) {
	sections, err := parseJAAS(conf)
	if err != nil {
		return nil, err
	}
	modules, ok := sections["Server"]
	if !ok {
		return nil, fmt.Errorf("jaas: no Server section")
	}
	users := map[string]string{}
	for _, m := range modules {
		if m.class != digestLoginModule {
			return nil, fmt.Errorf("jaas: the Server section's login module %s is not served: only %s (DIGEST-MD5)", m.class, digestLoginModule)
		}
		for k, v := range m.options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				users[name] = v
			}
		}
	}
	return users, nil
}

// jaasModule is one login module of a section: its class and options.
type jaasModule struct {
	class   string
	options map[string]string
}

// parseJAAS reads every section of a JAAS configuration (ConfigFile's
// readConfig and parseLoginEntry).
func parseJAAS(conf []byte) (map[string][]jaasModule, error) {
	p := &jaasParser{lx: jaasLexer{src: []rune(string(conf)), line: 1}}
	p.advance()
	sections := map[string][]jaasModule{}
	for p.tok.kind != tokEOF {
		if p.err != nil {
			return nil, p.err
		}
		name := p.tok.text // a section named by a number or a sign has none
		p.advance()
		p.match('{')
		var modules []jaasModule
		for p.err == nil && !p.peek('}') {
			m := jaasModule{class: p.matchValue("module class name"), options: map[string]string{}}
			switch flag := strings.ToUpper(p.matchValue("controlFlag")); flag {
			case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
			default:
				p.fail("invalid control flag %q", flag)
			}
			for p.err == nil && !p.peek(';') {
				key := p.matchValue("option key")
				p.match('=')
				value := p.matchValue("option value")
				if strings.Contains(value, "${") {
					p.fail("option %s: system properties (${...}) are not expanded here", key)
				}
				m.options[key] = value
			}
			p.advance()
			modules = append(modules, m)
		}
		p.match('}')
		p.match(';')
		if p.err != nil {
			return nil, p.err
		}
		if _, dup := sections[name]; dup {
			return nil, fmt.Errorf("jaas: more than one section named %s", name)
		}
		sections[name] = modules
	}
	return sections, p.err
}

// jaasParser is ConfigFile's parser: one token of lookahead, and the
// first error, after which it reads nothing more.
type jaasParser struct {
	lx  jaasLexer
	tok jaasToken
	err error
}

func (p *jaasParser) advance() {
	if p.err == nil {
		p.tok = p.lx.next()
	} else {
		p.tok = jaasToken{kind: tokEOF}
	}
}

func (p *jaasParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("jaas: line %d: %s", p.lx.line, fmt.Sprintf(format, args...))
		p.tok = jaasToken{kind: tokEOF}
	}
}

// peek reports whether the lookahead is the punctuation c.
func (p *jaasParser) peek(c rune) bool { return p.tok.kind == tokPunct && p.tok.punct == c }

// match consumes the punctuation c.
func (p *jaasParser) match(c rune) {
	if !p.peek(c) {
		p.fail("expected %q, found %s", c, p.tok)
		return
	}
	p.advance()
}

// matchValue consumes a word or a quoted string and returns its text.
func (p *jaasParser) matchValue(what string) string {
	if p.tok.kind != tokWord && p.tok.kind != tokQuoted {
		p.fail("expected %s, found %s", what, p.tok)
		return ""
	}
	text := p.tok.text
	p.advance()
	return text
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokQuoted
	tokNumber // a number or a lone '-': never valid where ConfigFile looks
	tokSingle // a string in single quotes: read, and never valid either
	tokPunct  // any other character
)

type jaasToken struct {
	kind  tokenKind
	text  string
	punct rune
}

func (t jaasToken) String() string {
	switch t.kind {
	case tokEOF:
		return "the end of the file"
	case tokPunct:
		return fmt.Sprintf("%q", t.punct)
	case tokNumber:
		return "a number"
	case tokSingle:
		return fmt.Sprintf("'%s'", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// jaasLexer is java.io.StreamTokenizer as ConfigFile sets it up: words of
// letters, digits, '.', '$', '_', '-', '*' and every character from U+00A0
// up, not starting with a digit, '.' or '-' (which start numbers); strings
// in double or single quotes (ConfigFile takes only the first kind), with
// Java's escapes, ended by their quote or the line's end; // and /* */
// comments, and a lone '/' commenting out the rest of its line; white
// space everything up to ' '.
type jaasLexer struct {
	src  []rune
	i    int
	line int
}

func (lx *jaasLexer) peekRune(k int) rune {
	if lx.i+k < len(lx.src) {
		return lx.src[lx.i+k]
	}
	return -1
}

func (lx *jaasLexer) next() jaasToken {
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch {
		case c <= ' ':
			if c == '\n' || (c == '\r' && lx.peekRune(1) != '\n') {
				lx.line++
			}
			lx.i++
		case c == '/' && lx.peekRune(1) == '*':
			lx.i += 2
			for lx.i < len(lx.src) && !(lx.src[lx.i] == '*' && lx.peekRune(1) == '/') {
				if lx.src[lx.i] == '\n' {
					lx.line++
				}
				lx.i++
			}
			lx.i += 2
		case c == '/':
			for lx.i < len(lx.src) && lx.src[lx.i] != '\n' && lx.src[lx.i] != '\r' {
				lx.i++
			}
		case c == '"' || c == '\'':
			return lx.quoted(c)
		case c >= '0' && c <= '9' || c == '.' || c == '-':
			if c == '-' {
				lx.i++
				if d := lx.peekRune(0); d != '.' && (d < '0' || d > '9') {
					return jaasToken{kind: tokPunct, punct: '-'}
				}
			}
			// Digits and at most one '.': what follows starts a new token.
			for dot := false; lx.i < len(lx.src); lx.i++ {
				if d := lx.src[lx.i]; d == '.' && !dot {
					dot = true
				} else if d < '0' || d > '9' {
					break
				}
			}
			return jaasToken{kind: tokNumber}
		case isWordRune(c):
			start := lx.i
			for lx.i < len(lx.src) && (isWordRune(lx.src[lx.i]) || isNumberRune(lx.src[lx.i])) {
				lx.i++
			}
			return jaasToken{kind: tokWord, text: string(lx.src[start:lx.i])}
		default:
			lx.i++
			return jaasToken{kind: tokPunct, punct: c}
		}
	}
	return jaasToken{kind: tokEOF}
}

func isWordRune(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xa0 || c == '$' || c == '_' || c == '-' || c == '*'
}

func isNumberRune(c rune) bool { return c >= '0' && c <= '9' || c == '.' }

// jaasEscapes are the letters a backslash makes a control character of.
var jaasEscapes = map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// quoted reads a string in quotes q, with StreamTokenizer's escapes: \a \b
// \f \n \r \t \v, up to three octal digits, and a backslash before any
// other character standing for it.
func (lx *jaasLexer) quoted(q rune) jaasToken {
	lx.i++
	var b strings.Builder
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		if c == q || c == '\n' || c == '\r' {
			if c == q {
				lx.i++
			}
			break
		}
		lx.i++
		if c != '\\' || lx.i >= len(lx.src) {
			b.WriteRune(c)
			continue
		}
		c = lx.src[lx.i]
		lx.i++
		if c >= '0' && c <= '7' {
			first, v := c, c-'0'
			for n := 1; n < 3 && lx.i < len(lx.src) && lx.src[lx.i] >= '0' && lx.src[lx.i] <= '7' && (n < 2 || first <= '3'); n++ {
				v = v<<3 + lx.src[lx.i] - '0'
				lx.i++
			}
			b.WriteRune(v)
			continue
		}
		if e, ok := jaasEscapes[c]; ok {
			c = e
		}
		b.WriteRune(c)
	}
	if q == '\'' {
		return jaasToken{kind: tokSingle, text: b.String()}
	}
	return jaasToken{kind: tokQuoted, text: b.String()}
}
