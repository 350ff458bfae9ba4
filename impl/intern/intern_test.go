package intern

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: string([]byte("default")), Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			NodeName:    string([]byte("node-1")),
			Tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}},
			Containers: []v1.Container{{Name: "app", Image: string([]byte("nginx")),
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestPodSharesEqualValuesAndKeepsContent(t *testing.T) {
	tab := New()
	a, b := pod("a"), pod("b")
	want := b.DeepCopy()
	tab.Pod(a)
	tab.Pod(b)
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("interning changed the pod:\n%+v\nwant\n%+v", b, want)
	}
	if !sameString(a.Namespace, b.Namespace) || !sameString(a.Spec.NodeName, b.Spec.NodeName) || !sameString(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image) {
		t.Error("equal strings not shared")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("equal labels not shared")
	}
	if reflect.ValueOf(a.Spec.Containers[0].Resources.Requests).UnsafePointer() != reflect.ValueOf(b.Spec.Containers[0].Resources.Requests).UnsafePointer() {
		t.Error("equal resource lists not shared")
	}
	if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Error("equal tolerations not shared")
	}
}

func TestDifferentValuesStayApart(t *testing.T) {
	tab := New()
	x := tab.Labels(map[string]string{"app": "a"})
	y := tab.Labels(map[string]string{"app": "b"})
	if y["app"] != "b" || x["app"] != "a" {
		t.Errorf("labels mixed up: %v %v", x, y)
	}
	r1 := tab.Resources(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")})
	r2 := tab.Resources(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")})
	if r1.Cpu().Value() != 1 || r2.Cpu().Value() != 2 {
		t.Errorf("resource lists mixed up: %v %v", r1, r2)
	}
	secs := int64(300)
	t1 := tab.Tolerations([]v1.Toleration{{Key: "k", TolerationSeconds: &secs}})
	t2 := tab.Tolerations([]v1.Toleration{{Key: "k"}})
	if t2[0].TolerationSeconds != nil || t1[0].TolerationSeconds == nil {
		t.Errorf("tolerations mixed up: %v %v", t1, t2)
	}
}

func TestTableIsBounded(t *testing.T) {
	tab := New()
	for i := 0; i < maxStrings+100; i++ {
		s := fmt.Sprint("s", i)
		if got := tab.String(s); got != s {
			t.Fatalf("String(%q) = %q", s, got)
		}
	}
	if len(tab.strings) != maxStrings {
		t.Errorf("table holds %d strings, limit %d", len(tab.strings), maxStrings)
	}
}

func TestConditionsAndProjectedVolumes(t *testing.T) {
	tab := New()
	at := func(sec int64) []v1.PodCondition {
		return []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Unix(sec, 0)}}
	}
	a, b, c := tab.Conditions(at(1)), tab.Conditions(at(1)), tab.Conditions(at(2))
	if &a[0] != &b[0] {
		t.Error("equal conditions not shared")
	}
	if &c[0] == &a[0] || c[0].LastTransitionTime.Unix() != 2 {
		t.Errorf("conditions of another time shared: %v", c)
	}
	mode := int32(420)
	proj := func(path string) *v1.ProjectedVolumeSource {
		return &v1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: path}}}}
	}
	p1, p2, p3 := tab.Projected(proj("token")), tab.Projected(proj("token")), tab.Projected(proj("other"))
	if p1 != p2 || p3 == p1 || p3.Sources[0].ServiceAccountToken.Path != "other" {
		t.Errorf("projected sources: %p %p %p", p1, p2, p3)
	}
}

