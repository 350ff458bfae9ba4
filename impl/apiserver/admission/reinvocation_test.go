package admission

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// markContainers is an in-tree mutating plugin that labels every
// container it sees, as ServiceAccount mounts its token in every container.
type markContainers struct{ calls int }

func (m *markContainers) Admit(_ context.Context, a *Attributes) error {
	m.calls++
	pod := podOf(a)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if len(c.Args) == 0 {
			c.Args = []string{"marked"}
		}
	}
	return nil
}

// As kube-apiserver's reinvoker: once a mutating webhook changed the
// object, the chain's mutating plugins run once more, the in-tree ones
// all, the webhooks those with reinvocationPolicy IfNeeded called before
// a later change; and when the in-tree plugins changed the object on that
// second run, every IfNeeded webhook called so far is called again.
func TestChainReinvokesInTreePluginsAfterWebhookChange(t *testing.T) {
	var first atomic.Int32
	srv := newHookServer(t, func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var pod corev1.Pod
		_ = json.Unmarshal(r.Object.Raw, &pod)
		switch path {
		case "/adder": // adds a container once
			if len(pod.Spec.Containers) == 1 {
				return patchResponse(`[{"op":"add","path":"/spec/containers/-","value":{"name":"c2","image":"busybox"}}]`)
			}
		case "/first":
			first.Add(1)
		}
		return allow()
	})
	t.Run("in-tree plugins rerun", func(t *testing.T) {
		mark := &markContainers{}
		wh := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "adder.example.com", path: "/adder"})))}
		chain := &Chain{Mutators: []Mutator{mark, wh}}
		pod := newPod("p", corev1.Container{Name: "c", Image: "busybox"})
		if err := chain.Admit(context.Background(), podCreate(pod)); err != nil {
			t.Fatal(err)
		}
		if mark.calls != 2 || len(pod.Spec.Containers) != 2 || len(pod.Spec.Containers[1].Args) == 0 {
			t.Fatalf("in-tree plugin called %d times (want 2), containers %+v", mark.calls, pod.Spec.Containers)
		}
	})
	t.Run("their change reinvokes IfNeeded webhooks", func(t *testing.T) {
		first.Store(0)
		mark := &markContainers{}
		// The IfNeeded webhook is the one that changed the object: no
		// later webhook did, but the in-tree plugins' second run does.
		wh := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
			hookSpec{name: "adder.example.com", path: "/adder", reinvoke: true},
			hookSpec{name: "first.example.com", path: "/first", reinvoke: true},
		)))}
		chain := &Chain{Mutators: []Mutator{mark, wh}}
		pod := newPod("p", corev1.Container{Name: "c", Image: "busybox"})
		if err := chain.Admit(context.Background(), podCreate(pod)); err != nil {
			t.Fatal(err)
		}
		if mark.calls != 2 || first.Load() != 2 {
			t.Fatalf("in-tree plugin called %d times, IfNeeded webhook %d times; want 2 and 2", mark.calls, first.Load())
		}
	})
	t.Run("no change, no second run", func(t *testing.T) {
		mark := &markContainers{}
		wh := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "first.example.com", path: "/first", reinvoke: true})))}
		chain := &Chain{Mutators: []Mutator{mark, wh}}
		if err := chain.Admit(context.Background(), podCreate(newPod("p", corev1.Container{Name: "c", Image: "busybox"}))); err != nil {
			t.Fatal(err)
		}
		if mark.calls != 1 {
			t.Fatalf("in-tree plugin called %d times, want 1", mark.calls)
		}
	})
}
