package apiserver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// refuseTrackingCreates refuses the first n creates of the legacy token
// tracking ConfigMap.
type refuseTrackingCreates struct{ left atomic.Int32 }

func (r *refuseTrackingCreates) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Operation == admission.Create && a.Resource.Resource == "configmaps" && a.Namespace == "kube-system" &&
		a.Name == "kube-apiserver-legacy-service-account-token-tracking" && r.left.Add(-1) >= 0 {
		return apierrors.NewInternalError(errors.New("refused for the test"))
	}
	return nil
}

// TestLegacyTokenTrackingRetriesAFailedCreate: as kube-apiserver's
// legacy_token_tracking_controller (a failed sync goes back to its
// rate-limited queue, and a failed creation does not use up the creation
// limit), a refused creation of the tracking ConfigMap is tried again
// after a short back-off, not at the next 30-minute look.
func TestLegacyTokenTrackingRetriesAFailedCreate(t *testing.T) {
	refuse := &refuseTrackingCreates{}
	refuse.left.Store(3)
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.AdmissionValidators = []admission.Validator{refuse}
	})
	c := ctx(t)
	eventually(t, "the tracking ConfigMap created after three refusals", func() bool {
		_, err := e.cs.CoreV1().ConfigMaps("kube-system").Get(c, "kube-apiserver-legacy-service-account-token-tracking", metav1.GetOptions{})
		return err == nil
	})
	if left := refuse.left.Load(); left >= 0 {
		t.Fatalf("created with %d refusals left", left)
	}
}