// What the API server defaults alike on every pod of a workload — an empty
// security context, resize policies, priority, grace period,
// enableServiceLinks, preemption policy — and a node's host IPs are shared;
// different values stay apart.
func TestDefaultedPodPartsAreShared(t *testing.T) {
	tab := New()
	defaulted := func(name string, grace int64, hostIP string) *v1.Pod {
		p := pod(name)
		prio, links, never := int32(0), true, v1.PreemptLowerPriority
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
		p.Spec.Priority, p.Spec.EnableServiceLinks, p.Spec.PreemptionPolicy = &prio, &links, &never
		p.Spec.TerminationGracePeriodSeconds = &grace
		p.Spec.RestartPolicy, p.Spec.DNSPolicy = v1.RestartPolicy(string([]byte("Always"))), v1.DNSPolicy(string([]byte("ClusterFirst")))
		c := &p.Spec.Containers[0]
		c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}}
		c.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}}
		c.SecurityContext = &v1.SecurityContext{}
		p.Status.HostIPs = []v1.HostIP{{IP: hostIP}}
		return p
	}
	a, b, c := defaulted("a", 30, "10.0.0.1"), defaulted("b", 30, "10.0.0.1"), defaulted("c", 5, "10.0.0.2")
	want := c.DeepCopy()
	for _, p := range []*v1.Pod{a, b, c} {
		tab.Pod(p)
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("interning changed the pod:\n%+v\nwant\n%+v", c, want)
	}
	as, bs := &a.Spec, &b.Spec
	ac, bc := &as.Containers[0], &bs.Containers[0]
	for what, same := range map[string]bool{
		"pod security context":       as.SecurityContext == bs.SecurityContext,
		"priority":                   as.Priority == bs.Priority,
		"enableServiceLinks":         as.EnableServiceLinks == bs.EnableServiceLinks,
		"preemption policy":          as.PreemptionPolicy == bs.PreemptionPolicy,
		"grace period":               as.TerminationGracePeriodSeconds == bs.TerminationGracePeriodSeconds,
		"restart policy":             sameString(string(as.RestartPolicy), string(bs.RestartPolicy)),
		"DNS policy":                 sameString(string(as.DNSPolicy), string(bs.DNSPolicy)),
		"resize policy":              &ac.ResizePolicy[0] == &bc.ResizePolicy[0],
		"ports":                      &ac.Ports[0] == &bc.Ports[0],
		"container security context": ac.SecurityContext == bc.SecurityContext,
		"host IPs":                   &a.Status.HostIPs[0] == &b.Status.HostIPs[0],
	} {
		if !same {
			t.Errorf("equal %s not shared", what)
		}
	}
	if *c.Spec.TerminationGracePeriodSeconds != 5 || c.Spec.TerminationGracePeriodSeconds == as.TerminationGracePeriodSeconds {
		t.Errorf("grace periods 30 and 5 mixed up: %d", *c.Spec.TerminationGracePeriodSeconds)
	}
	if c.Status.HostIPs[0].IP != "10.0.0.2" || &c.Status.HostIPs[0] == &a.Status.HostIPs[0] {
		t.Errorf("host IPs of two nodes mixed up: %v", c.Status.HostIPs)
	}
}

// Start times (whole seconds, local as decoded) and running states are
// shared between pods that started in the same second; a pod IP listed
// in podIPs becomes the podIP string.
func TestPodStatusTimesAndIPs(t *testing.T) {
	tab := New()
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0).Local()) }
	started := func(name string, sec int64, ip string) *v1.Pod {
		p := pod(name)
		st, yes := at(sec), true
		p.Status.StartTime = &st
		p.Status.PodIP, p.Status.PodIPs = ip, []v1.PodIP{{IP: string([]byte(ip))}}
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Started: &yes,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(sec)}}}}
		return p
	}
	a, b, c := started("a", 100, "10.0.0.5"), started("b", 100, "10.0.0.6"), started("c", 101, "10.0.0.7")
	utc := started("d", 100, "10.0.0.8")
	utc.Status.StartTime.Time = utc.Status.StartTime.UTC()
	want := []*v1.Pod{a.DeepCopy(), b.DeepCopy(), c.DeepCopy(), utc.DeepCopy()}
	for i, p := range []*v1.Pod{a, b, c, utc} {
		tab.Pod(p)
		if !reflect.DeepEqual(p, want[i]) {
			t.Fatalf("interning changed the pod:\n%+v\nwant\n%+v", p, want[i])
		}
	}
	if a.Status.StartTime != b.Status.StartTime || a.Status.ContainerStatuses[0].State.Running != b.Status.ContainerStatuses[0].State.Running ||
		a.Status.ContainerStatuses[0].Started != b.Status.ContainerStatuses[0].Started {
		t.Error("equal start times, running states or started flags not shared")
	}
	if c.Status.StartTime == a.Status.StartTime || c.Status.ContainerStatuses[0].State.Running == a.Status.ContainerStatuses[0].State.Running {
		t.Error("start times a second apart shared")
	}
	if utc.Status.StartTime == a.Status.StartTime || utc.Status.StartTime.Location() != time.UTC {
		t.Error("a UTC start time shared with a local one")
	}
	if !sameString(a.Status.PodIPs[0].IP, a.Status.PodIP) {
		t.Error("podIPs keeps its own copy of podIP")
	}
}

