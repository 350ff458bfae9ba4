package sim

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A node pulls an image once per container start: the credentials of
// only its latest 64 pulls are kept, in order, not one per pull it ever
// made.
func TestPullAuthsKeepsTheLatestPulls(t *testing.T) {
	r, _ := newSim(t, "10.244.0.0/24")
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	const pulls = 200
	for i := range pulls {
		auth := &runtimeapi.AuthConfig{Username: string(rune('a' + i%26))}
		if _, err := r.PullImageWithAuth(context.Background(), img, auth); err != nil {
			t.Fatal(err)
		}
	}
	got := r.PullAuths(img.Image)
	if len(got) != maxPullAuths {
		t.Fatalf("%d credentials kept after %d pulls, want %d", len(got), pulls, maxPullAuths)
	}
	for j, a := range got {
		i := pulls - maxPullAuths + j
		if want := string(rune('a' + i%26)); a.Username != want {
			t.Fatalf("credential %d is %q, want pull %d's %q", j, a.Username, i, want)
		}
	}
}
