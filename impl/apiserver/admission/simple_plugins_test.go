package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func TestDefaultTolerationSeconds(t *testing.T) {
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}
	custom := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(10))}
	all := corev1.Toleration{Operator: corev1.TolerationOpExists}
	noSchedule := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name     string
		have     []corev1.Toleration
		want     []corev1.Toleration
		op       Operation
		resource string
	}{
		{"none: both added", nil, []corev1.Toleration{notReady, unreachable}, Create, ""},
		{"own not-ready kept", []corev1.Toleration{custom}, []corev1.Toleration{custom, unreachable}, Create, ""},
		{"tolerate everything", []corev1.Toleration{all}, []corev1.Toleration{all}, Create, ""},
		{"other effect does not count", []corev1.Toleration{noSchedule}, []corev1.Toleration{noSchedule, notReady, unreachable}, Create, ""},
		{"updates get them too", nil, []corev1.Toleration{notReady, unreachable}, Update, ""},
		{"deletes untouched", nil, nil, Delete, ""},
		{"status untouched", nil, nil, Create, "status"},
	}
	p, _ := newDefaultTolerationSeconds(&deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("p")
			pod.Spec.Tolerations = tt.have
			a := podCreate(pod)
			a.Operation, a.Subresource = tt.op, tt.resource
			if err := p.(Mutator).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Tolerations, tt.want) {
				t.Fatalf("tolerations %+v, want %+v", pod.Spec.Tolerations, tt.want)
			}
		})
	}
}

func TestAlwaysPullImages(t *testing.T) {
	p := AlwaysPullImages{}
	ctx := context.Background()
	pod := newPod("p", corev1.Container{Name: "a", Image: "x", ImagePullPolicy: corev1.PullIfNotPresent})
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "y", ImagePullPolicy: corev1.PullNever}}
	a := podCreate(pod)
	if err := p.Validate(ctx, a); err == nil {
		t.Fatal("IfNotPresent must be refused before mutation")
	} else {
		wantForbidden(t, err, `pods "p" is forbidden: spec.initContainers[0].imagePullPolicy: Unsupported value: "Never": supported values: "Always"`)
	}
	if err := p.Admit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways || pod.Spec.InitContainers[0].ImagePullPolicy != corev1.PullAlways {
		t.Fatalf("policies not set: %+v", pod.Spec)
	}
	wantForbidden(t, p.Validate(ctx, a), "")

	// An update that keeps the images is left alone; a new image is not.
	old := newPod("p", corev1.Container{Name: "a", Image: "x", ImagePullPolicy: corev1.PullIfNotPresent})
	upd := old.DeepCopy()
	ua := podCreate(upd)
	ua.Operation, ua.OldObject = Update, old
	wantForbidden(t, p.Validate(ctx, ua), "")
	upd.Spec.Containers[0].Image = "x:2"
	wantForbidden(t, p.Validate(ctx, ua), "imagePullPolicy")
}

func priorityPlugin(classes ...schedulingv1.PriorityClass) *Priority {
	return &Priority{List: func(context.Context, bool) ([]schedulingv1.PriorityClass, error) { return classes, nil }}
}

