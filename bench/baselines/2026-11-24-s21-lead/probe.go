//go:build ignore

// probe: every 10 s, 100 ms of sha256 and 100 ms of pointer chasing over
// 64 MiB, single-threaded, printed with the time: how fast the host runs
// this VM while a benchmark runs.
package main

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"time"
)

func main() {
	buf := make([]byte, 16<<10)
	const N = 8 << 20
	next := make([]uint32, N)
	perm := rand.New(rand.NewSource(1)).Perm(N)
	for i := 0; i < N-1; i++ {
		next[perm[i]] = uint32(perm[i+1])
	}
	next[perm[N-1]] = uint32(perm[0])
	p := uint32(0)
	for {
		start := time.Now()
		n := 0
		for time.Since(start) < 100*time.Millisecond {
			sha256.Sum256(buf)
			n++
		}
		mbps := float64(n) * 16 / 1024 / time.Since(start).Seconds()
		start = time.Now()
		steps := 0
		for time.Since(start) < 100*time.Millisecond {
			for j := 0; j < 10000; j++ {
				p = next[p]
			}
			steps += 10000
		}
		ns := float64(time.Since(start).Nanoseconds()) / float64(steps)
		fmt.Printf("%s sha256 %.0f MB/s chase %.1f ns %d\n", time.Now().UTC().Format("15:04:05"), mbps, ns, p%2)
		time.Sleep(10 * time.Second)
	}
}
