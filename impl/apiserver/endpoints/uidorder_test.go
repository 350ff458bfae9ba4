package endpoints_test

import (
	"context"
	"testing"

	"github.com/kubeproof/kubeproof/impl/cluster"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestPutUIDCheckedBeforeResourceVersion: a PUT with both another uid and
// a stale resourceVersion is refused for its uid, kube-apiserver's storage
// precondition being checked before the update's resourceVersion.
func TestPutUIDCheckedBeforeResourceVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, client := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := cm.UID
	cm.UID, cm.ResourceVersion = "not-the-uid", "1"
	_, err = client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	if want := storagePrecondition("configmaps", "c", "/registry/configmaps/default/c", "not-the-uid", stored); !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("PUT with another uid and a stale resourceVersion: %v, want 409 %q", err, want)
	}
}

// TestPreconditionNamesTheEtcdPrefix: the key in the precondition message
// is under the API server's --etcd-prefix, as kube-apiserver's storage
// key.
func TestPreconditionNamesTheEtcdPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, err := cluster.Start(context.Background(), cluster.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", EtcdPrefix: "/elsewhere/", CompactionInterval: -1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	}()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := cm.UID
	cm.UID = "not-the-uid"
	_, err = client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	if want := storagePrecondition("configmaps", "c", "/elsewhere/configmaps/default/c", "not-the-uid", stored); !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("PUT with another uid: %v, want 409 %q", err, want)
	}
}
