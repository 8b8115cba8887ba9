package zkfake_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake"
)

func benchConn(b *testing.B, opts ...zkfake.Option) (*zkfake.Server, *zkfake.Conn) {
	srv := zkfake.NewServer(opts...)
	c, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	return srv, c
}

func BenchmarkGet(b *testing.B) {
	for _, log := range []bool{true, false} {
		b.Run(fmt.Sprintf("log=%v", log), func(b *testing.B) {
			var opts []zkfake.Option
			if !log {
				opts = append(opts, zkfake.WithoutEventLog())
			}
			_, c := benchConn(b, opts...)
			c.Create("/k", []byte("value"), 0, open)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.Get("/k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCreateDelete(b *testing.B) {
	for _, log := range []bool{true, false} {
		b.Run(fmt.Sprintf("log=%v", log), func(b *testing.B) {
			var opts []zkfake.Option
			if !log {
				opts = append(opts, zkfake.WithoutEventLog())
			}
			_, c := benchConn(b, opts...)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Create("/k", []byte("value"), 0, open); err != nil {
					b.Fatal(err)
				}
				if err := c.Delete("/k", -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
