package props

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// Probes are user operations whose expected outcome the API fixes, run in
// a side namespace of the run (so that they leave the observed deployments
// alone): a resumed watch must deliver exactly the writes after its
// resourceVersion (STORE-1), a quorum list must include every acknowledged
// write (STORE-4), the garbage collector must keep a dependent while one of
// its owners lives and collect it after the last one goes (GC-1, LIVE-2),
// and a restartPolicy Never pod whose container exits must never have it
// restarted (KUBELET-7).

// sideNamespace returns the run's probe namespace, creating it on first use.
func (h *harness) sideNamespace() string {
	if h.side == "" {
		h.side = h.ns + "-side"
		_, err := h.client.CoreV1().Namespaces().Create(context.Background(),
			&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.side}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			h.t.Fatalf("creating namespace %s: %v", h.side, err)
		}
	}
	return h.side
}

var probeCount int

func probeName(prefix string) string {
	probeCount++
	return fmt.Sprintf("%s-%d", prefix, probeCount)
}

func (h *harness) probeFail(id, format string, args ...any) {
	h.fail("probe failed", []Violation{{ID: id, Detail: fmt.Sprintf(format, args...)}})
}

// probeWatchResume lists (resourceVersion R), writes three ConfigMaps,
// makes sure the watch cache holds them, and watches from R: the watch
// must deliver exactly those three ADDED events, in order (STORE-1).
func (h *harness) probeWatchResume(t *rapid.T) {
	ns := h.sideNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := h.client.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing configmaps: %v", err)
	}
	from := list.ResourceVersion
	prefix := probeName("watch")
	h.step("probe: watch configmaps of %s from resourceVersion %s after creating %s-0..2", ns, from, prefix)
	var want []string
	last := ""
	for i := 0; i < 3; i++ {
		cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating configmap: %v", err)
		}
		want = append(want, cm.Name+"@"+cm.ResourceVersion)
		last = cm.ResourceVersion
	}
	// A list not older than the last write waits until the watch cache
	// holds it: the watch below then resumes from the cache's history.
	if _, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: last, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Fatalf("listing at %s: %v", last, err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return // compacted meanwhile: nothing to check
	}
	if err != nil {
		t.Fatalf("watching from %s: %v", from, err)
	}
	defer w.Stop()
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				h.probeFail("STORE-1", "watch from %s ended after %v, want %v", from, got, want)
			}
			if e.Type == watch.Error {
				if st, ok := e.Object.(*metav1.Status); ok && st.Code == 410 {
					return
				}
				h.probeFail("STORE-1", "watch from %s: error event %v", from, e.Object)
			}
			cm, ok := e.Object.(*v1.ConfigMap)
			if !ok || !strings.HasPrefix(cm.Name, prefix) {
				continue
			}
			got = append(got, cm.Name+"@"+cm.ResourceVersion)
			if e.Type != watch.Added {
				h.probeFail("STORE-1", "watch from %s: %s event for %s, want ADDED", from, e.Type, cm.Name)
			}
		case <-timeout:
			h.probeFail("STORE-1", "watch from resourceVersion %s delivered %v within 5s; the writes after it were %v", from, got, want)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		h.probeFail("STORE-1", "watch from resourceVersion %s delivered %v; the writes after it were %v", from, got, want)
	}
	h.check()
}

// probeQuorumList writes bursts of ConfigMaps (ten creates at once, then
// ten deletes at once), each burst followed, once every write of it was
// acknowledged, by a list with resourceVersion "" (a quorum read) that must
// reflect all of them (STORE-4). Bursts keep a watch cache busy, so a list
// answered from it before it caught up shows.
func (h *harness) probeQuorumList(t *rapid.T) {
	ns := h.sideNamespace()
	ctx := context.Background()
	cms := h.client.CoreV1().ConfigMaps(ns)
	prefix := probeName("list")
	h.step("probe: 3 bursts of 10 configmap creates and 10 deletes in %s and a secret write, each followed by a quorum list", ns)
	present := func() (map[string]bool, string) {
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing configmaps: %v", err)
		}
		out := map[string]bool{}
		for _, cm := range list.Items {
			out[cm.Name] = true
		}
		return out, list.ResourceVersion
	}
	burst := func(names []string, write func(string) error) {
		errs := make(chan error, len(names))
		for _, n := range names {
			go func() { errs <- write(n) }()
		}
		for range names {
			if err := <-errs; err != nil {
				t.Fatalf("writing configmap: %v", err)
			}
		}
	}
	for round := 0; round < 3; round++ {
		var names []string
		for i := 0; i < 10; i++ {
			names = append(names, fmt.Sprintf("%s-%d-%d", prefix, round, i))
		}
		burst(names, func(n string) error {
			_, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			return err
		})
		got, rv := present()
		for _, n := range names {
			if !got[n] {
				h.probeFail("STORE-4", "a quorum list (resourceVersion \"\", answered at %s) after configmap %s was created does not hold it", rv, n)
			}
		}
		burst(names, func(n string) error { return cms.Delete(ctx, n, metav1.DeleteOptions{}) })
		got, rv = present()
		for _, n := range names {
			if got[n] {
				h.probeFail("STORE-4", "a quorum list (resourceVersion \"\", answered at %s) after configmap %s was deleted still holds it", rv, n)
			}
		}
		// A write of another resource moves the store's revision: a quorum
		// list of configmaps answered afterwards is at that revision or a
		// later one, not at the last revision the configmaps cache saw.
		secret, err := h.client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-mark-%d", prefix, round)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating secret: %v", err)
		}
		if _, rv = present(); revision(rv) < revision(secret.ResourceVersion) {
			h.probeFail("STORE-4", "a quorum list of configmaps answered at resourceVersion %s, older than secret %s written before it at %s",
				rv, secret.Name, secret.ResourceVersion)
		}
	}
	h.check()
}

