package kubelet

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestProjectedTokenRefreshAsTokenManager: a projected token is renewed
// as upstream's token manager renews it — at 80% of its lifetime or 24
// hours after it was issued, whichever is first, less a jitter of 0–9 s
// drawn at each check (here 9 s) — with its lifetime from the answer
// (expirationTimestamp and the answer's expirationSeconds), never the
// token's own exp: an extended token (the API server's answer for the
// kubelet default of 3607 s, a JWT valid one year) is renewed at 80% of
// 3607 s.
func TestProjectedTokenRefreshAsTokenManager(t *testing.T) {
	defer func(r func() float64) { tokenJitterRand = r }(tokenJitterRand)
	for _, tc := range []struct {
		name    string
		seconds int64
		due     time.Duration // after issue, before the jitter
		jwtExp  time.Duration // the token a JWT whose exp is this long after issue
	}{
		{"80% of an hour", 3600, 2880 * time.Second, 0},
		{"24 h of a 48 h token", 48 * 3600, 24 * time.Hour, 0},
		{"80% of 3607 s, extended to a year", 3607, 2886 * time.Second, 365 * 24 * time.Hour},
	} {
		for _, jitter := range []struct {
			draw    float64
			renewed bool // at due − 8 s
		}{{0, false}, {0.95, true}} { // 0 s, 9 s
			t.Run(fmt.Sprintf("%s, jitter draw %v", tc.name, jitter.draw), func(t *testing.T) {
				tokenJitterRand = func() float64 { return jitter.draw }
				h := newHarness(t, nil)
				requests := 0
				h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
					ca := a.(clienttesting.CreateAction)
					if ca.GetSubresource() != "token" {
						return false, nil, nil
					}
					requests++
					tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
					tr.Status.Token = "t"
					if tc.jwtExp > 0 {
						claims := fmt.Sprintf(`{"exp":%d,"iat":%d}`, h.clock.Now().Add(tc.jwtExp).Unix(), h.clock.Now().Unix())
						tr.Status.Token = "eyJhbGciOiJFUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
					}
					tr.Status.ExpirationTimestamp = metav1.NewTime(h.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
					return true, tr, nil
				})
				p := h.create(h.pod("tok", func(p *v1.Pod) {
					p.Spec.Volumes = []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(tc.seconds)}},
					}}}}}
				}))
				if got := h.sync(p); got.Status.Phase != v1.PodRunning || requests != 1 {
					t.Fatalf("phase %s, %d token requests", got.Status.Phase, requests)
				}
				// Volumes are looked at once per sync period.
				sf := h.k.cfg.SyncFrequency
				h.step(tc.due - 8*time.Second - sf)
				h.sync(p)
				if requests != 1 {
					t.Fatalf("renewed %v after issue, due %v", tc.due-8*time.Second-sf, tc.due)
				}
				h.step(sf)
				h.sync(p)
				if renewed := requests == 2; renewed != jitter.renewed {
					t.Fatalf("at %v after issue (due %v): renewed %v, want %v", tc.due-8*time.Second, tc.due, renewed, jitter.renewed)
				}
				h.step(sf)
				h.sync(p)
				if requests != 2 {
					t.Fatalf("past due: %d token requests, want 2", requests)
				}
			})
		}
	}
}
