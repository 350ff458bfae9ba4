package flowcontrol

// maxRetryAfter caps the Retry-After of a rejection, in seconds.
const maxRetryAfter = 32

// dropHistory is a level's recent rejections, which decide the Retry-After
// its rejections carry, as kube-apiserver adapts it: it starts at 1 s;
// when a second begins and the previous retryAfter seconds saw at least
// 3*retryAfter rejections (and the last increase is retryAfter seconds
// old) it doubles, up to 32 s; when they saw fewer than retryAfter it
// goes down by one. Times are Unix seconds.
type dropHistory struct {
	retryAfter int64 // 0 means 1 (never raised)
	raisedAt   int64
	current    int64 // the second being counted
	count      int64 // rejections in it
	past       []secondCount
}

type secondCount struct{ unix, count int64 }

// get returns the Retry-After, in seconds, of a rejection now.
func (h *dropHistory) get() int64 { return max(h.retryAfter, 1) }

// record notes a rejection at Unix second now.
func (h *dropHistory) record(now int64) {
	if now == h.current {
		h.count++
		return
	}
	if h.count > 0 {
		h.past = append(h.past, secondCount{h.current, h.count})
	}
	i := 0
	for i < len(h.past) && now-h.past[i].unix > maxRetryAfter {
		i++
	}
	h.past = append(h.past[:0], h.past[i:]...)
	h.current, h.count = now, 1
	h.adapt(now)
}

// adapt recomputes retryAfter from the rejections in [now-retryAfter, now).
func (h *dropHistory) adapt(now int64) {
	ra := h.get()
	var dropped int64
	for _, s := range h.past {
		if now-s.unix <= ra && s.unix < now {
			dropped += s.count
		}
	}
	switch {
	case now-h.raisedAt >= ra && dropped >= 3*ra:
		h.retryAfter = min(2*ra, maxRetryAfter)
		h.raisedAt = now
	case dropped < ra && ra > 1:
		h.retryAfter = ra - 1
	}
}
