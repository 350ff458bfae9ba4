package audit

import "time"

// tokenBucket is the batch throttle (--audit-*-batch-throttle-qps and
// -burst): a bucket of burst tokens, full at first, refilled at qps per
// second. It is a pure value: the caller gives it the time.
type tokenBucket struct {
	qps    float64
	burst  float64
	tokens float64
	last   time.Time
	primed bool
}

func newTokenBucket(qps float32, burst int) *tokenBucket {
	return &tokenBucket{qps: float64(qps), burst: float64(burst), tokens: float64(burst)}
}

// reserve takes a token at now and returns how long the caller must
// wait before it may send (0 when a token was in the bucket). Tokens
// taken ahead of time are owed: later reservations wait longer.
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	if b.primed && now.After(b.last) {
		b.tokens += now.Sub(b.last).Seconds() * b.qps
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
	}
	if !b.primed || now.After(b.last) {
		b.last = now
	}
	b.primed = true
	b.tokens--
	if b.tokens >= 0 || b.qps <= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.qps * float64(time.Second))
}
