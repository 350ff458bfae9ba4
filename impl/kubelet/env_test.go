package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

type mapEnvSource struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (m mapEnvSource) ConfigMap(_, name string) (*v1.ConfigMap, error) {
	if cm, ok := m.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (m mapEnvSource) Secret(_, name string) (*v1.Secret, error) {
	if s, ok := m.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestContainerEnv(t *testing.T) {
	src := mapEnvSource{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}},
		secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"TOKEN": []byte("s3cr3t")}}},
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec:   v1.PodSpec{NodeName: "n1"},
		Status: v1.PodStatus{PodIP: "10.0.0.5", HostIP: "192.168.0.1"}}
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{
			{Name: "A", Value: "x"},
			{Name: "B", Value: "$(A)-$(NOPE)-$$(A)"},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}},
			{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "CFG_MODE", Value: "slow"},
		},
	}
	env, err := ContainerEnv(pod, c, src, v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range env {
		got[e.Name] = e.Value
	}
	want := map[string]string{"CFG_MODE": "slow", "CFG_LEVEL": "3", "A": "x", "B": "x-$(NOPE)-$(A)", "TOKEN": "s3cr3t",
		"POD": "p", "APP": "web", "IP": "10.0.0.5", "CPU": "4"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["OPT"]; ok || len(got) != len(want) {
		t.Errorf("env = %v", got)
	}

	for _, tc := range []struct {
		env  v1.EnvVar
		want string
	}{
		{v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Key: "k"}}}, `configmap "gone" not found`},
		{v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}, "couldn't find key k in ConfigMap ns/cfg"},
		{v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nosec"}, Key: "k"}}}, `secret "nosec" not found`},
	} {
		_, err := ContainerEnv(pod, &v1.Container{Env: []v1.EnvVar{tc.env}}, src, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestMissingConfigMapHoldsContainer(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("needs-cm", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "x"}}}}
	}))
	got := h.sync(p)
	cs := cstatus(got, "app")
	if got.Status.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" ||
		cs.State.Waiting.Message != `configmap "cfg" not found` {
		t.Fatalf("%s %+v", got.Status.Phase, cs.State)
	}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"x": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got = h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("not running once the ConfigMap exists: %+v", cstatus(got, "app"))
	}
}

func TestEnvReachesTheContainer(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("env", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "MY_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		}
	}))
	got := h.sync(p)
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	for name, want := range map[string]string{"GREETING": "hello\n", "MY_IP": got.Status.PodIP + "\n"} {
		out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"printenv", name}, time.Second)
		if err != nil || code != 0 || string(out) != want {
			t.Errorf("printenv %s = %q %d %v, want %q", name, out, code, err, want)
		}
	}
}

// On a dual-stack node the pod's status and its downward API list both
// addresses, the first pod CIDR's first, from the first start on.
func TestDualStackPodIPs(t *testing.T) {
	h := newHarness(t, nil)
	rt, err := sim.New(sim.Config{Clock: h.clock, PodCIDR: "10.244.7.0/24,fd00:10:244:7::/64"})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	h.k = h.newKubelet(func(c *Config) { c.PodCIDR = "10.244.7.0/24,fd00:10:244:7::/64" })
	p := h.create(h.pod("dual", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}}}
	}))
	got := h.sync(p)
	if len(got.Status.PodIPs) != 2 || got.Status.PodIP != got.Status.PodIPs[0].IP ||
		!strings.HasPrefix(got.Status.PodIPs[0].IP, "10.244.7.") || !strings.HasPrefix(got.Status.PodIPs[1].IP, "fd00:10:244:7::") {
		t.Fatalf("pod IPs %q %v", got.Status.PodIP, got.Status.PodIPs)
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	want := got.Status.PodIPs[0].IP + "," + got.Status.PodIPs[1].IP + "\n"
	if out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"printenv", "IPS"}, time.Second); err != nil || code != 0 || string(out) != want {
		t.Errorf("printenv IPS = %q %d %v, want %q", out, code, err, want)
	}
}

// A new sandbox may keep the primary address and get another secondary
// one (here the IPv4 pool holds one address, the IPv6 one hands out the
// next): the downward API of the containers it starts sees the new
// sandbox's addresses, element by element, not the pod's last status.
func TestNewSandboxSecondaryIPReachesTheDownwardAPI(t *testing.T) {
	const cidrs = "10.244.7.0/30,fd00:10:244:7::/64"
	h := newHarness(t, nil)
	rt, err := sim.New(sim.Config{Clock: h.clock, PodCIDR: cidrs})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	h.k = h.newKubelet(func(c *Config) { c.PodCIDR = cidrs })
	p := h.create(h.pod("resandboxed", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
		}
	}))
	first := h.sync(p)
	if len(first.Status.PodIPs) != 2 {
		t.Fatalf("pod IPs %v", first.Status.PodIPs)
	}
	rs, err := h.k.podRuntimeState(h.ctx, p.UID)
	if err != nil || rs.LatestSandbox() == nil {
		t.Fatalf("runtime state %+v, %v", rs, err)
	}
	if err := h.rt.StopPodSandbox(h.ctx, rs.LatestSandbox().ID); err != nil {
		t.Fatal(err)
	}
	var got *v1.Pod
	for range 3 { // the dead sandbox's containers go, a new sandbox and container come
		got = h.sync(p)
		if cs := cstatus(got, "app"); cs.State.Running != nil && cs.ContainerID != cstatus(first, "app").ContainerID {
			break
		}
	}
	if cs := cstatus(got, "app"); cs.State.Running == nil || cs.ContainerID == cstatus(first, "app").ContainerID {
		t.Fatalf("no new container running: %+v", got.Status.ContainerStatuses)
	}
	if got.Status.PodIP != first.Status.PodIP || got.Status.PodIPs[1].IP == first.Status.PodIPs[1].IP {
		t.Fatalf("pod IPs %v then %v, want the same IPv4 address and another IPv6 one", first.Status.PodIPs, got.Status.PodIPs)
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	for name, want := range map[string]string{"IP": got.Status.PodIP + "\n", "IPS": got.Status.PodIPs[0].IP + "," + got.Status.PodIPs[1].IP + "\n"} {
		if out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"printenv", name}, time.Second); err != nil || code != 0 || string(out) != want {
			t.Errorf("printenv %s = %q %d %v, want %q", name, out, code, err, want)
		}
	}
}
