package etcd3_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// Objects of a resource with a TTL (events: --event-ttl) are written with
// an etcd lease and go once the TTL has passed since their last write: a
// watch sees them DELETED. An update attaches the object to a newer lease.
// Through both clients: the in-process one takes the create's own request
// (newCreateTxn), gRPC clientv3's Txn.
func TestTTLObjectsGoAfterTheirLastWrite(t *testing.T) {
	for _, tc := range []struct {
		name       string
		client     *clientv3.Client
		newWatcher func() clientv3.Watcher
	}{
		{"in-process", etcd.InProcessClient(), etcd.NewWatcher},
		{"grpc", etcd.Client(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res := storagetest.ConfigMaps()
			res.ResourcePrefix = "/ttl-" + tc.name
			// Leases of ceil(2 s + 5%) = 3 s, etcd's minimum being 2 s.
			res.TTL = 2 * time.Second
			s, err := etcd3.New(etcd3.Config{Client: tc.client, NewWatcher: tc.newWatcher, Resource: res})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			key := func(name string) string { return res.ResourcePrefix + "/ns/" + name }
			lease := func(name string) clientv3.LeaseID {
				t.Helper()
				resp, err := etcd.Client().Get(ctx, "/registry"+key(name))
				if err != nil || len(resp.Kvs) != 1 {
					t.Fatalf("reading %s from etcd: %v %v", name, resp, err)
				}
				return clientv3.LeaseID(resp.Kvs[0].Lease)
			}
			exists := func(name string) bool {
				t.Helper()
				err := s.Get(ctx, key(name), storage.GetOptions{}, &corev1.ConfigMap{})
				if err != nil && !storage.IsNotFound(err) {
					t.Fatal(err)
				}
				return err == nil
			}
			created := &corev1.ConfigMap{}
			for _, name := range []string{"kept", "left"} {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": "0"}}
				if err := s.Create(ctx, key(name), cm, created); err != nil {
					t.Fatal(err)
				}
			}
			left := lease("left")
			if left == clientv3.NoLease || lease("kept") != left {
				t.Fatalf("creates attached to leases %x and %x, want one shared lease", lease("kept"), left)
			}
			ttl, err := etcd.Client().TimeToLive(ctx, left)
			if err != nil || ttl.GrantedTTL != 3 {
				t.Fatalf("lease %x: %+v %v, want granted for 3 s", left, ttl, err)
			}
			w, err := s.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true,
				ResourceVersion: created.ResourceVersion, Predicate: storage.Everything()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			time.Sleep(time.Second) // past the 100-ms reuse window
			if err := s.GuaranteedUpdate(ctx, key("kept"), &corev1.ConfigMap{}, false, nil,
				func(obj runtime.Object) (runtime.Object, error) {
					cm := obj.(*corev1.ConfigMap)
					cm.Data["v"] = "1"
					return cm, nil
				}); err != nil {
				t.Fatal(err)
			}
			if l := lease("kept"); l == left || l == clientv3.NoLease {
				t.Fatalf("the update left the object on lease %x, want a newer one than %x", l, left)
			}
			// The order of the deletions (below) says the updated object
			// outlived the other; reads only say both went.
			for exists("left") || exists("kept") {
				if ctx.Err() != nil {
					t.Fatal("the objects never went")
				}
				time.Sleep(20 * time.Millisecond)
			}
			var deleted []string
			for len(deleted) < 2 {
				select {
				case ev := <-w.ResultChan():
					if ev.Type == watch.Deleted {
						deleted = append(deleted, ev.Object.(*corev1.ConfigMap).Name)
					}
				case <-ctx.Done():
					t.Fatalf("the watch saw %v deleted, want both", deleted)
				}
			}
			if deleted[0] != "left" || deleted[1] != "kept" {
				t.Errorf("the watch saw %v deleted, want [left kept]", deleted)
			}
		})
	}
}
