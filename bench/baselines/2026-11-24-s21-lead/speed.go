//go:build ignore

// speed: a fixed single-threaded CPU workload (sha256) and a memory-latency
// workload (pointer chasing over 256 MiB), to tell whether the host runs
// this VM slower at some times than at others.
package main

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"time"
)

func main() {
	buf := make([]byte, 64<<10)
	start := time.Now()
	n := 0
	for time.Since(start) < 3*time.Second {
		sha256.Sum256(buf)
		n++
	}
	mbps := float64(n) * 64 / 1024 / time.Since(start).Seconds()
	const N = 32 << 20 // 32M uint64 = 256 MiB
	next := make([]uint64, N)
	perm := rand.New(rand.NewSource(1)).Perm(N)
	for i := 0; i < N-1; i++ {
		next[perm[i]] = uint64(perm[i+1])
	}
	next[perm[N-1]] = uint64(perm[0])
	start = time.Now()
	p, steps := uint64(0), 0
	for time.Since(start) < 3*time.Second {
		for j := 0; j < 100000; j++ {
			p = next[p]
		}
		steps += 100000
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(steps)
	fmt.Printf("sha256 %.0f MB/s  chase %.1f ns/step (%d)\n", mbps, ns, p%2)
}
