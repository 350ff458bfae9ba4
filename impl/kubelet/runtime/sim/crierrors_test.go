package sim

import (
	"context"
	"regexp"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// TestPullErrorsAsContainerd: failed pulls are containerd's CRI PullImage
// errors as the kubelet's CRI client returns them (upstream's remote image
// service strips the code of an Unknown status only): a registry without
// the image is status NotFound ("failed to pull and unpack image ...:
// failed to resolve reference ...: <ref>: not found"); a registry refusing
// the credentials is containerd's Unknown message alone, "pull access
// denied ... no basic auth credentials" without any, the manifest HEAD
// request's 401 with wrong ones. References are containerd's normalized
// ones; the credentials are checked before the image is looked for.
func TestPullErrorsAsContainerd(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.RequireCredentials("registry.example.com", "robot", "right")
	r.SetImageMissing("nginx:nope")
	r.SetImageMissing("registry.example.com/team/gone:2")
	const digest = "sha256:" + "ab" + "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
	right := &runtimeapi.AuthConfig{Username: "robot", Password: "right"}
	for _, tc := range []struct {
		image string
		auth  *runtimeapi.AuthConfig
		code  codes.Code // of a status error; OK: a plain error
		want  string
	}{
		{"nginx:nope", nil, codes.NotFound,
			`rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": failed to resolve reference "docker.io/library/nginx:nope": docker.io/library/nginx:nope: not found`},
		{"docker.io/library/nginx:nope", right, codes.NotFound,
			`rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": failed to resolve reference "docker.io/library/nginx:nope": docker.io/library/nginx:nope: not found`},
		{"registry.example.com/team/app:1.0", nil, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/app:1.0": failed to resolve reference "registry.example.com/team/app:1.0": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`},
		{"registry.example.com/team/app:1.0", &runtimeapi.AuthConfig{Username: "robot"}, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/app:1.0": failed to resolve reference "registry.example.com/team/app:1.0": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`},
		{"registry.example.com/team/app:1.0", &runtimeapi.AuthConfig{Username: "robot", Password: "stale"}, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/app:1.0": failed to resolve reference "registry.example.com/team/app:1.0": unexpected status from HEAD request to https://registry.example.com/v2/team/app/manifests/1.0: 401 Unauthorized`},
		{"registry.example.com/team/app", &runtimeapi.AuthConfig{Username: "robot", Password: "stale"}, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/app:latest": failed to resolve reference "registry.example.com/team/app:latest": unexpected status from HEAD request to https://registry.example.com/v2/team/app/manifests/latest: 401 Unauthorized`},
		{"registry.example.com/team/app@" + digest, &runtimeapi.AuthConfig{Username: "robot", Password: "stale"}, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/app@` + digest + `": failed to resolve reference "registry.example.com/team/app@` + digest + `": unexpected status from HEAD request to https://registry.example.com/v2/team/app/manifests/` + digest + `: 401 Unauthorized`},
		{"registry.example.com/team/gone:2", nil, codes.OK,
			`failed to pull and unpack image "registry.example.com/team/gone:2": failed to resolve reference "registry.example.com/team/gone:2": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`},
		{"registry.example.com/team/gone:2", right, codes.NotFound,
			`rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/team/gone:2": failed to resolve reference "registry.example.com/team/gone:2": registry.example.com/team/gone:2: not found`},
	} {
		ref, err := r.PullImageWithAuth(ctx, &runtimeapi.ImageSpec{Image: tc.image}, tc.auth)
		if err == nil || err.Error() != tc.want {
			t.Errorf("pull %s with %v = %q, %v;\n want %s", tc.image, tc.auth, ref, err, tc.want)
			continue
		}
		if s, isStatus := status.FromError(err); tc.code == codes.OK && isStatus || tc.code != codes.OK && s.Code() != tc.code {
			t.Errorf("pull %s with %v: gRPC status %v (a status error: %v), want %v", tc.image, tc.auth, s.Code(), isStatus, tc.code)
		}
	}
	if _, err := r.PullImageWithAuth(ctx, &runtimeapi.ImageSpec{Image: "registry.example.com/team/app:1.0"}, right); err != nil {
		t.Errorf("pull with the registry's credentials: %v", err)
	}
	if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}); err != nil {
		t.Errorf("pull of another tag of a missing one: %v", err)
	}
}

// TestNetworkSetupFailuresAsContainerd: a sandbox whose network cannot be
// set up (the pool has no address left; the pod's network-failure fault)
// is refused with containerd's error as the kubelet receives it over CRI:
// status Unknown, "failed to setup network for sandbox <id>: plugin
// type=\"bridge\" name=\"containerd-net\" failed (add): " and the cause,
// for an exhausted pool host-local IPAM's words; nothing is created and
// no address is held.
func TestNetworkSetupFailuresAsContainerd(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.3.0/29") // 5 assignable: .2 - .6
	prefix := `^rpc error: code = Unknown desc = failed to setup network for sandbox "[0-9a-f]{64}": plugin type="bridge" name="containerd-net" failed \(add\): `
	check := func(err error, cause string) {
		t.Helper()
		want := regexp.MustCompile(prefix + regexp.QuoteMeta(cause) + "$")
		if err == nil || !want.MatchString(err.Error()) || status.Code(err) != codes.Unknown {
			t.Fatalf("err = %v (code %s), want %s", err, status.Code(err), want)
		}
	}
	_, err := r.RunPodSandbox(ctx, sandboxConfig("f", map[string]string{AnnotationNetworkFailure: "failed to set bridge addr: could not add IP address to \"cni0\": permission denied"}), "")
	check(err, `failed to set bridge addr: could not add IP address to "cni0": permission denied`)
	_, err = r.RunPodSandbox(ctx, sandboxConfig("g", map[string]string{AnnotationNetworkFailure: ""}), "")
	check(err, "simulated network failure")
	if sb, _ := r.Counts(); sb != 0 {
		t.Fatalf("%d sandboxes after refused network set-ups", sb)
	}
	for i := 0; i < 5; i++ {
		if _, err := r.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i)), nil), ""); err != nil {
			t.Fatalf("sandbox %d: %v (a refused set-up held an address?)", i, err)
		}
	}
	_, err = r.RunPodSandbox(ctx, sandboxConfig("z", nil), "")
	check(err, "failed to allocate for range 0: no IP addresses available in range set: 10.244.3.1-10.244.3.6")

	// The fault by default annotation, for every pod; an IPv6 pool's
	// range ends at its last address.
	d, err := New(Config{Clock: testingclock.NewFakeClock(t0), PodCIDR: "fd00:10:244:3::/126",
		DefaultAnnotations: map[string]string{AnnotationNetworkFailure: "no route"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.RunPodSandbox(ctx, sandboxConfig("a", nil), "")
	check(err, "no route")
	v6, _ := newSim(t, "fd00:10:244:3::/126") // 2 assignable: ::2, ::3
	for i := 0; i < 2; i++ {
		if _, err := v6.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i)), nil), ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err = v6.RunPodSandbox(ctx, sandboxConfig("z", nil), "")
	check(err, "failed to allocate for range 0: no IP addresses available in range set: fd00:10:244:3::1-fd00:10:244:3::3")
}