// A volume mount names its volume with the volume's own string; a mount
// of a volume the pod does not have keeps its name.
func TestVolumeMountSharesItsVolumesName(t *testing.T) {
	tab := New()
	p := pod("a")
	p.Spec.Volumes = []v1.Volume{{Name: string([]byte("kube-api-access-x7k2p"))}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: string([]byte("kube-api-access-x7k2p")), MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		{Name: string([]byte("other")), MountPath: "/other"},
	}
	want := p.DeepCopy()
	tab.Pod(p)
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("interning changed the pod:\n%+v\nwant\n%+v", p, want)
	}
	if !sameString(p.Spec.Containers[0].VolumeMounts[0].Name, p.Spec.Volumes[0].Name) {
		t.Error("the mount keeps its own copy of its volume's name")
	}
	if p.Spec.Containers[0].VolumeMounts[1].Name != "other" {
		t.Errorf("a mount of no volume of the pod renamed to %q", p.Spec.Containers[0].VolumeMounts[1].Name)
	}
}

func TestSharePriorTakesTheEarlierVersionsStrings(t *testing.T) {
	old := pod(string([]byte("web-1")))
	old.UID = "0b5c-uid"
	p := pod(string([]byte("web-1")))
	p.UID = types.UID(string([]byte("0b5c-uid")))
	SharePrior(p, old)
	if !sameString(string(p.UID), string(old.UID)) || !sameString(p.Name, old.Name) {
		t.Error("equal UID and name not taken from the earlier version")
	}
	other := pod(string([]byte("web-1")))
	other.UID = "another-uid" // deleted and recreated under the same name
	SharePrior(other, old)
	if other.UID != "another-uid" || !sameString(other.Name, old.Name) {
		t.Errorf("a different UID was replaced: %q", other.UID)
	}
	SharePrior(p, nil) // no earlier version: nothing to do
}

// A running container's allocated and actual resources in the status
// (the kubelet reports both, most often equal to the spec's) share the
// lists equal to them, the spec's among them, and keep their content.
func TestContainerStatusResourcesShared(t *testing.T) {
	tab := New()
	withStatus := func(name string) *v1.Pod {
		p := pod(name)
		req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", AllocatedResources: req.DeepCopy(),
			Resources: &v1.ResourceRequirements{Requests: req.DeepCopy(), Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}}
		p.Status.AllocatedResources = req.DeepCopy()
		p.Status.Resources = &v1.ResourceRequirements{Requests: req.DeepCopy(), Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}
		return p
	}
	a, b := withStatus("a"), withStatus("b")
	want := b.DeepCopy()
	tab.Pod(a)
	tab.Pod(b)
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("interning changed the pod:\n%+v\nwant\n%+v", b, want)
	}
	ptr := func(l v1.ResourceList) unsafe.Pointer { return reflect.ValueOf(l).UnsafePointer() }
	sa, sb := a.Status.ContainerStatuses[0], b.Status.ContainerStatuses[0]
	spec := ptr(b.Spec.Containers[0].Resources.Requests)
	if ptr(sb.AllocatedResources) != spec || ptr(sb.Resources.Requests) != spec || ptr(sa.AllocatedResources) != spec {
		t.Error("allocated and actual requests equal to the spec's not shared with it")
	}
	if ptr(sa.Resources.Limits) != ptr(sb.Resources.Limits) || sa.Resources != sb.Resources {
		t.Error("equal actual resources not shared")
	}
	// The pod-level ones (every pod reports them) share the same lists.
	if ptr(sb.AllocatedResources) != ptr(b.Status.AllocatedResources) || b.Status.Resources != sb.Resources || a.Status.Resources != sb.Resources {
		t.Error("pod-level allocated and actual resources equal to the container's not shared with them")
	}
	c := withStatus("c")
	c.Status.ContainerStatuses[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("2Gi")
	want = c.DeepCopy()
	tab.Pod(c)
	if !reflect.DeepEqual(c, want) || c.Status.ContainerStatuses[0].Resources == sa.Resources {
		t.Errorf("other actual resources shared or changed: %+v", c.Status.ContainerStatuses[0].Resources)
	}
}
