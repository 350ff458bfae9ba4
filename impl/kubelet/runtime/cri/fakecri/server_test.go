package fakecri

import (
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestImageStatusNamesAsContainerd: ImageStatus of a simulated image,
// asked by any spelling of its reference, reports what containerd's does:
// the image's normalized repo tag and its repo digest, not the name asked.
func TestImageStatusNamesAsContainerd(t *testing.T) {
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:latest"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(rt)
	for _, asked := range []string{"nginx", ref} {
		resp, err := s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: asked}})
		if err != nil {
			t.Fatal(err)
		}
		img := resp.GetImage()
		if img.GetId() != ref || !slices.Equal(img.GetRepoTags(), []string{"docker.io/library/nginx:latest"}) ||
			!slices.Equal(img.GetRepoDigests(), []string{"docker.io/library/nginx@" + ref}) || img.GetSize() != sim.DefaultImageSize {
			t.Errorf("ImageStatus(%s) = %v", asked, img)
		}
	}
}
