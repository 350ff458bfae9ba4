package eventsink

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The spam filter's bucket answers as client-go's Limiter does, event for
// event: bursts, refills over seconds to hours, times that go back, many
// events at one instant, and wall-clock times with monotonic readings.
func TestTokenBucketMatchesRateLimiter(t *testing.T) {
	starts := map[string]time.Time{
		"fake clock": time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
		"monotonic":  time.Now(),
	}
	for name, start := range starts {
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			lim := rate.NewLimiter(rate.Limit(spamQPS), spamBurst)
			b := newTokenBucket()
			now := start
			allowed, denied := 0, 0
			for i := range 20000 {
				switch r := rng.IntN(100); {
				case r < 40: // the same instant
				case r < 80:
					now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
				case r < 90:
					now = now.Add(time.Duration(rng.IntN(600)) * time.Second)
				case r < 95:
					now = now.Add(time.Duration(rng.Int64N(int64(301*time.Second))) + time.Duration(rng.IntN(1000))) // odd nanoseconds
				case r < 98:
					now = now.Add(-time.Duration(rng.IntN(30)) * time.Second) // a clock that steps back
				default:
					now = now.Add(time.Duration(rng.IntN(5)) * time.Hour)
				}
				want := lim.AllowN(now, 1)
				if got := b.allow(now); got != want {
					t.Fatalf("%s, seed %d, event %d at %v: bucket allows %v, Limiter %v (bucket %+v, Limiter has %v tokens)",
						name, seed, i, now, got, want, b, lim.TokensAt(now))
				}
				if want {
					allowed++
				} else {
					denied++
				}
			}
			if allowed == 0 || denied == 0 {
				t.Errorf("%s, seed %d: %d allowed, %d denied: the stream does not exercise both answers", name, seed, allowed, denied)
			}
		}
	}
}

// Around the time one token takes to refill (about 300 s at a float32
// rate, so not exactly), the bucket and the Limiter agree to the
// nanosecond: among them the instants a hair short of a whole token, which
// the Limiter allows because the wait for the rest truncates to zero.
func TestTokenBucketEdgeOfAToken(t *testing.T) {
	start := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	oneToken := time.Duration(float64(time.Second) / spamLimit) // truncated: a hair short
	edges := []time.Duration{299 * time.Second, 300*time.Second - 1, 300 * time.Second, 300*time.Second + 1}
	for d := oneToken - 3; d <= oneToken+3; d++ {
		edges = append(edges, d)
	}
	short := 0
	for _, d := range edges {
		lim := rate.NewLimiter(rate.Limit(spamQPS), spamBurst)
		b := newTokenBucket()
		for i := range spamBurst {
			if !lim.AllowN(start, 1) || !b.allow(start) {
				t.Fatalf("event %d of the burst denied", i)
			}
		}
		if lim.AllowN(start, 1) || b.allow(start) {
			t.Fatal("an event past the burst allowed")
		}
		at := start.Add(d)
		if lim.TokensAt(at) < 1 && lim.AllowN(at, 1) {
			short++
			if !b.allow(at) {
				t.Errorf("%v after the burst, a hair short of a token: the Limiter allows, the bucket does not", d)
			}
			continue
		}
		if got, want := b.allow(at), lim.AllowN(at, 1); got != want {
			t.Errorf("%v after the burst: bucket allows %v, Limiter %v", d, got, want)
		}
	}
	if short == 0 {
		t.Error("no instant a hair short of a token that the Limiter allows: the edge is not exercised")
	}
}
