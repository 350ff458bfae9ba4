package etcd3_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// TestEtcdLatencyTracked: every etcd call a request's context makes adds
// its duration to the request's etcd latency (the source of the
// apiserver.latency.k8s.io/etcd audit annotation), metrics configured or
// not; a context without trackers is served as before.
func TestEtcdLatencyTracked(t *testing.T) {
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := res.ResourcePrefix + "/ns/tracked"
	etcdLatency := func(tr *reqlatency.Trackers) time.Duration {
		d, err := time.ParseDuration(tr.Annotations()[reqlatency.EtcdKey])
		if err != nil {
			return 0
		}
		return d
	}

	ctx, tr := reqlatency.With(context.Background())
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tracked"}}
	if err := s.Create(ctx, key, obj, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	afterCreate := etcdLatency(tr)
	if afterCreate <= 0 {
		t.Fatalf("create: etcd latency %v, want the create's round trip", afterCreate)
	}
	if err := s.Get(ctx, key, storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if got := etcdLatency(tr); got <= afterCreate {
		t.Errorf("get: etcd latency %v, want more than the create's %v (summed)", got, afterCreate)
	}
	if err := s.Get(context.Background(), key, storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("untracked get: %v", err)
	}
	// A list read from etcd adds the decoding of its items, as
	// kube-apiserver's decode-response-object; a get does not.
	if _, ok := tr.Annotations()[reqlatency.DecodeKey]; ok {
		t.Errorf("decode latency %q after a get, want none", tr.Annotations()[reqlatency.DecodeKey])
	}
	list := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, list); err != nil {
		t.Fatal(err)
	}
	if d, err := time.ParseDuration(tr.Annotations()[reqlatency.DecodeKey]); err != nil || d <= 0 || len(list.Items) == 0 {
		t.Errorf("list of %d items: decode latency %q, want a duration", len(list.Items), tr.Annotations()[reqlatency.DecodeKey])
	}
}
