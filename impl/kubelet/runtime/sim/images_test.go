package sim

import (
	"context"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
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

// TestContainerImageAsContainerd: as containerd's CRI, a container may be
// created from the image id a pull returned; its status reports the
// image's repo tag (the name normalized) and repo digest, what PodState
// reports too, while ListContainers reports what it was created from and
// the image id; once the image is removed, the status falls back to
// those. An image pulled by digest alone has no repo tag.
func TestContainerImageAsContainerd(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create := func(pod, image string) (id, ref string) {
		t.Helper()
		ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: image})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := r.RunPodSandbox(ctx, sandboxConfig(pod, nil), "")
		if err != nil {
			t.Fatal(err)
		}
		id, err = r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: image}, Labels: map[string]string{runtime.LabelPodUID: pod}}, nil)
		if err != nil {
			t.Fatalf("create from %s: %v", ref, err)
		}
		return id, ref
	}
	check := func(pod, id, wantImage, wantRef string) {
		t.Helper()
		st, err := r.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetImage().GetImage() != wantImage || st.ImageRef != wantRef {
			t.Fatalf("status image %q ref %q, want %q %q", st.GetImage().GetImage(), st.ImageRef, wantImage, wantRef)
		}
		ps, err := r.PodState(ctx, pod)
		if err != nil || len(ps.Containers) != 1 || ps.Containers[0].Image != wantImage || ps.Containers[0].ImageRef != wantRef {
			t.Fatalf("pod state %+v, %v; want image %q ref %q", ps, err, wantImage, wantRef)
		}
	}

	id, ref := create("tagged", "nginx:latest")
	check("tagged", id, "docker.io/library/nginx:latest", "docker.io/library/nginx@"+ref)
	list, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(list) != 1 || list[0].GetImage().GetImage() != ref || list[0].ImageRef != ref {
		t.Fatalf("ListContainers %v, %v; want image and ref %s", list, err, ref)
	}
	if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}); err != nil || got != ref {
		t.Fatalf("ImageStatus by id: %q, %v", got, err)
	}
	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: ref}); err != nil {
		t.Fatal(err)
	}
	check("tagged", id, ref, ref)

	digested := "registry.example/app@sha256:" + strings.Repeat("cd", 32)
	id, ref = create("digested", digested)
	check("digested", id, ref, digested)
}
