package wire_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// BenchmarkGetOverWire measures one Get round trip from go-zookeeper's
// client through the wire to the fake and back.
func BenchmarkGetOverWire(b *testing.B) {
	env := serve(b)
	c, _ := env.dial(b, 4*time.Second)
	defer c.Close()
	if _, err := c.Create("/b", []byte("payload"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Get("/b"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetOverWire measures one write round trip.
func BenchmarkSetOverWire(b *testing.B) {
	env := serve(b)
	c, _ := env.dial(b, 4*time.Second)
	defer c.Close()
	if _, err := c.Create("/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	data := []byte("payload")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Set("/b", data, -1); err != nil {
			b.Fatal(err)
		}
	}
}
