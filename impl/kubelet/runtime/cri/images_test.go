package cri_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// odd is a runtime whose image methods misbehave: pulls of "noref" give
// no reference, "nosize" has no size, pulls of "unknown" and "missing"
// fail (the fake CRI serves them as codes Unknown and NotFound), and
// image status of "broken" fails.
type odd struct{ runtime.Runtime }

func (o odd) PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error) {
	switch image.GetImage() {
	case "noref":
		return "", nil
	case "unknown":
		return "", errors.New("RegistryUnavailable: connection refused")
	case "missing":
		return "", runtime.ErrNotFound
	}
	return o.Runtime.PullImageWithAuth(ctx, image, auth)
}

func (o odd) ImageSize(ctx context.Context, image *runtimeapi.ImageSpec) (uint64, error) {
	if image.GetImage() == "nosize" {
		return 0, nil
	}
	return o.Runtime.ImageSize(ctx, image)
}

func (o odd) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	if image.GetImage() == "broken" {
		return "", errors.New("image store unavailable")
	}
	return o.Runtime.ImageStatus(ctx, image)
}

// TestImagesOverCRI: the CRI client's image calls return errors as
// upstream's remote image service does: a PullImage error of code Unknown
// as its message alone, others as the gRPC status; a pull without a
// reference and a present image without a size are errors; ImageStatus's
// error is the gRPC status as is; ImageSize is ImageStatus's size.
func TestImagesOverCRI(t *testing.T) {
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, odd{rt})
	ctx := t.Context()
	spec := func(image string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: image} }

	if _, err := c.PullImage(ctx, spec("unknown")); err == nil || err.Error() != "RegistryUnavailable: connection refused" {
		t.Errorf("pull, Unknown: %v", err)
	}
	if _, err := c.PullImage(ctx, spec("missing")); status.Code(err) != codes.NotFound || err.Error() != "rpc error: code = NotFound desc = not found" {
		t.Errorf("pull, NotFound: %v", err)
	}
	if _, err := c.PullImage(ctx, spec("noref")); err == nil || err.Error() != `imageRef of image "noref" is not set` {
		t.Errorf("pull without a reference: %v", err)
	}
	if _, err := c.ImageStatus(ctx, spec("broken")); err == nil || err.Error() != "rpc error: code = Unknown desc = image store unavailable" {
		t.Errorf("image status failing: %v", err)
	}
	// ImageSize and ImageUser return ImageStatus's error as is too, as
	// upstream's GetImageSize and getImageUser; an absent image has no
	// user and no error (the kubelet assumes root).
	if _, err := c.ImageSize(ctx, spec("broken")); err == nil || err.Error() != "rpc error: code = Unknown desc = image store unavailable" {
		t.Errorf("image size, status failing: %v", err)
	}
	if _, _, err := c.ImageUser(ctx, spec("broken")); err == nil || err.Error() != "rpc error: code = Unknown desc = image store unavailable" {
		t.Errorf("image user, status failing: %v", err)
	}
	if uid, name, err := c.ImageUser(ctx, spec("absent:1")); err != nil || uid != nil || name != "" {
		t.Errorf("absent image's user %v %q, %v", uid, name, err)
	}

	rt.SetImageSize("nginx:1", 12345)
	if _, err := c.PullImage(ctx, spec("nginx:1")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ImageSize(ctx, spec("nginx:1")); err != nil || n != 12345 {
		t.Errorf("image size %d, %v", n, err)
	}
	if n, err := c.ImageSize(ctx, spec("absent:1")); err != nil || n != 0 {
		t.Errorf("absent image's size %d, %v", n, err)
	}
	if ref, err := c.ImageStatus(ctx, spec("absent:1")); err != nil || ref != "" {
		t.Errorf("absent image's status %q, %v", ref, err)
	}

	if _, err := c.PullImage(ctx, spec("nosize")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImageStatus(ctx, spec("nosize")); err == nil || err.Error() != `Id or size of image "nosize" is not set` {
		t.Errorf("image status without a size: %v", err)
	}
}
