package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMergeTolerations(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	equal := func(key, value string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect}
	}
	noExecute := func(key string, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	all := corev1.Toleration{Operator: corev1.TolerationOpExists}
	tests := []struct {
		name          string
		first, second []corev1.Toleration
		want          []corev1.Toleration
	}{
		{"both empty", nil, nil, nil},
		{"disjoint: first then second", []corev1.Toleration{exists("a", "")}, []corev1.Toleration{exists("b", corev1.TaintEffectNoSchedule)},
			[]corev1.Toleration{exists("a", ""), exists("b", corev1.TaintEffectNoSchedule)}},
		{"equal ones: the first kept", []corev1.Toleration{exists("a", "")}, []corev1.Toleration{exists("a", "")},
			[]corev1.Toleration{exists("a", "")}},
		{"a later superset replaces an earlier subset", []corev1.Toleration{equal("a", "1", corev1.TaintEffectNoSchedule)}, []corev1.Toleration{exists("a", "")},
			[]corev1.Toleration{exists("a", "")}},
		{"an earlier superset drops a later subset", []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, []corev1.Toleration{equal("a", "1", corev1.TaintEffectNoSchedule)},
			[]corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}},
		{"empty key with Exists tolerates everything", []corev1.Toleration{exists("a", ""), equal("b", "2", "")}, []corev1.Toleration{all},
			[]corev1.Toleration{all}},
		{"other effect is no superset", []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, []corev1.Toleration{exists("a", corev1.TaintEffectNoExecute)},
			[]corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule), exists("a", corev1.TaintEffectNoExecute)}},
		{"other value is no superset", []corev1.Toleration{equal("a", "1", "")}, []corev1.Toleration{equal("a", "2", "")},
			[]corev1.Toleration{equal("a", "1", ""), equal("a", "2", "")}},
		{"a shorter NoExecute time is a subset of a longer or unbounded one",
			[]corev1.Toleration{noExecute("a", ptr(int64(10))), noExecute("b", ptr(int64(300)))},
			[]corev1.Toleration{noExecute("a", ptr(int64(60))), noExecute("b", nil)},
			[]corev1.Toleration{noExecute("a", ptr(int64(60))), noExecute("b", nil)}},
		{"the same NoExecute time is covered: Exists drops Equal",
			[]corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(60))}},
			[]corev1.Toleration{noExecute("a", ptr(int64(60)))},
			[]corev1.Toleration{noExecute("a", ptr(int64(60)))}},
		{"an earlier unbounded NoExecute drops a later bounded one",
			[]corev1.Toleration{noExecute("a", nil)}, []corev1.Toleration{noExecute("a", ptr(int64(60)))},
			[]corev1.Toleration{noExecute("a", nil)}},
		// Upstream's isSuperset reads an empty operator as Equal in the
		// superset only: {a, "", 1} covers {a, Equal, 1}, not the reverse.
		{"an empty operator covers Equal", []corev1.Toleration{{Key: "a", Value: "1"}}, []corev1.Toleration{equal("a", "1", "")},
			[]corev1.Toleration{{Key: "a", Value: "1"}}},
		{"Equal does not cover an empty operator", []corev1.Toleration{equal("a", "1", "")}, []corev1.Toleration{{Key: "a", Value: "1"}},
			[]corev1.Toleration{{Key: "a", Value: "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := append([]corev1.Toleration(nil), tt.first...)
			if got := mergeTolerations(tt.first, tt.second); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if !apiequality.Semantic.DeepEqual(first, tt.first) {
				t.Fatal("first modified")
			}
		})
	}
}

func gvisor() *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: rl("cpu", "250m", "memory", "120Mi")},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
}

