package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestContainerGCKeepsTheNewestDeadInstance: on containerd, the kubelet's
// periodic container garbage collection (every minute) removes a
// crash-looping container's dead instances but the newest; the restart
// count is kept and `kubectl logs --previous` still shows the last dead
// run's output.
//
// The container crashes three times and then keeps running (its runs are
// counted on an emptyDir), so the dead instances stop changing before the
// collection is awaited: a container dying again while a collection
// removes the older ones would leave two or more after it, and the test
// would then have to wait for the next collection.
func TestContainerGCKeepsTheNewestDeadInstance(t *testing.T) {
	ns := newNamespace(t)
	pod := podSpec("looper", `n=$(cat /work/runs 2>/dev/null || echo 0); echo $((n+1)) > /work/runs
if [ "$n" -lt 3 ]; then echo crashing; exit 1; fi
echo settled; exec sleep 3600`)
	pod.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/work"}}
	// sleep as PID 1 ignores SIGTERM: end it at once when the namespace goes.
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	p := createPod(t, ns, pod)
	exited := func() int {
		list, err := node.CRI.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED},
			LabelSelector: map[string]string{kruntime.LabelPodUID: string(p.UID)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	// Three restarts take 0+2+4 s of back-off (the first is at once, as
	// upstream's); a collection may run meanwhile, so more than one dead
	// instance is not awaited.
	waitPod(t, ns, p.Name, 90*time.Second, "running after 3 restarts", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 3 && cs.State.Running != nil
	})
	// Attempts 0-2 have exited and no other will: one dead instance left
	// means a collection ran since (never none: the newest stays). One
	// period, and the time a collection takes under load.
	if !waitUntil(90*time.Second, func() bool { return exited() == 1 }) {
		t.Errorf("%d dead instances left after a collection period, want the newest only", exited())
		describeInstances(t, string(p.UID))
		t.FailNow()
	}
	if !waitUntil(30*time.Second, func() bool {
		out, err := kubectl(t, "logs", "--previous", "-n", ns, p.Name)
		return err == nil && strings.TrimSpace(out) == "crashing"
	}) {
		out, err := kubectl(t, "logs", "--previous", "-n", ns, p.Name)
		t.Fatalf("kubectl logs --previous: %q %v", out, err)
	}
	got, err := env.Client.CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), p.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if cs := containerStatus(got, "main"); cs == nil || cs.RestartCount != 3 || cs.State.Running == nil {
		t.Fatalf("container status after the collection: %+v", cs)
	}
}

// describeInstances logs, for a failure's diagnosis, every container
// instance of pod uid the runtime holds and the first node's collections
// its kubelet logged.
func describeInstances(t *testing.T, uid string) {
	t.Helper()
	list, err := node.CRI.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{kruntime.LabelPodUID: uid},
	})
	if err != nil {
		t.Logf("listing the pod's containers: %v", err)
	}
	for _, c := range list {
		t.Logf("instance %s attempt %d %s created %s", c.Id, c.GetMetadata().GetAttempt(), c.State,
			time.Unix(0, c.CreatedAt).UTC().Format(time.RFC3339Nano))
	}
	b, err := os.ReadFile(filepath.Join(env.LogDir, "kubelet-"+node.Name+".log"))
	if err != nil {
		t.Logf("reading the kubelet's log: %v", err)
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "garbage collection") {
			t.Log(line)
		}
	}
}
