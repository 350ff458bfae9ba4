package kubelet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// BenchmarkResyncRunningPod is the periodic resync of a Running pod whose
// status has not changed (30,000 of them every 20 s at 1,000 nodes): its
// cost, and its allocations, are what a kubelet spends per pod when
// nothing happens.
func BenchmarkResyncRunningPod(b *testing.B) { benchResync(b, nil) }

// BenchmarkResyncRunningPodWithRequests is BenchmarkResyncRunningPod for
// pods whose container requests CPU and memory, as the bench workloads'
// pods do: their statuses report the container's allocated and actual
// resources (in-place resize), which a resync must not copy.
func BenchmarkResyncRunningPodWithRequests(b *testing.B) {
	benchResync(b, func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resourceMust("100m"), v1.ResourceMemory: resourceMust("500Mi")}
		// The QoS class the API server gives such a pod (the harness's
		// pods are BestEffort): its pod cgroup's values, which its
		// status.resources report, follow from it.
		p.Status.QOSClass = v1.PodQOSBurstable
	})
}

func benchResync(b *testing.B, mutate func(*v1.Pod)) {
	h := newHarness(b, nil)
	// The fake API stores no resourceVersions; a real one does, and the
	// kubelet's pod view relies on them (shareLastStatus).
	var rv atomic.Int64
	h.client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			if p, ok := u.GetObject().(*v1.Pod); ok {
				p.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
			}
		}
		if c, ok := a.(k8stesting.CreateAction); ok {
			if p, ok := c.GetObject().(*v1.Pod); ok {
				p.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
			}
		}
		return false, nil, nil
	})
	var uids []types.UID
	for i := 0; i < 30; i++ {
		p := h.create(h.pod(fmt.Sprintf("p%d", i), mutate))
		h.sync(p)
		h.sync(p) // the source catches up with the written status
		uids = append(uids, p.UID)
	}
	for _, uid := range uids {
		if rec := h.k.pods[uid]; rec.lastStatus != &rec.pod.Status {
			b.Fatalf("pod %s: the kubelet's last status is not the source's", uid)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := h.k.syncPod(h.ctx, uids[i%len(uids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRelistUnchanged is one relist of a node whose 30 pods' containers
// have not changed (every kubelet, every second).
func BenchmarkRelistUnchanged(b *testing.B) {
	h := newHarness(b, nil)
	for i := 0; i < 30; i++ {
		p := h.create(h.pod(fmt.Sprintf("p%d", i), nil))
		h.sync(p)
	}
	h.k.relist(h.ctx)
	b.ReportAllocs()
	for b.Loop() {
		h.k.relist(h.ctx)
	}
}

// BenchmarkRefreshVolumesUnchanged is the periodic refresh of a Running
// pod's kube-api-access volume (the projected token, the cluster CA from
// kube-root-ca.crt, the namespace: what every pod of the startup
// benchmarks mounts) when nothing changed: the token is not due, the
// files hold what they should. It runs for every pod once per
// SyncFrequency.
func BenchmarkRefreshVolumesUnchanged(b *testing.B) {
	root := b.TempDir()
	h := newHarness(b, func(c *Config) { c.RootDir = root })
	h.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status.Token = strings.Repeat("t", 900)
		return true, tr, nil
	})
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data:       map[string]string{"ca.crt": strings.Repeat("c", 1100)},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.k.objects.start(ctx) // reads come from the object's watch, as in a running kubelet
	defer h.k.objects.stop()
	p := h.create(h.pod("p", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-x1x2x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "kube-api-access-x1x2x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		b.Fatalf("phase %s", got.Status.Phase)
	}
	rec := h.k.pods[p.UID]
	pod := rec.pod
	for i := 0; ; i++ {
		if running, synced := h.k.ObjectWatches(); running == 1 && synced == 1 {
			break
		}
		if i == 1000 {
			b.Fatal("the ConfigMap's watch did not sync")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.k.setUpVolumes(h.ctx, rec, pod, true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := h.k.setUpVolumes(h.ctx, rec, pod, true); err != nil {
			b.Fatal(err)
		}
	}
}
