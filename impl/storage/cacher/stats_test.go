package cacher_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// storedStats are the stats of res as etcd holds it: its keys, and the
// bytes of their values over their number.
func storedStats(t *testing.T, s *etcd3.Store, res storage.ResourceConfig) storage.Stats {
	t.Helper()
	resp, err := etcd.Client().Get(context.Background(), s.PathPrefix()+res.ResourcePrefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var st storage.Stats
	var bytes int64
	for _, kv := range resp.Kvs {
		st.ObjectCount++
		bytes += int64(len(kv.Value))
	}
	if st.ObjectCount > 0 {
		st.EstimatedAverageObjectSizeBytes = bytes / st.ObjectCount
	}
	return st
}

// eventuallyStats waits until c reports want.
func eventuallyStats(t *testing.T, c storage.StatsReporter, want storage.Stats) {
	t.Helper()
	var got storage.Stats
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if got, err = c.Stats(context.Background()); err == nil && got == want {
			return
		}
	}
	t.Fatalf("Stats = %+v, %v; want %+v", got, err, want)
}

// The cache reports its objects' number and the average bytes of their
// etcd values, as etcd holds them, without asking etcd: kept from its list
// (a cache started after the writes) and from its watch's events (one
// started before: creates, an update that grows an object, a delete). The
// etcd store alone counts the keys and does not know their sizes.
func TestStats(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	other := storagetest.ConfigMaps() // a neighbouring prefix is not counted
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	c2, s2 := newCacher(t, other, nil)
	defer s2.Close()
	defer c2.Stop()
	ctx := context.Background()
	if st, err := c.Stats(ctx); st != (storage.Stats{}) || err != nil {
		t.Fatalf("an empty cache: %+v, %v", st, err)
	}
	for i := range 7 {
		create(t, c, res, cm(fmt.Sprintf("cm%d", i), nil, strings.Repeat("x", 1000*i)))
	}
	create(t, c2, other, cm("elsewhere", nil, strings.Repeat("y", 50000)))
	// cm1 grows by 20 kB, cm6 goes.
	out := &corev1.ConfigMap{}
	err := c.GuaranteedUpdate(ctx, res.ResourcePrefix+"/ns/cm1", out, false, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cm := in.(*corev1.ConfigMap).DeepCopy()
			cm.Data["v"] = strings.Repeat("x", 21000)
			return cm, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, res.ResourcePrefix+"/ns/cm6", &corev1.ConfigMap{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := storedStats(t, s, res)
	if want.ObjectCount != 6 || want.EstimatedAverageObjectSizeBytes < 5000 {
		t.Fatalf("etcd holds %+v", want)
	}
	eventuallyStats(t, c, want)

	// A cache that lists them knows the same.
	c3, s3 := newCacher(t, res, nil)
	defer s3.Close()
	defer c3.Stop()
	eventuallyStats(t, c3, want)

	if st, err := s.Stats(ctx); st != (storage.Stats{ObjectCount: 6}) || err != nil {
		t.Errorf("etcd3 Stats = %+v, %v; want 6 objects, size unknown", st, err)
	}
}
