package wire_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// rawConn speaks the protocol by hand, to send what no client library
// would: hostile frames, and connections dropped without closeSession.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func str(s string) []byte { return cat(be32(int32(len(s))), []byte(s)) }

// frame prefixes body with its length.
func frame(body []byte) []byte { return cat(be32(int32(len(body))), body) }

func connectBody(timeoutMs int32, session int64, passwd []byte) []byte {
	return cat(be32(0), be64(0), be32(timeoutMs), be64(session), be32(int32(len(passwd))), passwd)
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads one reply frame.
func (c *rawConn) read() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var n [4]byte
	if _, err := io.ReadFull(c.nc, n[:]); err != nil {
		c.t.Fatalf("read length: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	return body
}

// connect performs the handshake and returns the answer's timeout, session
// id and password.
func (c *rawConn) connect(timeoutMs int32, session int64, passwd []byte) (int32, int64, []byte) {
	c.t.Helper()
	c.write(frame(connectBody(timeoutMs, session, passwd)))
	r := c.read()
	if len(r) < 36 {
		c.t.Fatalf("connect response of %d bytes", len(r))
	}
	return int32(binary.BigEndian.Uint32(r[4:])), int64(binary.BigEndian.Uint64(r[8:])), r[20:36]
}

// wantClosed checks that the server closes the connection.
func (c *rawConn) wantClosed(what string) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := c.nc.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.t.Fatalf("%s: connection still open after 5s", what)
		}
		return
	}
}
