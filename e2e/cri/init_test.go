package cri

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestInitContainersRunInOrder: init containers run one after the other,
// each to completion, before the app container starts.
func TestInitContainersRunInOrder(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("inits", "cat /work/order; exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mount := []v1.VolumeMount{{Name: "work", MountPath: "/work"}}
	p.Spec.Containers[0].VolumeMounts = mount
	for _, name := range []string{"first", "second", "third"} {
		// Each checks that the one before it has finished, then records itself.
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
			Name: name, Image: busybox, VolumeMounts: mount,
			Command: []string{"sh", "-c", "sleep 0.3; echo " + name + " >> /work/order"},
		})
	}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	var prevFinish time.Time
	for _, name := range []string{"first", "second", "third"} {
		cs := containerStatus(got, name)
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			t.Fatalf("init container %s: %s", name, containerStates(got.Status.InitContainerStatuses))
		}
		if cs.State.Terminated.StartedAt.Time.Before(prevFinish) {
			t.Fatalf("init container %s started before the previous one finished", name)
		}
		prevFinish = cs.State.Terminated.FinishedAt.Time
	}
	if !waitUntil(10*time.Second, func() bool {
		out, _ := kubectl(t, "logs", "-n", ns, p.Name)
		return out == "first\nsecond\nthird\n"
	}) {
		out, _ := kubectl(t, "logs", "-n", ns, p.Name)
		t.Fatalf("order the init containers ran in, as the app container read it: %q", out)
	}
}

// TestFailingInitContainerBlocksApp: while an init container fails, the
// app container is never created: with restartPolicy Never the pod ends
// Failed; with Always the init container is retried (restartCount grows)
// and the app container waits in PodInitializing.
func TestFailingInitContainerBlocksApp(t *testing.T) {
	ns := newNamespace(t)
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyAlways} {
		p := podSpec("init-fails-"+policyName(policy), "exec sleep 3600")
		p.Spec.RestartPolicy = policy
		p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: busybox, Command: []string{"sh", "-c", "exit 2"}}}
		createPod(t, ns, p)
		var got *v1.Pod
		if policy == v1.RestartPolicyNever {
			got = waitPod(t, ns, p.Name, 60*time.Second, "Failed", phaseIs(v1.PodFailed))
		} else {
			got = waitPod(t, ns, p.Name, 60*time.Second, "retrying its init container", func(p *v1.Pod) bool {
				cs := containerStatus(p, "setup")
				return cs != nil && cs.RestartCount >= 2
			})
			if got.Status.Phase != v1.PodPending {
				t.Errorf("%s: phase %s while initializing, want Pending", policy, got.Status.Phase)
			}
		}
		app := containerStatus(got, "main")
		if app == nil || app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" {
			t.Errorf("%s: app container: %s", policy, containerStates(got.Status.ContainerStatuses))
		}
		for _, c := range containersOf(t, ns) {
			if c.Labels[kruntime.LabelPodName] == p.Name && c.Metadata.Name == "main" {
				t.Fatalf("%s: the app container was created although its init container failed", policy)
			}
		}
	}
}
