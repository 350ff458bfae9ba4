package sim

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestConfigMissingImages: Config.MissingImages makes registries lack the
// images it names, as SetImageMissing: a reference under any spelling, or
// a glob pattern matched against the reference as asked or normalized; a
// pull of one fails as containerd's for a reference its registry answers
// 404 for (status NotFound), other images pull. A malformed pattern is
// refused by New.
func TestConfigMissingImages(t *testing.T) {
	ctx := context.Background()
	r, err := New(Config{MissingImages: []string{"nginx:nope", " nosuch/* ", "registry.example.com/team/*:2"}})
	if err != nil {
		t.Fatal(err)
	}
	for image, ref := range map[string]string{
		"nginx:nope":                       "docker.io/library/nginx:nope",
		"docker.io/library/nginx:nope":     "docker.io/library/nginx:nope",
		"nosuch/app":                       "docker.io/nosuch/app:latest",
		"docker.io/nosuch/app:1.0":         "docker.io/nosuch/app:1.0",
		"registry.example.com/team/gone:2": "registry.example.com/team/gone:2",
	} {
		_, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: image})
		wantStatus(t, "pull "+image, err, codes.NotFound, `rpc error: code = NotFound desc = failed to pull and unpack image "`+ref+
			`": failed to resolve reference "`+ref+`": `+ref+`: not found`)
	}
	for _, image := range []string{"nginx", "nginx:1.27", "nosuch/team/app", "registry.example.com/team/app:1"} {
		if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: image}); err != nil {
			t.Errorf("pull %s: %v", image, err)
		}
	}
	if _, err := New(Config{MissingImages: []string{"nosuch/[a"}}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}
