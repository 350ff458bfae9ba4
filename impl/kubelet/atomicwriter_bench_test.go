package kubelet

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkSetUpVolumesFirstWrite is the first write of a new pod's
// projected volume (the cluster CA from kube-root-ca.crt and the
// namespace, as the kube-api-access volume of every pod of the startup
// benchmarks, without its token, whose request would be most of the
// figures): what the atomic writer costs each pod once when it starts.
func BenchmarkSetUpVolumesFirstWrite(b *testing.B) {
	root := b.TempDir()
	h := newHarness(b, func(c *Config) { c.RootDir = root })
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data:       map[string]string{"ca.crt": strings.Repeat("c", 1100)},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.k.objects.start(ctx)
	defer h.k.objects.stop()
	pod := h.create(h.pod("p", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-x1x2x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}}
	}))
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, pod, true); err != nil { // starts the ConfigMap's watch
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		if running, synced := h.k.ObjectWatches(); running == 1 && synced == 1 {
			break
		}
		if i == 1000 {
			b.Fatal("the ConfigMap's watch did not sync")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec := &podRecord{}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := os.RemoveAll(h.k.podDir(pod.UID)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := h.k.setUpVolumes(h.ctx, rec, pod, true); err != nil {
			b.Fatal(err)
		}
	}
}
