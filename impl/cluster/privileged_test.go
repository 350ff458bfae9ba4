package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// kube-apiserver asks an authorizer for system:masters before the
// --authorization-mode ones, whatever they are: under AlwaysDeny the
// administrator (a client certificate in system:masters) may still do
// anything, and everyone else is still refused.
func TestSystemMastersAuthorizedWhateverTheModes(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,1001,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cs, stop := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Auth: AuthOptions{AuthorizationModes: []string{"AlwaysDeny"}, TokenAuthFile: tokens}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("system:masters under AlwaysDeny: %v, want allowed", err)
	}
	alice := rest.AnonymousClientConfig(c.AdminConfig)
	alice.BearerToken = "alice-token"
	acs, err := kubernetes.NewForConfig(alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice under AlwaysDeny: %v, want forbidden", err)
	}
}
