package apiserver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

const trackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"

// trackingSince waits for the tracking ConfigMap to exist with a since
// that is a date, and returns it.
func trackingSince(t *testing.T, e *env, what string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	eventually(t, what, func() bool {
		got, err := e.cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), trackingConfigMap, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if _, err := time.Parse(time.DateOnly, got.Data["since"]); err != nil {
			return false
		}
		cm = got
		return true
	})
	return cm
}

// TestLegacyTokenTrackingRecreatesADeletedConfigMap: the tracking
// ConfigMap is watched, as kube-apiserver's legacy token tracking
// controller watches it: a server that did not create it itself (its
// creation limit of one per 30 minutes is unused) creates it again as
// soon as it is deleted, not at a 30-minute look.
func TestLegacyTokenTrackingRecreatesADeletedConfigMap(t *testing.T) {
	withSA := func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
	}
	first := newEnv(t, withSA)
	old := trackingSince(t, first, "the tracking ConfigMap of the first server")
	// A second server on the same storage finds it there.
	second := newEnvAt(t, first.prefix, withSA)
	// Its informer has listed once it serves; give it a moment to be
	// watching (a delete before that makes it create at its first sync,
	// which passes too).
	eventually(t, "the second server serving", func() bool {
		_, err := second.cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), trackingConfigMap, metav1.GetOptions{})
		return err == nil
	})
	if err := second.cs.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), trackingConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := trackingSince(t, second, "the tracking ConfigMap created again after its deletion")
	if got.UID == old.UID {
		t.Fatalf("the ConfigMap was not deleted: uid %s", got.UID)
	}
}

// recordTrackingWrites records who writes the tracking ConfigMap through
// admission, and how.
type recordTrackingWrites struct {
	mu     sync.Mutex
	writes []string // "operation user"
}

func (r *recordTrackingWrites) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource == "configmaps" && a.Subresource == "" && a.Namespace == "kube-system" && a.Name == trackingConfigMap {
		user := ""
		if a.User != nil {
			user = a.User.Name
		}
		r.mu.Lock()
		r.writes = append(r.writes, string(a.Operation)+" "+user)
		r.mu.Unlock()
	}
	return nil
}

func (r *recordTrackingWrites) has(w string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.writes {
		if x == w {
			return true
		}
	}
	return false
}

// TestLegacyTokenTrackingMendsAMalformedSince: a since that is not a date
// is rewritten with today's date as soon as it is written (kube-apiserver's
// controller sees the update through its informer; updates are not rate
// limited), and the rewrite is an update through the API, seen by
// admission as the API server's own user. The server authenticates no
// service account tokens: kube-apiserver runs the controller whatever its
// authenticators.
func TestLegacyTokenTrackingMendsAMalformedSince(t *testing.T) {
	rec := &recordTrackingWrites{}
	e := newEnv(t, func(c *apiserver.Config) { c.AdmissionValidators = []admission.Validator{rec} })
	cm := trackingSince(t, e, "the tracking ConfigMap")
	if !rec.has("CREATE " + apiserver.APIServerUser) {
		t.Errorf("the creation went past admission: saw %v", rec.writes)
	}
	for {
		cm.Data["since"] = "not a date"
		_, err := e.cs.CoreV1().ConfigMaps("kube-system").Update(context.Background(), cm, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		if cm, err = e.cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), trackingConfigMap, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := trackingSince(t, e, "the since date mended")
	if today, yesterday := time.Now().UTC().Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly); got.Data["since"] != today && got.Data["since"] != yesterday {
		t.Fatalf("since %q, want today's UTC date %s", got.Data["since"], today)
	}
	if !rec.has("UPDATE " + apiserver.APIServerUser) {
		t.Fatalf("the rewrite went past admission: saw %v", rec.writes)
	}
}
