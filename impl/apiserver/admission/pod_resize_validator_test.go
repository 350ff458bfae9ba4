package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodResizeValidator: a pods/resize of a bound pod whose spec changed
// is refused when its node is not Linux or its requests exceed the node's
// allocatable cpu or memory, with upstream's messages and causes; other
// requests pass.
func TestPodResizeValidator(t *testing.T) {
	nodes := map[string]*corev1.Node{
		"linux": {ObjectMeta: metav1.ObjectMeta{Name: "linux", Labels: map[string]string{corev1.LabelOSStable: "linux"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		"unlabelled": {ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		"windows": {ObjectMeta: metav1.ObjectMeta{Name: "windows", Labels: map[string]string{corev1.LabelOSStable: "windows"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("8Gi")}}},
	}
	v := &PodResizeValidator{GetNode: func(_ context.Context, name string) (*corev1.Node, error) {
		if n, ok := nodes[name]; ok {
			return n, nil
		}
		return nil, apierrors.NewNotFound(nodeResource, name)
	}}
	pod := func(node, cpu, mem string, gen int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: gen},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
	}
	resize := func(old, p *corev1.Pod) *Attributes {
		return &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "resize",
			Namespace: "ns", Name: "p", Object: p, OldObject: old}
	}
	for _, tc := range []struct {
		name      string
		a         *Attributes
		want      string // "" accepted
		wantCause metav1.CauseType
	}{
		{"fits", resize(pod("linux", "1", "512Mi", 1), pod("linux", "2", "1Gi", 2)), "", ""},
		{"no OS label counts as linux", resize(pod("unlabelled", "1", "512Mi", 1), pod("unlabelled", "1500m", "512Mi", 2)), "", ""},
		{"cpu over allocatable", resize(pod("linux", "1", "512Mi", 1), pod("linux", "2500m", "512Mi", 2)),
			`pods "p" is forbidden: node didn't have enough allocatable resources: cpu, requested: 2500, allocatable: 2000`, causeNodeCapacity},
		{"both over allocatable", resize(pod("linux", "1", "512Mi", 1), pod("linux", "3", "2Gi", 2)),
			`pods "p" is forbidden: node didn't have enough allocatable resources: cpu, requested: 3000, allocatable: 2000; memory, requested: 2147483648, allocatable: 1073741824`, causeNodeCapacity},
		{"windows node", resize(pod("windows", "1", "512Mi", 1), pod("windows", "2", "512Mi", 2)),
			`pods "p" is forbidden: pod resize is only supported on linux nodes, node "windows" is "windows"`, causeUnsupportedPlatform},
		{"missing node", resize(pod("gone", "1", "512Mi", 1), pod("gone", "2", "512Mi", 2)),
			`pods "p" is forbidden: node "gone" not found`, ""},
		{"generation unchanged", resize(pod("linux", "3", "512Mi", 2), pod("linux", "3", "512Mi", 2)), "", ""},
		{"pending pod", resize(pod("", "1", "512Mi", 1), pod("", "64", "512Mi", 2)), "", ""},
		{"not the resize subresource", func() *Attributes {
			a := resize(pod("linux", "1", "512Mi", 1), pod("linux", "64", "512Mi", 2))
			a.Subresource = "status"
			return a
		}(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate(context.Background(), tc.a)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != 403 || se.Error() != tc.want {
				t.Fatalf("got %v, want 403 %q", err, tc.want)
			}
			if tc.wantCause != "" {
				if c := se.ErrStatus.Details.Causes; len(c) != 1 || c[0].Type != tc.wantCause {
					t.Errorf("causes %+v, want one of type %s", c, tc.wantCause)
				}
			}
		})
	}
}
