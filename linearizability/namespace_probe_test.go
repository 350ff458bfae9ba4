package linearizability

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestEnsureNamespaceProbe: when the namespace create is forbidden, the
// recorder tries a dry-run create of one of its ConfigMaps there, the
// setup retrying what a server under faults answers for a while (a 503,
// a 429) as it does for the namespace create; an AlreadyExists answer
// (a ConfigMap of an earlier run with the same seed left behind) means
// the namespace exists, as a create's admission, NamespaceLifecycle
// included, runs before the store finds the name taken. A probe refused
// for good (the namespace's 404, a 403) stops the run with both errors.
// The probe is a dry run: nothing it sends is stored.
func TestEnsureNamespaceProbe(t *testing.T) {
	gr := corev1.Resource("configmaps")
	for _, tc := range []struct {
		name    string
		answers []error
		wantErr string
	}{
		{name: "exists", answers: []error{nil}},
		{name: "transient, then exists", answers: []error{apierrors.NewServiceUnavailable("etcd down"), apierrors.NewTooManyRequests("slow down", 0), nil}},
		{name: "left behind", answers: []error{apierrors.NewAlreadyExists(gr, "lin-r1-0")}},
		{name: "missing", answers: []error{apierrors.NewNotFound(corev1.Resource("namespaces"), "ci")}, wantErr: `namespaces "ci" not found`},
		{name: "no ConfigMap rights", answers: []error{apierrors.NewForbidden(gr, "", errors.New(`User "ci" cannot create resource "configmaps"`))}, wantErr: "trying a ConfigMap create there (dry run)"},
	} {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "", errors.New(`User "ci" cannot create resource "namespaces"`))
		})
		probes := 0
		cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			create := a.(k8stesting.CreateActionImpl)
			if dr := create.CreateOptions.DryRun; len(dr) != 1 || dr[0] != metav1.DryRunAll {
				t.Errorf("%s: ConfigMap create with dryRun %v, want [All]", tc.name, dr)
			}
			if a.GetNamespace() != "ci" {
				t.Errorf("%s: ConfigMap create in %q, want ci", tc.name, a.GetNamespace())
			}
			err := tc.answers[min(probes, len(tc.answers)-1)]
			probes++
			if err != nil {
				return true, nil, err
			}
			return true, create.GetObject(), nil
		})
		r := &Recorder{cfg: RecordConfig{Namespace: "ci"}, clients: []kubernetes.Interface{cs}, run: "r1", keys: []string{"lin-r1-0"}}
		err := r.ensureNamespace(context.Background())
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "namespaces is forbidden")):
			t.Errorf("%s: error %v, want one saying %q after the forbidden namespace create", tc.name, err, tc.wantErr)
		}
		if want := min(len(tc.answers), 3); probes != want {
			t.Errorf("%s: %d probes, want %d", tc.name, probes, want)
		}
	}
}
