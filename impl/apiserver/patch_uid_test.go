package apiserver_test

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPatchWithAnotherUIDIsInvalid: a patch whose result carries another
// metadata.uid than the stored object's is refused as kube-apiserver
// refuses it: a patch has no UID precondition there (its
// UpdatedObjectInfo holds no object), so the changed uid reaches the
// object metadata update validation, a 422 "metadata.uid: ... field is
// immutable", and nothing is written. A PUT's uid is a precondition, a
// 409 Conflict. The legacy-service-account-token-cleaner relies on the
// refusal (its invalid-since merge patch carries the uid it read).
func TestPatchWithAnotherUIDIsInvalid(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	secrets := e.cs.CoreV1().Secrets("default")
	s, err := secrets.Create(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const wantMsg = `Secret "tok" is invalid: metadata.uid: Invalid value: "wrong": field is immutable`
	for pt, body := range map[types.PatchType]string{
		types.MergePatchType:          `{"metadata":{"uid":"wrong","labels":{"a":"b"}}}`,
		types.StrategicMergePatchType: `{"metadata":{"uid":"wrong","labels":{"a":"b"}}}`,
		types.JSONPatchType:           `[{"op":"replace","path":"/metadata/uid","value":"wrong"},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`,
	} {
		_, err := secrets.Patch(c, "tok", pt, []byte(body), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || err.Error() != wantMsg {
			t.Errorf("%s with another uid: %v, want a 422 %q", pt, err, wantMsg)
		}
	}
	got, err := secrets.Get(c, "tok", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != s.ResourceVersion || got.Labels["a"] != "" {
		t.Fatalf("refused patches wrote: %+v", got.ObjectMeta)
	}

	r := e.do(http.MethodPut, "/api/v1/namespaces/default/secrets/tok", []byte(fmt.Sprintf(
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tok","uid":"wrong","resourceVersion":%q}}`, s.ResourceVersion)))
	if r.code != http.StatusConflict {
		t.Errorf("PUT with another uid: %d %s, want 409", r.code, r.body)
	}

	patched, err := secrets.Patch(c, "tok", types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{"a":"b"}}}`, s.UID)), metav1.PatchOptions{})
	if err != nil || patched.Labels["a"] != "b" {
		t.Fatalf("merge patch with the stored uid: %v %+v", err, patched)
	}
}
