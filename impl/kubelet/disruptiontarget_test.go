package kubelet

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// withOptimisticConcurrency makes the fake clientset's pod writes behave
// as the API server's do: every write gives the pod a new resourceVersion,
// and an update carrying another resourceVersion than the stored one fails
// with a conflict. (The plain fake accepts any update, so a write built
// from an old view of the pod would never be retried against a new one.)
func withOptimisticConcurrency(c *fake.Clientset) {
	var mu sync.Mutex
	rv := 0
	gvr := v1.SchemeGroupVersion.WithResource("pods")
	next := func() string {
		rv++
		return strconv.Itoa(rv)
	}
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		p := a.(clienttesting.CreateAction).GetObject().(*v1.Pod).DeepCopy()
		p.ResourceVersion = next()
		return true, p, c.Tracker().Create(gvr, p, p.Namespace)
	})
	c.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		p := a.(clienttesting.UpdateAction).GetObject().(*v1.Pod)
		obj, err := c.Tracker().Get(gvr, p.Namespace, p.Name)
		if err != nil {
			return true, nil, err
		}
		stored := obj.(*v1.Pod)
		if p.ResourceVersion != stored.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), p.Name,
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		}
		updated := stored.DeepCopy()
		if a.GetSubresource() == "status" {
			updated.Status = *p.Status.DeepCopy()
		} else {
			updated.ObjectMeta, updated.Spec = *p.ObjectMeta.DeepCopy(), *p.Spec.DeepCopy()
		}
		updated.ResourceVersion = next()
		return true, updated, c.Tracker().Update(gvr, updated, p.Namespace)
	})
}

// evictNow has the eviction manager pick pod (hard threshold: no grace)
// and the pod worker carry the eviction out.
func evictNow(h *harness, pod *v1.Pod) error {
	h.k.requestEviction(&eviction.Eviction{
		Pod: pod, Message: "The node was low on resource: memory. ",
		Threshold: eviction.Threshold{Signal: eviction.SignalMemoryAvailable},
	})
	return h.k.evictPod(h.ctx, pod.UID)
}

// wantEvicted fails unless p is Failed/Evicted with the kubelet's
// DisruptionTarget.
func wantEvicted(t *testing.T, when string, p *v1.Pod) {
	t.Helper()
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != eviction.ReasonEvicted {
		t.Fatalf("%s: %s %q, want Failed Evicted", when, p.Status.Phase, p.Status.Reason)
	}
	if c := cond(p, v1.DisruptionTarget); c.Status != v1.ConditionTrue || c.Reason != reasonTerminationByKubelet {
		t.Fatalf("%s: DisruptionTarget = %+v, conditions %+v", when, c, p.Status.Conditions)
	}
}

// The source delivers, after the eviction's write, a version of the pod
// older than that write (another component's change whose watch event was
// still in flight): the sync built from it must not write the evicted
// pod's DisruptionTarget away. Before the fix it did: the view took the
// conditions the kubelet does not own from that older pod (none), the
// write conflicted, and the retry sent the status unchanged onto the
// evicted pod.
func TestEvictedPodKeepsDisruptionTargetAgainstAnOlderView(t *testing.T) {
	h := newHarness(t, nil)
	withOptimisticConcurrency(h.client)
	p := h.sync(h.create(h.pod("hog", nil)))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	// Another component labels the pod; the kubelet has not seen it yet.
	labelled := p.DeepCopy()
	labelled.Labels = map[string]string{"tier": "batch"}
	older, err := h.client.CoreV1().Pods(p.Namespace).Update(h.ctx, labelled, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The eviction's write conflicts with the label's, re-reads and lands.
	if err := evictNow(h, p); err != nil {
		t.Fatal(err)
	}
	wantEvicted(t, "after the eviction", h.get(p))

	// Now the label's watch event arrives and the worker syncs.
	h.k.HandlePod(older)
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	wantEvicted(t, "after a sync from the older view", h.get(p))
	h.step(time.Second)
	wantEvicted(t, "once the source caught up", h.sync(p))
}

// The eviction's own status write fails: the next sync writes the pod's
// Failed/Evicted status, and must write the DisruptionTarget with it.
// Before the fix it wrote the phase without the condition (it lived only
// in the failed write's view).
func TestEvictionStatusRetriedWithDisruptionTarget(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("hog", nil)))
	h.failNextStatusWrite()
	if err := evictNow(h, p); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	wantEvicted(t, "after the retry", h.sync(p))
}

// Another component (the taint manager, the eviction API) sets a
// DisruptionTarget while the kubelet writes a status built from the pod
// before it: the write's conflict retry keeps the condition, as upstream's
// status manager merges every write with the conditions it does not own
// from the pod it writes onto. Before the fix the retry dropped it.
func TestStatusWriteKeepsDisruptionTargetSetMeanwhile(t *testing.T) {
	h := newHarness(t, nil)
	withOptimisticConcurrency(h.client)
	p := h.sync(h.create(h.pod("job", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitCode] = "0"
		p.Annotations[sim.AnnotationExitAfter] = "5s"
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	marked := p.DeepCopy()
	marked.Status.Conditions = append(marked.Status.Conditions, v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager",
		LastTransitionTime: metav1.NewTime(t0),
	})
	if _, err := h.client.CoreV1().Pods(p.Namespace).UpdateStatus(h.ctx, marked, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container completes; the kubelet syncs from the pod it has.
	h.step(5 * time.Second)
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	got := h.get(p)
	if got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	if c := cond(got, v1.DisruptionTarget); c.Status != v1.ConditionTrue || c.Reason != "DeletionByTaintManager" {
		t.Fatalf("DisruptionTarget = %+v, conditions %+v", c, got.Status.Conditions)
	}
}