func TestPriority(t *testing.T) {
	never := corev1.PreemptNever
	high := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &never}
	def := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "def"}, Value: 7, GlobalDefault: true}
	def9 := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "def9"}, Value: 9, GlobalDefault: true}
	lower := corev1.PreemptLowerPriority
	critical := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000, PreemptionPolicy: &lower}
	tests := []struct {
		name      string
		classes   []schedulingv1.PriorityClass
		className string
		priority  *int32
		wantName  string
		want      int32
		wantPol   corev1.PreemptionPolicy
		wantErr   string
	}{
		{"no class, no default", nil, "", nil, "", 0, corev1.PreemptLowerPriority, ""},
		{"global default", []schedulingv1.PriorityClass{high, def}, "", nil, "def", 7, corev1.PreemptLowerPriority, ""},
		{"named class", []schedulingv1.PriorityClass{high, def}, "high", nil, "high", 1000, corev1.PreemptNever, ""},
		// Read from the stored classes only, as kube-apiserver's lister:
		// the API server creates the system classes at start.
		{"stored system class", []schedulingv1.PriorityClass{critical}, "system-node-critical", nil, "system-node-critical", 2000001000, corev1.PreemptLowerPriority, ""},
		{"system class not stored", nil, "system-node-critical", nil, "", 0, "",
			`pods "p" is forbidden: no PriorityClass with name system-node-critical was found`},
		{"two defaults: the lowest value", []schedulingv1.PriorityClass{def, def9}, "", nil, "def", 7, corev1.PreemptLowerPriority, ""},
		{"unknown class", nil, "nope", nil, "", 0, "", `pods "p" is forbidden: no PriorityClass with name nope was found`},
		{"registry-defaulted zero takes the global default", []schedulingv1.PriorityClass{def}, "", ptr(int32(0)), "def", 7, corev1.PreemptLowerPriority, ""},
		{"matching priority accepted", []schedulingv1.PriorityClass{high}, "high", ptr(int32(1000)), "high", 1000, corev1.PreemptNever, ""},
		{"priority set by hand", []schedulingv1.PriorityClass{high}, "high", ptr(int32(5)), "", 0, "",
			"the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("p")
			pod.Spec.PriorityClassName, pod.Spec.Priority = tt.className, tt.priority
			err := priorityPlugin(tt.classes...).Admit(context.Background(), podCreate(pod))
			wantForbidden(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if pod.Spec.PriorityClassName != tt.wantName || *pod.Spec.Priority != tt.want || *pod.Spec.PreemptionPolicy != tt.wantPol {
				t.Fatalf("got %q %d %s", pod.Spec.PriorityClassName, *pod.Spec.Priority, *pod.Spec.PreemptionPolicy)
			}
		})
	}

	// Updates keep the priority set at create.
	old := newPod("p")
	old.Spec.Priority = ptr(int32(1000))
	upd := newPod("p")
	a := podCreate(upd)
	a.Operation, a.OldObject = Update, old
	if err := priorityPlugin().Admit(context.Background(), a); err != nil || upd.Spec.Priority == nil || *upd.Spec.Priority != 1000 {
		t.Fatalf("update: %v %v", err, upd.Spec.Priority)
	}

	// Only one globalDefault class.
	other := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 1, GlobalDefault: true}
	pa := &Attributes{Operation: Create, Resource: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), Name: "other", Object: &other}
	wantForbidden(t, priorityPlugin(def).Validate(context.Background(), pa),
		`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass def is already marked as default. Only one default can exist`)
	wantForbidden(t, priorityPlugin().Validate(context.Background(), pa), "")
	// As kube-apiserver: the default named is the lowest-valued one; a
	// create is refused even under the default's own name; an update
	// passes when the class updated is that default.
	wantForbidden(t, priorityPlugin(def9, def).Validate(context.Background(), pa),
		`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass def is already marked as default. Only one default can exist`)
	self := &Attributes{Operation: Create, Resource: pa.Resource, Name: "def", Object: &def}
	wantForbidden(t, priorityPlugin(def).Validate(context.Background(), self),
		`priorityclasses.scheduling.k8s.io "def" is forbidden: PriorityClass def is already marked as default. Only one default can exist`)
	self.Operation = Update
	wantForbidden(t, priorityPlugin(def, def9).Validate(context.Background(), self), "")
	up9 := &Attributes{Operation: Update, Resource: pa.Resource, Name: "def9", Object: &def9}
	wantForbidden(t, priorityPlugin(def, def9).Validate(context.Background(), up9),
		`priorityclasses.scheduling.k8s.io "def9" is forbidden: PriorityClass def is already marked as default. Only one default can exist`)
}
