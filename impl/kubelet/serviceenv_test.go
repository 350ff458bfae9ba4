package kubelet

import (
	"context"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/fakeclient"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func svc(ns, name, clusterIP string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports}}
}

func port(name string, p int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: p, Protocol: proto}
}

func kubernetesService() *v1.Service {
	return svc("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))
}

// kubernetesVars is what every container gets from the API server's
// service (upstream's documented output for a 10.96.0.1 cluster IP).
var kubernetesVars = []EnvVar{
	{"KUBERNETES_PORT", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1"},
	{"KUBERNETES_PORT_443_TCP_PORT", "443"},
	{"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
	{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
	{"KUBERNETES_SERVICE_PORT", "443"},
	{"KUBERNETES_SERVICE_PORT_HTTPS", "443"},
}

// redisVars is the docker-link example of upstream's documentation: a
// service redis-primary on 10.0.0.11:6379 with one unnamed port.
var redisVars = []EnvVar{
	{"REDIS_PRIMARY_PORT", "tcp://10.0.0.11:6379"},
	{"REDIS_PRIMARY_PORT_6379_TCP", "tcp://10.0.0.11:6379"},
	{"REDIS_PRIMARY_PORT_6379_TCP_ADDR", "10.0.0.11"},
	{"REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"},
	{"REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"},
	{"REDIS_PRIMARY_SERVICE_HOST", "10.0.0.11"},
	{"REDIS_PRIMARY_SERVICE_PORT", "6379"},
}

func sortedConcat(lists ...[]EnvVar) []EnvVar {
	var out []EnvVar
	for _, l := range lists {
		out = append(out, l...)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestServiceEnv(t *testing.T) {
	redis := svc("ns", "redis-primary", "10.0.0.11", port("", 6379, ""))
	headless := svc("ns", "db", v1.ClusterIPNone, port("", 5432, v1.ProtocolTCP))
	external := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com"}}
	otherNS := svc("other", "cache", "10.0.0.20", port("", 11211, v1.ProtocolTCP))
	multi := svc("ns", "dns-web", "10.0.0.12", port("http", 80, v1.ProtocolTCP), port("dns-udp", 53, v1.ProtocolUDP))
	v6 := svc("ns", "v6", "fd00::5", port("", 8080, v1.ProtocolSCTP))
	ownKubernetes := svc("ns", "kubernetes", "10.0.0.99", port("", 8443, v1.ProtocolTCP))

	tests := []struct {
		name     string
		services []*v1.Service
		ns       string
		links    bool
		want     []EnvVar
	}{
		{"API server's service always, links on", []*v1.Service{kubernetesService()}, "ns", true, kubernetesVars},
		{"API server's service always, links off", []*v1.Service{kubernetesService(), redis}, "ns", false, kubernetesVars},
		{"namespace service with links", []*v1.Service{kubernetesService(), redis}, "ns", true, sortedConcat(kubernetesVars, redisVars)},
		{"headless, ExternalName and other namespaces give nothing",
			[]*v1.Service{kubernetesService(), headless, external, otherNS}, "ns", true, kubernetesVars},
		{"no API server service", []*v1.Service{redis}, "ns", true, redisVars},
		{"pod in default with links off: only kubernetes", []*v1.Service{kubernetesService(), svc("default", "web", "10.0.0.30", port("", 80, ""))}, "default", false, kubernetesVars},
		{"named ports and UDP", []*v1.Service{multi}, "ns", true, []EnvVar{
			{"DNS_WEB_PORT", "tcp://10.0.0.12:80"},
			{"DNS_WEB_PORT_53_UDP", "udp://10.0.0.12:53"},
			{"DNS_WEB_PORT_53_UDP_ADDR", "10.0.0.12"},
			{"DNS_WEB_PORT_53_UDP_PORT", "53"},
			{"DNS_WEB_PORT_53_UDP_PROTO", "udp"},
			{"DNS_WEB_PORT_80_TCP", "tcp://10.0.0.12:80"},
			{"DNS_WEB_PORT_80_TCP_ADDR", "10.0.0.12"},
			{"DNS_WEB_PORT_80_TCP_PORT", "80"},
			{"DNS_WEB_PORT_80_TCP_PROTO", "tcp"},
			{"DNS_WEB_SERVICE_HOST", "10.0.0.12"},
			{"DNS_WEB_SERVICE_PORT", "80"},
			{"DNS_WEB_SERVICE_PORT_DNS_UDP", "53"},
			{"DNS_WEB_SERVICE_PORT_HTTP", "80"},
		}},
		{"IPv6 cluster IP in brackets, SCTP", []*v1.Service{v6}, "ns", true, []EnvVar{
			{"V6_PORT", "sctp://[fd00::5]:8080"},
			{"V6_PORT_8080_SCTP", "sctp://[fd00::5]:8080"},
			{"V6_PORT_8080_SCTP_ADDR", "fd00::5"},
			{"V6_PORT_8080_SCTP_PORT", "8080"},
			{"V6_PORT_8080_SCTP_PROTO", "sctp"},
			{"V6_SERVICE_HOST", "fd00::5"},
			{"V6_SERVICE_PORT", "8080"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ServiceEnv(tc.services, tc.ns, tc.links)); diff != "" {
				t.Fatalf("-want +got:\n%s", diff)
			}
		})
	}

	// The namespace's own "kubernetes" service takes the place of
	// default's, whichever is listed first.
	wantOwn := []EnvVar{
		{"KUBERNETES_PORT", "tcp://10.0.0.99:8443"},
		{"KUBERNETES_PORT_8443_TCP", "tcp://10.0.0.99:8443"},
		{"KUBERNETES_PORT_8443_TCP_ADDR", "10.0.0.99"},
		{"KUBERNETES_PORT_8443_TCP_PORT", "8443"},
		{"KUBERNETES_PORT_8443_TCP_PROTO", "tcp"},
		{"KUBERNETES_SERVICE_HOST", "10.0.0.99"},
		{"KUBERNETES_SERVICE_PORT", "8443"},
	}
	for _, order := range [][]*v1.Service{{kubernetesService(), ownKubernetes}, {ownKubernetes, kubernetesService()}} {
		if diff := cmp.Diff(wantOwn, ServiceEnv(order, "ns", true)); diff != "" {
			t.Fatalf("own kubernetes service (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(kubernetesVars, ServiceEnv(order, "ns", false)); diff != "" {
			t.Fatalf("own kubernetes service, links off (-want +got):\n%s", diff)
		}
	}
}

// serviceMapSource is an env source that also has services.
type serviceMapSource struct {
	mapEnvSource
	services []*v1.Service
	err      error
}

func (s serviceMapSource) ServiceEnv(pod *v1.Pod) ([]EnvVar, error) {
	if s.err != nil {
		return nil, s.err
	}
	return ServiceEnv(s.services, pod.Namespace, enableServiceLinks(pod)), nil
}

func TestContainerEnvServicePrecedence(t *testing.T) {
	src := serviceMapSource{
		mapEnvSource: mapEnvSource{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"REDIS_PRIMARY_SERVICE_PORT": "1"}}}},
		services:     []*v1.Service{kubernetesService(), svc("ns", "redis-primary", "10.0.0.11", port("", 6379, ""))},
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: "api.example"},
			{Name: "REDIS_URL", Value: "redis://$(REDIS_PRIMARY_SERVICE_HOST):$(REDIS_PRIMARY_SERVICE_PORT)"},
		},
	}
	env, err := ContainerEnv(pod, c, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The container's own variables come first and win; the service
	// variables follow without the names it defines; env values see
	// service variables only where the container defines none earlier.
	want := []EnvVar{
		{"REDIS_PRIMARY_SERVICE_PORT", "1"},
		{"KUBERNETES_SERVICE_HOST", "api.example"},
		{"REDIS_URL", "redis://10.0.0.11:1"},
	}
	for _, e := range sortedConcat(kubernetesVars, redisVars) {
		if e.Name != "KUBERNETES_SERVICE_HOST" && e.Name != "REDIS_PRIMARY_SERVICE_PORT" {
			want = append(want, e)
		}
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Fatalf("-want +got:\n%s", diff)
	}

	pod.Spec.EnableServiceLinks = ptr.To(false)
	env, err = ContainerEnv(pod, &v1.Container{Env: []v1.EnvVar{{Name: "U", Value: "$(REDIS_PRIMARY_SERVICE_HOST)"}}}, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append([]EnvVar{{"U", "$(REDIS_PRIMARY_SERVICE_HOST)"}}, kubernetesVars...), env); diff != "" {
		t.Fatalf("links off (-want +got):\n%s", diff)
	}

	src.err = errServicesNotSynced
	if _, err := ContainerEnv(pod, c, src, nil); !errors.Is(err, errServicesNotSynced) {
		t.Fatalf("error %v, want %v", err, errServicesNotSynced)
	}
}

// printenv runs printenv name in the pod's container app.
func (h *harness) printenv(p *v1.Pod, name string) (string, bool) {
	h.t.Helper()
	id := strings.TrimPrefix(cstatus(p, "app").ContainerID, "sim://")
	if id == "" {
		h.t.Fatalf("pod %s has no container: %+v", p.Name, p.Status)
	}
	out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"printenv", name}, time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.TrimSuffix(string(out), "\n"), code == 0
}

func TestServiceVariablesReachTheContainer(t *testing.T) {
	h := newHarness(t, nil)
	for _, s := range []*v1.Service{kubernetesService(), svc("default", "redis-primary", "10.0.0.11", port("", 6379, "")),
		svc("default", "db", v1.ClusterIPNone, port("", 5432, ""))} {
		if _, err := h.client.CoreV1().Services(s.Namespace).Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	linked := h.sync(h.create(h.pod("linked", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "REDIS_PRIMARY_PORT", Value: "mine"}}
	})))
	unlinked := h.sync(h.create(h.pod("unlinked", func(p *v1.Pod) { p.Spec.EnableServiceLinks = ptr.To(false) })))

	for _, tc := range []struct {
		pod       *v1.Pod
		name      string
		want      string
		wantFound bool
	}{
		{linked, "KUBERNETES_SERVICE_HOST", "10.96.0.1", true},
		{linked, "KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443", true},
		{linked, "REDIS_PRIMARY_SERVICE_HOST", "10.0.0.11", true},
		{linked, "REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379", true},
		{linked, "REDIS_PRIMARY_PORT", "mine", true},
		{linked, "DB_SERVICE_HOST", "", false},
		{unlinked, "KUBERNETES_SERVICE_HOST", "10.96.0.1", true},
		{unlinked, "KUBERNETES_SERVICE_PORT_HTTPS", "443", true},
		{unlinked, "REDIS_PRIMARY_SERVICE_HOST", "", false},
	} {
		got, found := h.printenv(tc.pod, tc.name)
		if got != tc.want || found != tc.wantFound {
			t.Errorf("%s: printenv %s = %q (found %v), want %q (found %v)", tc.pod.Name, tc.name, got, found, tc.want, tc.wantFound)
		}
	}
}

