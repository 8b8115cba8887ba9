package zkbench

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zksim/zksim/zkfake/zktest"
)

// keyCount is how many nodes the parallel workloads spread their requests
// over.
const keyCount = 64

// readPercent is the share of reads in ReadWriteMix.
const readPercent = 70

// Reads measures the throughput of Get from goroutines goroutines, each
// with a session of its own, over 64 nodes of 32 bytes. ns/op is wall time
// per request over all goroutines, so it falls as the goroutines add
// throughput.
func Reads(b *testing.B, t *Target, goroutines int) {
	parallel(b, t, goroutines, 100)
}

// ReadWriteMix measures the throughput of a mix of 70% Get and 30% Set from
// goroutines goroutines, each with a session of its own, over 64 nodes of
// 32 bytes. ns/op is wall time per request over all goroutines.
func ReadWriteMix(b *testing.B, t *Target, goroutines int) {
	parallel(b, t, goroutines, readPercent)
}

// parallel runs b.N requests, reads with probability readPercent and
// otherwise writes, shared out among goroutines sessions. Unlike the
// single-session workloads it uses b.N, not b.Loop, since the requests are
// made on other goroutines; its setup is repeated for each of the testing
// package's rounds (each on a new Target, as the benchmarks make them).
func parallel(b *testing.B, t *Target, goroutines, readPercent int) {
	if goroutines < 1 {
		b.Fatalf("goroutines = %d, want at least 1", goroutines)
	}
	admin := t.Connect(b)
	dir := mkdir(b, admin, t.Base()+"/parallel")
	keys := numbered(dir+"/k", keyCount)
	if err := zktest.CreateAll(admin, keys, payload); err != nil {
		b.Fatal(err)
	}
	conns := make([]zktest.Conn, goroutines)
	for i := range conns {
		conns[i] = t.Connect(b)
	}

	// Goroutines claim requests in chunks, so that the shared counter
	// costs next to nothing on the fake, yet every goroutine gets some
	// of a small b.N on the real side.
	chunk := int64(min(64, max(1, b.N/(4*goroutines))))
	var claimed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	b.ResetTimer()
	for i, conn := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(goroutines)))
			for {
				end := claimed.Add(chunk)
				start := end - chunk
				if start >= int64(b.N) {
					return
				}
				for range min(end, int64(b.N)) - start {
					key := keys[rng.IntN(len(keys))]
					if rng.IntN(100) < readPercent {
						data, _, err := conn.Get(key)
						if err == nil && len(data) != len(payload) {
							err = fmt.Errorf("read %d bytes of %s, want %d", len(data), key, len(payload))
						}
						if err != nil {
							errs <- fmt.Errorf("get %s: %w", key, err)
							return
						}
					} else if _, err := conn.Set(key, payload, -1); err != nil {
						errs <- fmt.Errorf("set %s: %w", key, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Error(err)
	}
}
