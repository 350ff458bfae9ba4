package cri

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLocalStorageLimitEvictions: on containerd the eviction manager
// measures what pods write — an emptyDir's directory by du, a container's
// writable layer through CRI's container stats — and evicts a pod over an
// emptyDir's sizeLimit or over its ephemeral-storage limit at its next
// interval (Failed, reason Evicted, upstream's message, an Evicted event);
// a pod within its limits keeps running.
func TestLocalStorageLimitEvictions(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	cache := podSpec("cache", "dd if=/dev/zero of=/cache/blob bs=1M count=4 2>/dev/null; exec sleep 3600")
	cache.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	limit := resource.MustParse("1Mi")
	cache.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	cache.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/cache"}}

	layer := podSpec("layer", "dd if=/dev/zero of=/tmp/blob bs=1M count=8 2>/dev/null; exec sleep 3600")
	layer.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	layer.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("2Mi")}

	tidy := podSpec("tidy", "dd if=/dev/zero of=/cache/blob bs=1M count=1 2>/dev/null; exec sleep 3600")
	tidy.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	roomy := resource.MustParse("64Mi")
	tidy.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &roomy}}}}
	tidy.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	tidy.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("64Mi")}

	for _, p := range []*v1.Pod{cache, layer, tidy} {
		createPod(t, ns, p)
	}
	evicted := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" }
	for name, want := range map[string]string{
		"cache": `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `,
		"layer": "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ",
	} {
		p := waitPod(t, ns, name, 90*time.Second, "evicted", evicted)
		if p.Status.Message != want {
			t.Errorf("%s: message %q, want %q", name, p.Status.Message, want)
		}
		if !waitUntil(30*time.Second, func() bool {
			evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == name && e.Reason == "Evicted" && e.Type == v1.EventTypeWarning && e.Message == want {
					return true
				}
			}
			return false
		}) {
			t.Errorf("%s: no Evicted event", name)
		}
	}
	if p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "tidy", metav1.GetOptions{}); err != nil || !isRunning(p) {
		t.Fatalf("tidy: %v %+v", err, p.Status)
	}
}
