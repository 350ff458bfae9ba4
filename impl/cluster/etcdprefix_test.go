package cluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An --etcd-prefix without its leading slash ("foo/") is rooted as
// kube-apiserver roots it (path.Join("/", prefix)): the storage precondition
// error of a PUT with another uid names the object's key under "/foo/", the
// key the storage writes. The root prefix ("/", what `kubeproof apiserver
// --etcd-prefix=` passes) keeps keys straight under the root.
func TestEtcdPrefixRooted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	for _, tc := range []struct{ prefix, keys string }{{"foo/", "/foo/"}, {"/", "/"}} {
		t.Run(tc.prefix, func(t *testing.T) { testEtcdPrefix(t, tc.prefix, tc.keys) })
	}
}

func testEtcdPrefix(t *testing.T, prefix, keys string) {
	ctx := context.Background()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", EtcdPrefix: prefix,
		CompactionInterval: -1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	})
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sent := cm.DeepCopy()
	sent.UID = "not-the-uid"
	_, err = cs.CoreV1().ConfigMaps("default").Update(ctx, sent, metav1.UpdateOptions{})
	want := fmt.Sprintf(`Operation cannot be fulfilled on configmaps "c": StorageError: invalid object, Code: 4, Key: %sconfigmaps/default/c, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: not-the-uid, UID in object meta: %s`, keys, cm.UID)
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("PUT with another uid: %v, want a 409 %q", err, want)
	}
}
