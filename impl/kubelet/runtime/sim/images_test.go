package sim

import (
	"context"
	"fmt"
	"slices"
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

// TestImageReferencesAsContainerd: as containerd's CRI image store, an
// image is known by its normalized references (ParseDockerRef: "nginx" is
// docker.io/library/nginx:latest, one image under every spelling of it),
// its repo digest and its id; ListImages reports the normalized repo tag
// and repo digest; sizes and users set under any spelling apply; removing
// it under one name removes it.
func TestImageReferencesAsContainerd(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.SetImageSize("nginx", 42)
	r.SetImageUser("docker.io/library/nginx:latest", "1000")
	ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:latest"})
	if err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{"nginx:latest", "docker.io/library/nginx", "nginx"} {
		again, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: spelling})
		if err != nil || again != ref {
			t.Fatalf("pull %s: %q, %v; want the image %s", spelling, again, err, ref)
		}
	}
	digest := "docker.io/library/nginx@" + ref
	for _, s := range []string{"nginx", "nginx:latest", "docker.io/library/nginx:latest", "library/nginx", ref, digest} {
		spec := &runtimeapi.ImageSpec{Image: s}
		if got, err := r.ImageStatus(ctx, spec); err != nil || got != ref {
			t.Errorf("ImageStatus(%s) = %q, %v; want %s", s, got, err, ref)
		}
		if size, err := r.ImageSize(ctx, spec); err != nil || size != 42 {
			t.Errorf("ImageSize(%s) = %d, %v; want 42", s, size, err)
		}
		if uid, name, err := r.ImageUser(ctx, spec); err != nil || uid == nil || *uid != 1000 || name != "" {
			t.Errorf("ImageUser(%s) = %v %q %v; want uid 1000", s, uid, name, err)
		}
	}
	for _, s := range []string{"nginx:1.27", "docker.io/nginx/nginx", "quay.io/nginx"} {
		if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: s}); err != nil || got != "" {
			t.Errorf("ImageStatus(%s) = %q, %v; want absent", s, got, err)
		}
		// An absent image has no user, and no error (CRI ImageStatus
		// answers without an image).
		if uid, name, err := r.ImageUser(ctx, &runtimeapi.ImageSpec{Image: s}); err != nil || uid != nil || name != "" {
			t.Errorf("ImageUser(%s) = %v %q %v; want neither", s, uid, name, err)
		}
	}
	digested := "registry.example/app:1@sha256:" + strings.Repeat("cd", 32)
	dref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: digested})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "registry.example/app@sha256:" + strings.Repeat("cd", 32)}); err != nil || got != dref {
		t.Errorf("ImageStatus of the digest without the tag: %q, %v; want %s", got, err, dref)
	}
	list, err := r.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type image struct{ id, tags, digests string }
	var got []image
	for _, img := range list {
		got = append(got, image{img.Id, strings.Join(img.RepoTags, ","), strings.Join(img.RepoDigests, ",")})
	}
	want := []image{
		{ref, "docker.io/library/nginx:latest", digest},
		{dref, "", "registry.example/app@sha256:" + strings.Repeat("cd", 32)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ListImages %+v, want %+v", got, want)
	}
	// As containerd's CRI ListImages, a filter is ignored.
	if list, err := r.ListImages(ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); err != nil || len(list) != 2 {
		t.Errorf("ListImages with a filter by nginx: %v, %v; want both images", list, err)
	}
	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"nginx:latest", ref, digest} {
		if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: s}); err != nil || got != "" {
			t.Errorf("after removing nginx, ImageStatus(%s) = %q, %v; want absent", s, got, err)
		}
	}
}

// TestImageSpellingsBounded: the normalized forms of image names asked
// are remembered for at most maxSpellings names, and resolving stays
// right across the forgetting.
func TestImageSpellingsBounded(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * maxSpellings {
		if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: fmt.Sprintf("app:%d", i)}); err != nil || got != "" {
			t.Fatalf("app:%d: %q, %v", i, got, err)
		}
		if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:latest"}); err != nil || got != ref {
			t.Fatalf("nginx:latest after %d other names: %q, %v", i, got, err)
		}
	}
	r.mu.Lock()
	n := len(r.spellings)
	r.mu.Unlock()
	if n > maxSpellings {
		t.Errorf("%d names remembered, at most %d", n, maxSpellings)
	}
}
