package intern

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
