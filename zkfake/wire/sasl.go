package wire

import (
	"errors"
	"maps"

	"github.com/zksim/zksim/zkfake/jute"
)

// WithSASLUsers has the listener authenticate SASL DIGEST-MD5 logins for
// these users (name → password), as the DigestLoginModule users of a JAAS
// file's Server section (user_NAME="PASSWORD"; JAASUsers reads them) have
// ZooKeeper 3.8 do. A login adds the identity sasl:NAME to its session
// (zkfake.Conn.AddSASLIdentity); bad credentials, or any token the server
// cannot take, are answered AUTHFAILED and the connection is closed, as
// the real server answers them. A non-nil empty map is a Server section
// with no users: every login fails. For nodes with "sasl" ACLs the fake
// server needs the scheme too (zkfake.WithSASLScheme), as the real one
// needs its SASLAuthenticationProvider.
//
// Without it (the default) the listener has no SASL, as a server without
// a JAAS file: it answers each token with an empty reply and no error,
// and nothing else.
func WithSASLUsers(users map[string]string) Option {
	return func(c *config) {
		c.saslUsers = maps.Clone(users)
		if c.saslUsers == nil && users != nil {
			c.saslUsers = map[string]string{}
		}
	}
}

// handleSASL answers one SASL token (jute.OpSASL, its body a
// GetSASLRequest: one buffer; the reply's body a SetSASLResponse, the
// server's token, also one buffer) as ZooKeeperServer.processSasl does,
// outside the request pipeline: the reply's zxid is 0, whatever the
// server's, and the connection's statistics (cons) do not count it. It
// returns false when the connection must close.
func (s *session) handleSASL(cc *clientConn, req *request) bool {
	if req.token == nil {
		// The server reads the token's length before anything else and
		// fails on a null one with an exception: the connection closes
		// with no reply, SASL or not.
		return false
	}
	users := s.l.cfg.saslUsers
	if users == nil {
		// Without a JAAS file the connection has no SaslServer; the
		// server catches the NullPointerException that follows and
		// answers as if the mechanism had said nothing.
		cc.send(saslReply(req.xid, jute.CodeOK, nil))
		return true
	}
	if cc.sasl == nil {
		cc.sasl = newDigestServer(users)
	}
	token, user, err := cc.sasl.evaluate(req.token)
	if errors.Is(err, errSASLRefused) {
		cc.sendAndClose(saslReply(req.xid, jute.CodeAuthFailed, nil))
		return false
	}
	if err != nil {
		return false
	}
	if user != "" && s.conn.AddSASLIdentity(user) != nil {
		// A name KerberosName refuses throws in the server's authorize
		// callback, an exception that closes the connection unanswered;
		// so does a session that has gone meanwhile.
		return false
	}
	cc.send(saslReply(req.xid, jute.CodeOK, token))
	return true
}

// saslReply is a reply to a SASL request: its header, zxid 0, and the
// server's token, null on an error.
func saslReply(xid, code int32, token []byte) []byte {
	w := replyHeader(xid, 0, code)
	w.Buffer(token)
	return w.Bytes()
}
