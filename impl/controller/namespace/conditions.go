package namespace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Content is what one deletion pass found in a namespace.
type Content struct {
	// Total objects still listed; Remaining by group-resource.
	Total     int
	Remaining map[string]int
	// Finalizers on the remaining objects, with how many objects carry each.
	Finalizers   map[string]int
	DiscoveryErr error
	DeleteErr    error
}

func counts(m map[string]int, what string) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %s %d resource instances", k, what, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Conditions returns the namespace's status conditions after a deletion
// pass, as upstream reports them (NamespaceDeletionDiscoveryFailure,
// NamespaceDeletionContentFailure, NamespaceContentRemaining,
// NamespaceFinalizersRemaining), or nil when nothing changed. A condition
// keeps its lastTransitionTime while its status stays the same.
func Conditions(current []corev1.NamespaceCondition, c Content, now time.Time) []corev1.NamespaceCondition {
	want := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	if c.DiscoveryErr != nil {
		want[0] = corev1.NamespaceCondition{Type: want[0].Type, Status: corev1.ConditionTrue, Reason: "DiscoveryFailed", Message: "Discovery failed for some groups: " + c.DiscoveryErr.Error()}
	}
	if c.DeleteErr != nil {
		want[1] = corev1.NamespaceCondition{Type: want[1].Type, Status: corev1.ConditionTrue, Reason: "ContentDeletionFailed", Message: "Failed to delete all resource types: " + c.DeleteErr.Error()}
	}
	if len(c.Remaining) > 0 {
		want[2] = corev1.NamespaceCondition{Type: want[2].Type, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: " + counts(c.Remaining, "has")}
	}
	if len(c.Finalizers) > 0 {
		want[3] = corev1.NamespaceCondition{Type: want[3].Type, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: " + counts(c.Finalizers, "in")}
	}
	out := append([]corev1.NamespaceCondition(nil), current...)
	changed := false
	for _, w := range want {
		i := -1
		for j := range out {
			if out[j].Type == w.Type {
				i = j
			}
		}
		switch {
		case i < 0:
			w.LastTransitionTime = metav1.NewTime(now)
			out = append(out, w)
			changed = true
		case out[i].Status != w.Status:
			w.LastTransitionTime = metav1.NewTime(now)
			out[i] = w
			changed = true
		case out[i].Reason != w.Reason || out[i].Message != w.Message:
			w.LastTransitionTime = out[i].LastTransitionTime
			out[i] = w
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return out
}
