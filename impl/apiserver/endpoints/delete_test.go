package endpoints

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletionFinalizers(t *testing.T) {
	orphan, fg, bg := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	yes, no := true, false
	cases := []struct {
		existing []string
		opts     metav1.DeleteOptions
		update   bool
		want     []string
	}{
		{nil, metav1.DeleteOptions{}, false, nil},
		{nil, metav1.DeleteOptions{PropagationPolicy: &bg}, false, nil},
		{nil, metav1.DeleteOptions{PropagationPolicy: &orphan}, true, []string{metav1.FinalizerOrphanDependents}},
		{nil, metav1.DeleteOptions{PropagationPolicy: &fg}, true, []string{metav1.FinalizerDeleteDependents}},
		{nil, metav1.DeleteOptions{OrphanDependents: &yes}, true, []string{metav1.FinalizerOrphanDependents}},
		{[]string{metav1.FinalizerOrphanDependents}, metav1.DeleteOptions{OrphanDependents: &no}, true, nil},
		// an explicit policy replaces the other GC finalizer, keeping the rest.
		{[]string{"x/y", metav1.FinalizerOrphanDependents}, metav1.DeleteOptions{PropagationPolicy: &fg}, true, []string{"x/y", metav1.FinalizerDeleteDependents}},
		// without a policy, a GC finalizer already present decides.
		{[]string{metav1.FinalizerDeleteDependents}, metav1.DeleteOptions{}, false, []string{metav1.FinalizerDeleteDependents}},
		{[]string{"x/y"}, metav1.DeleteOptions{PropagationPolicy: &bg}, false, []string{"x/y"}},
	}
	for i, c := range cases {
		m := &metav1.ObjectMeta{Finalizers: c.existing}
		update, got := deletionFinalizers(m, &c.opts)
		if update != c.update || !slices.Equal(got, c.want) {
			t.Errorf("case %d: got %v %v, want %v %v", i, update, got, c.update, c.want)
		}
	}
}

func TestGenerateName(t *testing.T) {
	n := generateName("web-")
	if !strings.HasPrefix(n, "web-") || len(n) != 9 {
		t.Fatalf("name %q", n)
	}
	for _, r := range n[4:] {
		if !strings.ContainsRune(nameAlphabet, r) {
			t.Fatalf("character %q not in the alphabet", r)
		}
	}
	long := generateName(strings.Repeat("a", 80))
	if len(long) != 63 {
		t.Fatalf("long name has %d characters", len(long))
	}
}
