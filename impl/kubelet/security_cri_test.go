package kubelet

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// newRecordingCRIHarness is newCRIHarness whose kubelet records events.
func newRecordingCRIHarness(t *testing.T) (*harness, *record.FakeRecorder) {
	h := newHarness(t, nil)
	client, dir := dialFakeCRI(t, h.rt)
	h.krt = client
	rec := record.NewFakeRecorder(1000)
	h.k = h.newKubelet(func(c *Config) { c.PodLogsDir = filepath.Join(dir, "pods"); c.Recorder = rec })
	return h, rec
}

func simID(t *testing.T, containerID string) string {
	t.Helper()
	id, ok := strings.CutPrefix(containerID, "sim://")
	if !ok {
		t.Fatalf("container id %q", containerID)
	}
	return id
}

// TestSecurityContextOverCRI: the pod's and the container's
// securityContext reach the runtime over CRI as the sandbox's and the
// container's Linux security context.
func TestSecurityContextOverCRI(t *testing.T) {
	h, _ := newRecordingCRIHarness(t)
	p := h.create(h.pod("secure", func(p *v1.Pod) {
		p.Spec.ShareProcessNamespace = ptrTo(true)
		p.Spec.SecurityContext = &v1.PodSecurityContext{
			RunAsUser: ptrTo(int64(1000)), FSGroup: ptrTo(int64(2000)),
			Sysctls:        []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}},
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		}
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
			RunAsGroup: ptrTo(int64(3000)), ReadOnlyRootFilesystem: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false),
			Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
		}
	}))
	got := h.sync(p)
	cs := cstatus(got, "app")
	if cs.State.Running == nil {
		t.Fatalf("container not running: %+v", cs.State)
	}
	sc, err := h.rt.ContainerSecurity(simID(t, cs.ContainerID))
	if err != nil {
		t.Fatal(err)
	}
	if sc.GetRunAsUser().GetValue() != 1000 || sc.GetRunAsGroup().GetValue() != 3000 || !sc.ReadonlyRootfs || !sc.NoNewPrivs ||
		strings.Join(sc.GetCapabilities().GetDropCapabilities(), ",") != "ALL" ||
		sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault ||
		sc.GetNamespaceOptions().GetPid() != runtimeapi.NamespaceMode_POD || len(sc.SupplementalGroups) != 1 || sc.SupplementalGroups[0] != 2000 ||
		len(sc.MaskedPaths) == 0 {
		t.Fatalf("container security context over CRI: %v", sc)
	}
	sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes %v %v", sbs, err)
	}
	linux, err := h.rt.SandboxLinux(sbs[0].Id)
	if err != nil {
		t.Fatal(err)
	}
	if linux.Sysctls["net.ipv4.ip_unprivileged_port_start"] != "80" || linux.GetSecurityContext().GetRunAsUser().GetValue() != 1000 ||
		linux.GetSecurityContext().GetNamespaceOptions().GetPid() != runtimeapi.NamespaceMode_POD {
		t.Fatalf("sandbox config over CRI: %v", linux)
	}
}

// TestRunAsNonRootRefusesRootImage: with runAsNonRoot and no runAsUser,
// an image without a user (root) is refused with CreateContainerConfigError
// and upstream's message; an image whose user is 1000 starts, its uid
// passed to the runtime.
func TestRunAsNonRootRefusesRootImage(t *testing.T) {
	h, rec := newRecordingCRIHarness(t)
	nonRoot := func(image string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true)}
			p.Spec.Containers[0].Image = image
		}
	}
	p := h.create(h.pod("rooted", nonRoot("busybox:1.36")))
	got := h.sync(p)
	cs := cstatus(got, "app")
	want := `container has runAsNonRoot and image will run as root (pod: "rooted_default(uid-rooted)", container: app)`
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" || cs.State.Waiting.Message != want {
		t.Fatalf("root image under runAsNonRoot: %+v", cs.State)
	}
	if n, c := h.rt.Counts(); n != 1 || c != 0 {
		t.Fatalf("%d sandboxes, %d containers: a container was created", n, c)
	}
	wantEvents(t, drain(rec), "Warning Failed Error: "+want)

	h.rt.SetImageUser("app:2", "1000:1000")
	p = h.create(h.pod("unrooted", nonRoot("app:2")))
	cs = cstatus(h.sync(p), "app")
	if cs.State.Running == nil {
		t.Fatalf("uid 1000 image under runAsNonRoot: %+v", cs.State)
	}
	sc, err := h.rt.ContainerSecurity(simID(t, cs.ContainerID))
	if err != nil || sc.GetRunAsUser() == nil || sc.GetRunAsUser().GetValue() != 1000 {
		t.Fatalf("image uid not passed: %v %v", sc, err)
	}

	h.rt.SetImageUser("named:1", "nginx")
	p = h.create(h.pod("named", nonRoot("named:1")))
	cs = cstatus(h.sync(p), "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" ||
		!strings.HasPrefix(cs.State.Waiting.Message, "container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root") {
		t.Fatalf("named image user under runAsNonRoot: %+v", cs.State)
	}
}

func pullSecret(name, registry, user, pass string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(
			`{"auths": {"` + registry + `": {"username": "` + user + `", "password": "` + pass + `"}}}`)},
	}
}

// TestImagePullSecretsOverCRI: the kubelet reads the pod's
// imagePullSecrets and sends the credentials matching the image's
// registry as CRI AuthConfig, the most specific first, falling back to
// the next when a pull is refused.
func TestImagePullSecretsOverCRI(t *testing.T) {
	h, rec := newRecordingCRIHarness(t)
	const image = "registry.example.com/team/app:1.0"
	h.rt.RequireCredentials("registry.example.com", "robot", "right")
	for _, s := range []*v1.Secret{
		pullSecret("team", "registry.example.com/team", "robot", "stale"),
		pullSecret("site", "https://registry.example.com", "robot", "right"),
		pullSecret("other", "quay.io", "robot", "quay"),
	} {
		if _, err := h.client.CoreV1().Secrets("default").Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Without pull secrets the registry refuses the pull.
	p := h.create(h.pod("anonymous", func(p *v1.Pod) { p.Spec.Containers[0].Image = image }))
	cs := cstatus(h.sync(p), "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ErrImagePull" || !strings.Contains(cs.State.Waiting.Message, "authorization failed: no basic auth credentials") {
		t.Fatalf("pull without credentials: %+v", cs.State)
	}
	if auths := h.rt.PullAuths(image); len(auths) != 1 || auths[0] != nil {
		t.Fatalf("anonymous pull sent %v", auths)
	}

	// With them: the team credentials first (longest match), then the
	// registry-wide ones; quay.io's are not sent.
	p = h.create(h.pod("authenticated", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = image
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "other"}, {Name: "site"}, {Name: "missing"}, {Name: "team"}}
	}))
	drain(rec)
	cs = cstatus(h.sync(p), "app")
	if cs.State.Running == nil {
		t.Fatalf("pull with credentials: %+v", cs.State)
	}
	auths := h.rt.PullAuths(image)[1:]
	if len(auths) != 2 || auths[0].Password != "stale" || auths[1].Password != "right" || auths[1].Username != "robot" ||
		auths[1].ServerAddress != "" {
		t.Fatalf("credentials sent over CRI: %v", auths)
	}
	wantEvents(t, drain(rec),
		"Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed.",
		`Normal Pulled Successfully pulled image "`+image+`" in 0s (0s including waiting). Image size: 10485760 bytes.`)
}

func ptrTo[T any](v T) *T { return &v }
