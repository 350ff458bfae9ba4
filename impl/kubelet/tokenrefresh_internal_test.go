package kubelet

import (
	"testing"
	"time"
)

// TestTokenRefreshTimes checks the record's renewal times of projected
// tokens, the first kept in the record and further ones beside it: each
// key reads back what was last set for it, other keys are untouched, and
// an unknown key has none.
func TestTokenRefreshTimes(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_790_000_000+int64(s), 0) }
	a, b, c := tokenKey{"kube-api-access-x", 2}, tokenKey{"kube-api-access-x", 3}, tokenKey{"tokens", 0}
	steps := []struct {
		key tokenKey
		at  int
	}{{a, 1}, {b, 2}, {c, 3}, {a, 4}, {c, 5}, {b, 6}, {b, 7}}
	var rec podRecord
	if _, ok := rec.tokenRefresh(a); ok {
		t.Fatal("a new record has a refresh time")
	}
	want := map[tokenKey]int{}
	for i, s := range steps {
		rec.setTokenRefresh(s.key, at(s.at))
		want[s.key] = s.at
		for _, k := range []tokenKey{a, b, c, {"other", 0}} {
			got, ok := rec.tokenRefresh(k)
			w, wok := want[k]
			if ok != wok || (ok && !got.Equal(at(w))) {
				t.Fatalf("after step %d: tokenRefresh(%v) = %v %v, want %v %v", i, k, got, ok, at(w), wok)
			}
		}
	}
	if len(rec.x().moreTokens) != 2 {
		t.Errorf("three keys kept %d beside the record's own, want 2", len(rec.x().moreTokens))
	}
}
