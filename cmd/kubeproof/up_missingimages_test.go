package main

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpSimMissingImages: `kubeproof up --sim-missing-images nosuch/*,nginx:nope`
// gives its simulated nodes registries without those images, as a real
// node whose registry answers 404: a pod of nosuch/app (the pattern) or
// nginx:nope (a reference) ends in ErrImagePull or ImagePullBackOff, with
// the kubelet's Failed event carrying containerd's NotFound status, while a
// pod of another image runs. `kubeproof up` and `kubeproof kubelet` have
// the flag.
func TestUpSimMissingImages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	for _, name := range []string{"up", "kubelet"} {
		cmd, _, err := newRootCommand().Find([]string{name})
		if err != nil || cmd.Flags().Lookup("sim-missing-images") == nil {
			t.Fatalf("kubeproof %s has no --sim-missing-images (%v)", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := runUp(t, ctx, "--nodes", "1", "--no-scheduler", "--no-controller-manager", "--sim-missing-images", "nosuch/*,nginx:nope")
	images := map[string]string{"x": "nosuch/app", "y": "nginx:nope", "ok": "nginx"}
	for name, image := range images {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{
			NodeName: "node-1", Containers: []v1.Container{{Name: name, Image: image}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	notFound := map[string]string{
		"x": `Failed to pull image "nosuch/app": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/nosuch/app:latest": failed to resolve reference "docker.io/nosuch/app:latest": docker.io/nosuch/app:latest: not found`,
		"y": `Failed to pull image "nginx:nope": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": failed to resolve reference "docker.io/library/nginx:nope": docker.io/library/nginx:nope: not found`,
	}
	waitFor(t, time.Minute, "the missing images' pods in ErrImagePull/ImagePullBackOff and the other running", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "ok", metav1.GetOptions{})
		if err != nil || p.Status.Phase != v1.PodRunning {
			return false
		}
		for name, want := range notFound {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			if w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
				return false
			}
			evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=Failed"})
			if err != nil {
				return false
			}
			found := false
			for _, ev := range evs.Items {
				if strings.HasPrefix(ev.Message, "Failed to pull image") {
					if ev.Type != v1.EventTypeWarning || ev.Message != want {
						t.Fatalf("%s: event %s %q, want %q", name, ev.Type, ev.Message, want)
					}
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
}