// probeGC creates two owner ConfigMaps and a dependent owned by both,
// deletes one owner: the garbage collector must drop that reference but
// keep the dependent (GC-1); after the other owner goes, the dependent must
// be collected (LIVE-2).
func (h *harness) probeGC(t *rapid.T) {
	ns := h.sideNamespace()
	ctx := context.Background()
	cms := h.client.CoreV1().ConfigMaps(ns)
	prefix := probeName("gc")
	h.step("probe: configmap %s-dependent owned by %s-a and %s-b; delete %s-a, later %s-b", prefix, prefix, prefix, prefix, prefix)
	var owners []metav1.OwnerReference
	for _, o := range []string{"a", "b"} {
		cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + o}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating owner: %v", err)
		}
		owners = append(owners, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID})
	}
	dep, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-dependent", OwnerReferences: owners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating dependent: %v", err)
	}
	if err := cms.Delete(ctx, owners[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting owner: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := cms.Get(ctx, dep.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			h.probeFail("GC-1", "dependent %s (owners %s and %s) was deleted after only %s was, while %s (uid %s) lives",
				dep.Name, owners[0].Name, owners[1].Name, owners[0].Name, owners[1].Name, owners[1].UID)
		}
		if err != nil {
			t.Fatalf("reading dependent: %v", err)
		}
		if !refersTo(cur.OwnerReferences, owners[0].UID) {
			break // the collector processed the dangling reference
		}
		if time.Now().After(deadline) {
			h.probeFail("LIVE-2", "dependent %s still refers to deleted owner %s after 30s", dep.Name, owners[0].Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cms.Delete(ctx, owners[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting owner: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := cms.Get(ctx, dep.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			h.probeFail("LIVE-2", "dependent %s remains 30s after both its owners were deleted", dep.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.check()
}

func refersTo(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// probeNeverPod runs a bare pod with restartPolicy Never whose container
// exits 1 shortly after it starts: the pod must end Failed with the
// container never restarted (KUBELET-7) and stay Failed (KUBELET-5).
func (h *harness) probeNeverPod(t *rapid.T) {
	ns := h.sideNamespace()
	ctx := context.Background()
	name := probeName("never")
	h.step("probe: pod %s/%s with restartPolicy Never whose container exits 1 after 200ms", ns, name)
	grace := int64(0)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{sim.AnnotationCrashAfter: "200ms"}},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "job", Image: "registry.example/job:v1"}}},
	}
	pods := h.client.CoreV1().Pods(ns)
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			break
		}
		// The namespace's default service account may not exist yet.
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("creating pod %s: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer func() { _ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}) }()
	failedAt := time.Time{}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading pod %s: %v", name, err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				h.probeFail("KUBELET-7", "pod %s/%s (restartPolicy Never) on %s: container %s restarted %d times (phase %s)",
					ns, name, p.Spec.NodeName, cs.Name, cs.RestartCount, p.Status.Phase)
			}
		}
		switch {
		case !failedAt.IsZero() && p.Status.Phase != v1.PodFailed:
			h.probeFail("KUBELET-5", "pod %s/%s was Failed, then %s", ns, name, p.Status.Phase)
		case failedAt.IsZero() && p.Status.Phase == v1.PodFailed:
			failedAt = time.Now()
		case !failedAt.IsZero() && time.Since(failedAt) > 2*time.Second:
			h.check()
			return
		}
	}
	// Not Failed within 20 s (no capacity, or a failed node): nothing
	// wrong was seen.
	h.check()
}
