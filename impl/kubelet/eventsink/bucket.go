package eventsink

import (
	"time"

	"golang.org/x/time/rate"
)

// tokenBucket is the spam filter's token bucket of one source and object:
// golang.org/x/time/rate's Limiter (client-go's, NewLimiter(spamQPS,
// spamBurst)) as the filter uses it, AllowN(now, 1) and never a wait.
// It is kept by value in the spam cache's entry: a *rate.Limiter was a
// heap object of its own per pod, marked in every GC cycle for as long as
// the entry lives. The arithmetic is the Limiter's, step for step, so the
// same times give the same answers (TestTokenBucketMatchesRateLimiter).
type tokenBucket struct {
	tokens float64
	last   time.Time // of the last event allowed
}

// spamLimit is spamQPS as the Limiter holds it.
var spamLimit = float64(rate.Limit(spamQPS))

// newTokenBucket is a full bucket (NewLimiter's).
func newTokenBucket() tokenBucket { return tokenBucket{tokens: spamBurst} }

// allow takes a token at now if the bucket has one (the Limiter's
// reserveN with n = 1 and no wait allowed) and reports whether it had.
func (b *tokenBucket) allow(now time.Time) bool {
	// advance: refill for the time since the last event, up to the burst;
	// a now before it refills nothing.
	last := b.last
	if now.Before(last) {
		last = now
	}
	tokens := b.tokens + now.Sub(last).Seconds()*spamLimit
	if tokens > spamBurst {
		tokens = spamBurst
	}
	tokens--
	// The Limiter allows the event when the wait for the missing part of
	// a token, truncated to whole nanoseconds, is zero.
	if tokens < 0 && (-tokens/spamLimit)*float64(time.Second) >= 1 {
		return false
	}
	b.last, b.tokens = now, tokens
	return true
}
