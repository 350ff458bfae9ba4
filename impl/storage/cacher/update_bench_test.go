package cacher_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// BenchmarkPodStatusUpdate is the storage side of a kubelet's pods/status
// write of the startup benchmark's Running pod (a condition's time moves):
// through the watch cache, which starts the update from its copy of the
// pod, and through the etcd store alone, which reads the pod by a quorum
// get first. Each update waits for the cache to have the one before it (a
// read from the cache, in both). Allocations include embedded etcd's and
// the cache's.
func BenchmarkPodStatusUpdate(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "apiserver", "fieldmanager", "testdata", "pod-running.json"))
	if err != nil {
		b.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		b.Fatal(err)
	}
	pod.ResourceVersion, pod.Namespace, pod.Name = "", "bench", "startup-1"
	res := storagetest.Pods()
	c, s := newCacher(b, res, nil)
	defer s.Close()
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := res.ResourcePrefix + "/bench/startup-1"
	if err := c.Create(ctx, key, pod, &corev1.Pod{}); err != nil {
		b.Fatal(err)
	}
	tick := func(in runtime.Object) (runtime.Object, error) {
		p := in.(*corev1.Pod).DeepCopy()
		p.Status.Conditions[0].LastProbeTime.Time = p.Status.Conditions[0].LastProbeTime.Add(time.Second)
		return p, nil
	}
	for _, tt := range []struct {
		name  string
		store storage.Interface
	}{{"watch-cache", c}, {"etcd", s}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := &corev1.Pod{}
				if err := tt.store.GuaranteedUpdate(ctx, key, out, false, nil, tick); err != nil {
					b.Fatal(err)
				}
				// As a kubelet's writes of one pod are seconds apart, the
				// next update comes once the cache has this one.
				if err := c.Get(ctx, key, storage.GetOptions{ResourceVersion: out.ResourceVersion}, &corev1.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