func TestApplyRuntimeClass(t *testing.T) {
	sandbox := corev1.Toleration{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	own := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}
	tests := []struct {
		name    string
		rc      *nodev1.RuntimeClass
		spec    corev1.PodSpec
		want    runtimeClassFields
		wantErr string
	}{
		{"no class: untouched", nil, corev1.PodSpec{NodeSelector: map[string]string{"a": "b"}, Overhead: rl("cpu", "1")},
			runtimeClassFields{NodeSelector: map[string]string{"a": "b"}, Overhead: rl("cpu", "1")}, ""},
		{"class fills everything", gvisor(), corev1.PodSpec{},
			runtimeClassFields{Overhead: rl("cpu", "250m", "memory", "120Mi"), NodeSelector: map[string]string{"runtime": "gvisor"},
				Tolerations: []corev1.Toleration{sandbox}}, ""},
		{"selectors and tolerations merged", gvisor(),
			corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}, Tolerations: []corev1.Toleration{own}},
			runtimeClassFields{Overhead: rl("cpu", "250m", "memory", "120Mi"), NodeSelector: map[string]string{"zone": "a", "runtime": "gvisor"},
				Tolerations: []corev1.Toleration{own, sandbox}}, ""},
		{"the same selector value is no conflict", gvisor(), corev1.PodSpec{NodeSelector: map[string]string{"runtime": "gvisor"}},
			runtimeClassFields{Overhead: rl("cpu", "250m", "memory", "120Mi"), NodeSelector: map[string]string{"runtime": "gvisor"},
				Tolerations: []corev1.Toleration{sandbox}}, ""},
		{"conflicting selector", gvisor(), corev1.PodSpec{NodeSelector: map[string]string{"runtime": "kata"}}, runtimeClassFields{},
			"conflict: runtimeClass.scheduling.nodeSelector[runtime] = gvisor; pod.spec.nodeSelector[runtime] = kata"},
		{"the class's own overhead, written differently, is accepted", gvisor(), corev1.PodSpec{Overhead: rl("cpu", "0.25", "memory", "120Mi")},
			runtimeClassFields{Overhead: rl("cpu", "250m", "memory", "120Mi"), NodeSelector: map[string]string{"runtime": "gvisor"},
				Tolerations: []corev1.Toleration{sandbox}}, ""},
		{"another overhead", gvisor(), corev1.PodSpec{Overhead: rl("cpu", "1")}, runtimeClassFields{},
			"pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{"a class without overhead or scheduling keeps the pod's", &nodev1.RuntimeClass{Handler: "runc"},
			corev1.PodSpec{Overhead: rl("cpu", "1"), NodeSelector: map[string]string{"a": "b"}},
			runtimeClassFields{Overhead: rl("cpu", "1"), NodeSelector: map[string]string{"a": "b"}}, ""},
		{"an overhead without podFixed clears an empty one", &nodev1.RuntimeClass{Handler: "runc", Overhead: &nodev1.Overhead{}},
			corev1.PodSpec{Overhead: corev1.ResourceList{}}, runtimeClassFields{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *nodev1.RuntimeClass
			if tt.rc != nil {
				before = tt.rc.DeepCopy()
			}
			spec := tt.spec.DeepCopy()
			got, err := applyRuntimeClass(spec, tt.rc)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if !apiequality.Semantic.DeepEqual(spec, &tt.spec) || (tt.rc != nil && !apiequality.Semantic.DeepEqual(tt.rc, before)) {
				t.Fatal("the decision modified its input")
			}
		})
	}
}

