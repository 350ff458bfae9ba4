package sim

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageSize: an absent image has no size; a pulled one has
// DefaultImageSize unless SetImageSize gave it another.
func TestImageSize(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img := &runtimeapi.ImageSpec{Image: "nginx:1.27"}
	size := func() uint64 {
		t.Helper()
		n, err := r.ImageSize(ctx, img)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := size(); n != 0 {
		t.Fatalf("absent image: size %d", n)
	}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	if n := size(); n != DefaultImageSize {
		t.Fatalf("pulled image: size %d, want %d", n, DefaultImageSize)
	}
	r.SetImageSize(img.Image, 42)
	if n := size(); n != 42 {
		t.Fatalf("after SetImageSize: size %d", n)
	}
}
