package resourcequota_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: new(false), Containers: []corev1.Container{{Name: "app", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
}

func used(q *corev1.ResourceQuota, n corev1.ResourceName) string {
	u, ok := q.Status.Used[n]
	if !ok {
		return "<none>"
	}
	return u.String()
}

// TestReplenishesAgainstTheAPIServer runs the controller against
// kubeproof's API server (with its ResourceQuota admission plugin):
// pods and configmaps are created up to the quota, the next create is
// refused, and once one is deleted (or a pod finishes) the controller
// gives its usage back and a new create succeeds. Raising spec.hard is
// followed in status.hard. After Run returns no goroutine is left.
func TestReplenishesAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "quota-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The default service account, in case the ServiceAccount admission
	// plugin is on (no service account controller runs here).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	quotas := cs.CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("2"), "requests.cpu": resource.MustParse("1"), "count/configmaps": resource.MustParse("1"),
	}}}
	if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resources, err := resourcequota.QuotableResources(cs.Discovery())
	if err != nil {
		t.Fatal(err)
	}

	before := controllerGoroutines()
	runCtx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := resourcequota.New(cs, factory, resources, resourcequota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range []schema.GroupResource{podResource, configmaps, secrets} {
		if !ctrl.Observes(gr) {
			t.Fatalf("the controller does not observe %s (discovered %v)", gr, resources)
		}
	}
	factory.Start(runCtx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx, 2) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}
	defer stop()

	quotaShows := func(want map[corev1.ResourceName]string) func() (bool, error) {
		return func() (bool, error) {
			q, err := quotas.Get(ctx, "compute", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for n, v := range want {
				if used(q, n) != v {
					return false, fmt.Errorf("%s used %s, want %s", n, used(q, n), v)
				}
			}
			return true, nil
		}
	}
	waitFor(t, "the controller to compute the new quota's usage", quotaShows(map[corev1.ResourceName]string{"pods": "0", "requests.cpu": "0", "count/configmaps": "0"}))

	pods := cs.CoreV1().Pods(ns)
	for _, name := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s within the quota: %v", name, err)
		}
	}
	if _, err := pods.Create(ctx, testPod("c"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a third pod against pods=2: %v, want Forbidden (exceeded quota)", err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a pod create to succeed once the deleted pod's usage is given back", func() (bool, error) {
		_, err := pods.Create(ctx, testPod("c"), metav1.CreateOptions{})
		return err == nil, err
	})
	waitFor(t, "usage after replenishment", quotaShows(map[corev1.ResourceName]string{"pods": "2", "requests.cpu": "200m"}))

	// A pod that finished uses no "pods" or compute quota any more.
	b, err := pods.Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a succeeded pod to stop counting", quotaShows(map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "100m"}))
	if _, err := pods.Create(ctx, testPod("d"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod after another finished: %v", err)
	}

	// A pod that gets an active deadline enters the Terminating scope:
	// the controller recounts the Terminating quota at once (upstream's
	// update filter), whether or not admission charged the update (here
	// it does not: it evaluates pod updates of pods/resize only).
	term := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "terminating"}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}}}
	if _, err := quotas.Create(ctx, term, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cached := factory.Core().V1().ResourceQuotas().Lister().ResourceQuotas(ns)
	waitFor(t, "the Terminating quota's status in the controller's cache", func() (bool, error) {
		q, err := cached.Get("terminating")
		if err != nil {
			return false, err
		}
		return used(q, corev1.ResourcePods) == "0", fmt.Errorf("cached pods used %s", used(q, corev1.ResourcePods))
	})
	d, err := pods.Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.ActiveDeadlineSeconds = new(int64(3600))
	if _, err := pods.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Terminating quota to count the pod with a deadline", func() (bool, error) {
		q, err := quotas.Get(ctx, "terminating", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return used(q, corev1.ResourcePods) == "1", fmt.Errorf("pods used %s", used(q, corev1.ResourcePods))
	})

	// Object counts are given back too.
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a second configmap against count/configmaps=1: %v, want Forbidden", err)
	}
	if err := cms.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a configmap create to succeed after the other was deleted", func() (bool, error) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{})
		return err == nil, err
	})

	// A spec change is recomputed: status.hard follows spec.hard, and a
	// new resource gets its usage counted.
	cur, err := quotas.Get(ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5")
	cur.Spec.Hard["count/pods"] = resource.MustParse("10")
	if _, err := quotas.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "status.hard to follow spec.hard", func() (bool, error) {
		q, err := quotas.Get(ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h := q.Status.Hard[corev1.ResourcePods]
		if h.String() != "5" {
			return false, errors.New("status.hard pods is " + h.String())
		}
		return quotaShows(map[corev1.ResourceName]string{"pods": "2", "count/pods": "3"})()
	})

	stop()
	waitFor(t, "the controller's goroutines to exit", func() (bool, error) {
		n := controllerGoroutines()
		return n <= before, fmt.Errorf("%d controller, informer and queue goroutines, %d before the controller started", n, before)
	})
}

// controllerGoroutines counts the goroutines of the controller, its
// informers and its queue (the in-process API server's own goroutines
// come and go with its connections, so a plain count cannot tell).
func controllerGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"resourcequota.(*Controller)", "client-go/tools/cache.", "client-go/util/workqueue.", "client-go/rest/watch.", "k8s.io/apimachinery/pkg/util/wait."} {
			if strings.Contains(g, marker) && !strings.Contains(g, "resourcequota.TestReplenishes") {
				n++
				break
			}
		}
	}
	return n
}