func TestCheckOverhead(t *testing.T) {
	tests := []struct {
		name     string
		overhead corev1.ResourceList
		rc       *nodev1.RuntimeClass
		want     string
	}{
		{"none without class", nil, nil, ""},
		{"set without class", rl("cpu", "1"), nil, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{"empty but set without class", corev1.ResourceList{}, nil, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{"set with a class without overhead", rl("cpu", "1"), &nodev1.RuntimeClass{Handler: "runc"},
			"pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{"the class's", rl("cpu", "250m", "memory", "120Mi"), gvisor(), ""},
		{"changed after the mutating phase", rl("cpu", "250m"), gvisor(), "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{"dropped after the mutating phase", nil, gvisor(), "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOverhead(tt.overhead, tt.rc)
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// classGetter serves classes as a cache that has not seen those in
// notInCache yet (found by quorum reads only).
type classGetter struct {
	classes    map[string]*nodev1.RuntimeClass
	notInCache map[string]bool
	err        error
	reads      []bool // the fresh flag of each read
}

func (g *classGetter) get(_ context.Context, name string, fresh bool) (*nodev1.RuntimeClass, error) {
	g.reads = append(g.reads, fresh)
	if g.err != nil {
		return nil, g.err
	}
	rc, ok := g.classes[name]
	if !ok || (g.notInCache[name] && !fresh) {
		return nil, apierrors.NewNotFound(runtimeClassResource, name)
	}
	return rc, nil
}

func TestRuntimeClassPlugin(t *testing.T) {
	ctx := context.Background()
	shared := gvisor()
	g := &classGetter{classes: map[string]*nodev1.RuntimeClass{"gvisor": shared, "kata": {ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata"}},
		notInCache: map[string]bool{"kata": true}}
	p := &RuntimeClass{Get: g.get}
	admit := func(a *Attributes) error {
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
		return p.Validate(ctx, a)
	}

	t.Run("class applied", func(t *testing.T) {
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("gvisor")
		if err := admit(podCreate(pod)); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rl("cpu", "250m", "memory", "120Mi")) ||
			pod.Spec.NodeSelector["runtime"] != "gvisor" || len(pod.Spec.Tolerations) != 1 {
			t.Fatalf("spec %+v", pod.Spec)
		}
		// The pod has copies: the cached class stays as it was.
		pod.Spec.NodeSelector["runtime"] = "changed"
		pod.Spec.Overhead[corev1.ResourceCPU] = rl("cpu", "9")[corev1.ResourceCPU]
		if !apiequality.Semantic.DeepEqual(shared, gvisor()) {
			t.Fatalf("cached class modified: %+v", shared)
		}
	})
	t.Run("missing from the cache, found by a quorum read", func(t *testing.T) {
		g.reads = nil
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("kata")
		if err := p.Admit(ctx, podCreate(pod)); err != nil {
			t.Fatal(err)
		}
		if len(g.reads) != 2 || g.reads[0] || !g.reads[1] {
			t.Fatalf("reads (fresh) %v, want a cached then a quorum read", g.reads)
		}
	})
	t.Run("missing class", func(t *testing.T) {
		g.reads = nil
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("nope")
		for _, phase := range []func(context.Context, *Attributes) error{p.Admit, p.Validate} {
			wantForbidden(t, phase(ctx, podCreate(pod)), `pods "p" is forbidden: pod rejected: RuntimeClass "nope" not found`)
		}
		if len(g.reads) != 4 || !g.reads[1] || !g.reads[3] {
			t.Fatalf("reads (fresh) %v: a miss must be confirmed by a quorum read", g.reads)
		}
	})
	t.Run("conflicting node selector", func(t *testing.T) {
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("gvisor")
		pod.Spec.NodeSelector = map[string]string{"runtime": "kata"}
		wantForbidden(t, p.Admit(ctx, podCreate(pod)),
			`pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = gvisor; pod.spec.nodeSelector[runtime] = kata`)
		if pod.Spec.NodeSelector["runtime"] != "kata" {
			t.Fatal("a refused pod was changed")
		}
	})
	t.Run("overhead without class", func(t *testing.T) {
		pod := newPod("p")
		pod.Spec.Overhead = rl("cpu", "1")
		if err := p.Admit(ctx, podCreate(pod)); err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, p.Validate(ctx, podCreate(pod)), `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`)
	})
	t.Run("overhead changed between the phases", func(t *testing.T) {
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("gvisor")
		a := podCreate(pod)
		if err := p.Admit(ctx, a); err != nil {
			t.Fatal(err)
		}
		pod.Spec.Overhead = rl("cpu", "1") // as a webhook might
		wantForbidden(t, p.Validate(ctx, a), `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`)
	})
	t.Run("left alone", func(t *testing.T) {
		g.reads = nil
		for name, edit := range map[string]func(a *Attributes){
			"update":      func(a *Attributes) { a.Operation, a.OldObject = Update, a.Object.DeepCopyObject() },
			"delete":      func(a *Attributes) { a.Operation = Delete },
			"subresource": func(a *Attributes) { a.Subresource = "status" },
			"other resource": func(a *Attributes) {
				a.Resource = corev1.SchemeGroupVersion.WithResource("podtemplates")
			},
		} {
			pod := newPod("p")
			pod.Spec.RuntimeClassName = ptr("nope")
			pod.Spec.Overhead = rl("cpu", "1")
			a := podCreate(pod)
			edit(a)
			if err := admit(a); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rl("cpu", "1")) || pod.Spec.NodeSelector != nil {
				t.Fatalf("%s: pod changed: %+v", name, pod.Spec)
			}
		}
		pod := newPod("p")
		if err := admit(podCreate(pod)); err != nil || pod.Spec.Overhead != nil || pod.Spec.NodeSelector != nil || pod.Spec.Tolerations != nil {
			t.Fatalf("a pod without class: %v %+v", err, pod.Spec)
		}
		if len(g.reads) != 0 {
			t.Fatalf("reads %v for requests the plugin leaves alone", g.reads)
		}
	})
	t.Run("a failed read is no refusal", func(t *testing.T) {
		// Returned as is, as upstream's plugin returns its lookup's error.
		down := apierrors.NewServiceUnavailable("etcd down")
		failing := &RuntimeClass{Get: (&classGetter{err: down}).get}
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("gvisor")
		if err := failing.Admit(ctx, podCreate(pod)); err != down {
			t.Fatalf("err %v, want the lookup's %v", err, down)
		}
	})
	t.Run("an empty name is left to validation", func(t *testing.T) {
		// kube-apiserver answers a 500 (its lookup of "" fails in
		// client-go); ours leaves it to validation's 422, as bad input
		// is never a 5xx here.
		g.reads = nil
		pod := newPod("p")
		pod.Spec.RuntimeClassName = ptr("")
		for _, phase := range []func(context.Context, *Attributes) error{p.Admit, p.Validate} {
			if err := phase(ctx, podCreate(pod)); err != nil {
				t.Fatalf("err %v", err)
			}
		}
		if pod.Spec.Overhead != nil || len(g.reads) != 0 {
			t.Fatalf("overhead %v, reads %v: nothing is done for an empty name", pod.Spec.Overhead, g.reads)
		}
	})
}
