package fuzz

import (
	"math/rand"
	"testing"
)

// The request generator is only useful if it gets past the handlers'
// first checks: over a few hundred random inputs it must produce created
// objects, successful reads and writes, and client errors alike.
func TestHTTPRequestsReachEveryOutcome(t *testing.T) {
	s := server(t)
	rng := rand.New(rand.NewSource(1))
	counts := map[int]int{}
	for range 200 {
		data := make([]byte, 64)
		rng.Read(data)
		req := s.buildRequest(&input{data: data})
		code, _ := s.check(t, req)
		counts[code/100*100]++
		if code == 201 {
			counts[201]++
		}
	}
	t.Logf("answers by class: %v", counts)
	for _, c := range []int{200, 201, 400} {
		if counts[c] == 0 {
			t.Errorf("no %d answers in 200 random requests: %v", c, counts)
		}
	}
}
