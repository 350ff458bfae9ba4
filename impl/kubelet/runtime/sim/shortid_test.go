package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestShortImageIDsAsContainerd: as containerd's CRI (LocalResolve, whose
// image store's Get takes a truncated id: go-digest digestset Lookup), an
// image is found by a prefix of its id's hex, with or without "sha256:",
// in ImageStatus, ImageSize, ImageUser, CreateContainer and RemoveImage; a
// reference of a present image wins over an id prefix it spells; a prefix
// of more than one image's id is containerd's error, which reaches the
// kubelet as gRPC status Unknown; a prefix of none is an absent image.
func TestShortImageIDsAsContainerd(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.SetImageSize("nginx", 42)
	r.SetImageUser("nginx", "1000")
	pull := func(image string) string {
		t.Helper()
		ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: image})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	ref := pull("nginx")
	hex := strings.TrimPrefix(ref, "sha256:")
	for _, short := range []string{"sha256:" + hex[:12], hex[:12], hex[:3], hex, "sha256:" + hex[:63]} {
		spec := &runtimeapi.ImageSpec{Image: short}
		if got, err := r.ImageStatus(ctx, spec); err != nil || got != ref {
			t.Errorf("ImageStatus(%s) = %q, %v; want %s", short, got, err, ref)
		}
		if size, err := r.ImageSize(ctx, spec); err != nil || size != 42 {
			t.Errorf("ImageSize(%s) = %d, %v; want 42", short, size, err)
		}
		if uid, _, err := r.ImageUser(ctx, spec); err != nil || uid == nil || *uid != 1000 {
			t.Errorf("ImageUser(%s) = %v, %v; want uid 1000", short, uid, err)
		}
	}
	for _, none := range []string{"sha256:" + strings.Repeat("0", 64), "sha512:" + hex[:12], "sha256:", hex + "0", "sha256:" + strings.ToUpper(hex[:12])} {
		if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: none}); err != nil || got != "" {
			t.Errorf("ImageStatus(%s) = %q, %v; want absent", none, got, err)
		}
	}

	// A container created from a short id runs the image, reported by its
	// full id.
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("p", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: hex[:12]}, Labels: map[string]string{runtime.LabelPodUID: "p"}}, nil)
	if err != nil {
		t.Fatalf("create from a short id: %v", err)
	}
	if st, err := r.ContainerStatus(ctx, id); err != nil || st.ImageRef != "docker.io/library/nginx@"+ref {
		t.Errorf("container status %+v, %v", st, err)
	}

	// An image named like another's id prefix is found by its name.
	named := pull(hex[:8])
	if named == ref {
		t.Fatal("the image named like the prefix has nginx's id")
	}
	if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: hex[:8]}); err != nil || got != named {
		t.Errorf("ImageStatus(%s) = %q, %v; want the image of that name, %s", hex[:8], got, err, named)
	}

	// Images until two ids share their first hex digit: that digit is
	// ambiguous.
	first := map[byte]string{}
	var shared string
	for i := 0; shared == ""; i++ {
		h := strings.TrimPrefix(pull(fmt.Sprintf("app-%d", i)), "sha256:")
		if _, ok := first[h[0]]; ok {
			shared = h[:1]
		}
		first[h[0]] = h
	}
	for _, ambiguous := range []string{shared, "sha256:" + shared} {
		spec := &runtimeapi.ImageSpec{Image: ambiguous}
		want := fmt.Sprintf("rpc error: code = Unknown desc = can not resolve %q locally: ambiguous digest string", ambiguous)
		if got, err := r.ImageStatus(ctx, spec); err == nil || err.Error() != want || status.Code(err) != codes.Unknown {
			t.Errorf("ImageStatus(%s) = %q, %v; want %s", ambiguous, got, err, want)
		}
		if err := r.RemoveImage(ctx, spec); err == nil || err.Error() != want {
			t.Errorf("RemoveImage(%s) = %v; want %s", ambiguous, err, want)
		}
	}

	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "sha256:" + hex[:12]}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx"}); err != nil || got != "" {
		t.Errorf("nginx after its removal by a short id: %q, %v", got, err)
	}
}
