package garbagecollector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGraphMetadataKeepsWhatTheGraphReads(t *testing.T) {
	now := metav1.Now()
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "9", DeletionTimestamp: &now,
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "o"}},
			Finalizers:      []string{"foregroundDeletion"},
			Labels:          map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
	}
	out, err := graphMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.Name != "p" || got.Namespace != "ns" || got.UID != "u" || got.ResourceVersion != "9" || got.DeletionTimestamp == nil ||
		len(got.OwnerReferences) != 1 || len(got.Finalizers) != 1 || got.Kind != "Pod" {
		t.Errorf("graph fields lost: %+v", got)
	}
	if got.Labels != nil || got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("unread fields kept: %+v", got.ObjectMeta)
	}
	if out, _ := graphMetadata("not metadata"); out != "not metadata" {
		t.Errorf("other values must pass through, got %v", out)
	}
}