// neverSynced is a service source whose first list never completes (the
// API server denies or does not answer the kubelet's list).
type neverSynced struct{}

func (neverSynced) HasSynced() bool              { return false }
func (neverSynced) Synced() <-chan struct{}      { return nil }
func (neverSynced) List() ([]*v1.Service, error) { return nil, nil }

func TestUnsyncedServicesHoldTheContainer(t *testing.T) {
	h := newHarness(t, nil)
	var src serviceSource = neverSynced{}
	h.k.services.Store(&src)
	got := h.sync(h.create(h.pod("early", nil)))
	cs := cstatus(got, "app")
	if got.Status.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" ||
		cs.State.Waiting.Message != errServicesNotSynced.Error() {
		t.Fatalf("%s %+v", got.Status.Phase, cs.State)
	}
}

// TestRunSharesTheServiceInformer runs two kubelets over one clientset: they share
// one service informer, their containers get the service variables, and
// stopping both stops it.
func TestRunSharesTheServiceInformer(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	clk := testingclock.NewFakeClock(t0)
	client := fakeclient.CopyingWatches(fake.NewClientset(kubernetesService(), svc("apps", "redis-primary", "10.0.0.11", port("", 6379, ""))))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kubelets []*Kubelet
	var rts []*sim.Runtime
	for _, node := range []string{"n1", "n2"} {
		rt, err := sim.New(sim.Config{Clock: clk, PodCIDR: "10.244.1.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		k, err := New(ctx, client, Config{NodeName: node, Clock: clk}, rt)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = k.Run(ctx) }()
		kubelets, rts = append(kubelets, k), append(rts, rt)
	}
	for i, node := range []string{"n1", "n2"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + node, Namespace: "apps", UID: types.UID("uid-" + node)},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "app", Image: "nginx:1"}}}}
		if _, err := client.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var id string
		eventually(t, "container of "+pod.Name, func() bool {
			got, err := client.CoreV1().Pods("apps").Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 || got.Status.ContainerStatuses[0].ContainerID == "" {
				return false
			}
			id = strings.TrimPrefix(got.Status.ContainerStatuses[0].ContainerID, "sim://")
			return true
		})
		for name, want := range map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1\n", "REDIS_PRIMARY_SERVICE_HOST": "10.0.0.11\n"} {
			out, _, code, err := rts[i].ExecSync(ctx, id, []string{"printenv", name}, time.Second)
			if err != nil || code != 0 || string(out) != want {
				t.Errorf("%s: printenv %s = %q %d %v, want %q", node, name, out, code, err, want)
			}
		}
	}
	if _, refs := servicesByClient.lookup(client, struct{}{}); refs != 2 {
		t.Fatalf("service informer users = %d, want 2 (one informer shared by both kubelets)", refs)
	}
	for _, k := range kubelets {
		k.Stop()
	}
	if shared, _ := servicesByClient.lookup(client, struct{}{}); shared != nil {
		t.Fatal("service informer still registered after both kubelets stopped")
	}
	goroutinesEnd(t, baseline)
}
