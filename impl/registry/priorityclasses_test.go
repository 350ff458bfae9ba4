package registry

import (
	"context"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A name with the system- prefix must be a system class with its value
// and globalDefault, in kube-apiserver's words, on create only: an update
// may make a system class the global default or change its description.
func TestSystemPriorityClassValidation(t *testing.T) {
	ctx := context.Background()
	r := find(t, schedulingv1.SchemeGroupVersion, "priorityclasses")
	const prefix = "priority class names with 'system-' prefix are reserved for system use only. error: "
	for _, tc := range []struct {
		pc   *schedulingv1.PriorityClass
		want string
	}{
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 5},
			prefix + "system-mine is not a known system priority class"},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 5},
			prefix + "value of system-node-critical PriorityClass must be 2000001000"},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000, GlobalDefault: true},
			prefix + "globalDefault of system-cluster-critical PriorityClass must be false"},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 1000000001},
			"maximum allowed value of a user defined priority is 1000000000"},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000, Description: "other"}, ""},
	} {
		r.Strategy.Default(tc.pc)
		errs := r.Strategy.Validate(ctx, tc.pc)
		if tc.want == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.pc.Name, errs)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden || errs[0].Detail != tc.want {
			t.Errorf("%s: %v, want %q", tc.pc.Name, errs, tc.want)
		}
	}

	// Updates are checked for the immutable fields only.
	old := SystemPriorityClasses()[0]
	r.Strategy.Default(old)
	upd := old.DeepCopy()
	upd.GlobalDefault, upd.Description = true, "changed"
	if errs := r.Strategy.ValidateUpdate(ctx, upd, old); len(errs) > 0 {
		t.Errorf("update of a system class's globalDefault and description: %v", errs)
	}
}

// A created PriorityClass has generation 1, which updates keep.
func TestPriorityClassGeneration(t *testing.T) {
	ctx := context.Background()
	r := find(t, schedulingv1.SchemeGroupVersion, "priorityclasses")
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 7}, Value: 1}
	r.Strategy.PrepareForCreate(ctx, pc)
	if pc.Generation != 1 {
		t.Fatalf("generation after create %d, want 1", pc.Generation)
	}
	upd := pc.DeepCopy()
	upd.Description, upd.Generation = "x", 9
	r.Strategy.PrepareForUpdate(ctx, upd, pc)
	if upd.Generation != 1 {
		t.Errorf("generation after update %d, want 1", upd.Generation)
	}
}

// The system classes are kube-apiserver 1.37's, created at start by its
// scheduling/bootstrap-system-priority-classes hook, and their DELETE is
// refused with its 403.
func TestSystemPriorityClassesBootstrapAndDelete(t *testing.T) {
	r := find(t, schedulingv1.SchemeGroupVersion, "priorityclasses")
	if r.Bootstrap == nil || r.Bootstrap.Hook != "scheduling/bootstrap-system-priority-classes" {
		t.Fatalf("bootstrap %+v", r.Bootstrap)
	}
	objs := r.Bootstrap.Objects()
	if len(objs) != 2 {
		t.Fatalf("bootstrap objects %v", objs)
	}
	for i, want := range []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	} {
		got := objs[i].(*schedulingv1.PriorityClass)
		if got.Name != want.Name || got.Value != want.Value || got.Description != want.Description || got.GlobalDefault ||
			got.PreemptionPolicy != nil || len(got.Labels) != 0 {
			t.Errorf("bootstrap object %d: %+v", i, got)
		}
		err := r.ForbidDelete(want.Name)
		if !apierrors.IsForbidden(err) || err.Error() != `priorityclasses.scheduling.k8s.io "`+want.Name+`" is forbidden: this is a system priority class and cannot be deleted` {
			t.Errorf("delete %s: %v", want.Name, err)
		}
	}
	// Copies: changing one does not change the next call's.
	objs[0].(*schedulingv1.PriorityClass).Value = 1
	if SystemPriorityClasses()[0].Value != 2000001000 {
		t.Error("SystemPriorityClasses shares its objects")
	}
	if err := r.ForbidDelete("system-mine"); err != nil {
		t.Errorf("delete of another class: %v", err)
	}
}
