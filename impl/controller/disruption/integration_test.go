package disruption_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/drain"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

// refusals counts 429 answers to pods/eviction requests.
type refusals struct {
	rt http.RoundTripper
	n  atomic.Int32
}

func (c *refusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && bytes.HasSuffix([]byte(r.URL.Path), []byte("/eviction")) {
		c.n.Add(1)
	}
	return resp, err
}

// TestDrainBlockedByBudget runs the disruption controller against our API
// server and drains a node the way kubectl drain does (kubectl's drain
// library, evictions through pods/eviction): with minAvailable 2 of 3
// pods, one eviction goes through and the others are refused with 429
// until replacement pods elsewhere are healthy; then the drain finishes.
func TestDrainBlockedByBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	counter := &refusals{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.rt = rt; return counter }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "drain"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No service account controller runs here: the pods' account is made by hand.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runReadyPod := func(name, node string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		runReadyPod(name, "n1")
	}
	two := intstr.FromInt32(2)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Before the controller has observed the budget, evictions are refused
	// (with Retry-After 10 s, which client-go would wait out: no retries).
	err = cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("a").SubResource("eviction").MaxRetries(0).
		Body(&policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}).
		Do(ctx).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction before the budget is observed: %v, want 429", err)
	}

	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := disruption.New(cs, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ctrl.Run(ctx, 2); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}()
	budgetIs := func(allowed, healthy int32) func() (bool, error) {
		return func() (bool, error) {
			p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s := p.Status
			return s.DisruptionsAllowed == allowed && s.CurrentHealthy == healthy && s.DesiredHealthy == 2,
				fmt.Errorf("status allowed %d healthy %d desired %d", s.DisruptionsAllowed, s.CurrentHealthy, s.DesiredHealthy)
		}
	}
	waitFor(t, "one disruption allowed", budgetIs(1, 3))

	node, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	helper := &drain.Helper{Ctx: ctx, Client: cs, Force: true, IgnoreAllDaemonSets: true, GracePeriodSeconds: 0,
		Timeout: time.Minute, EvictErrorRetryDelay: 50 * time.Millisecond, Out: &out, ErrOut: &out}
	if err := drain.RunCordonOrUncordon(helper, node, true); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- drain.RunNodeDrain(helper, "n1") }()

	podsOn := func(node string) (int, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		return len(l.Items), err
	}
	// One pod goes; the other two are refused repeatedly and stay.
	waitFor(t, "one eviction and refusals of the rest", func() (bool, error) {
		n, err := podsOn("n1")
		return n == 2 && counter.n.Load() >= 4, fmt.Errorf("%d pods on n1, %d refusals (%v)", n, counter.n.Load(), err)
	})
	waitFor(t, "the budget to show none allowed", budgetIs(0, 2))
	select {
	case err := <-drained:
		t.Fatalf("drain finished while the budget forbids it: %v\n%s", err, out.String())
	default:
	}
	if n, _ := podsOn("n1"); n != 2 {
		t.Fatalf("%d pods on n1 while the budget allows no disruption, want 2", n)
	}

	// Replacements on n2 become healthy: the drain proceeds one by one.
	runReadyPod("d", "n2")
	waitFor(t, "a second eviction", func() (bool, error) {
		n, err := podsOn("n1")
		return n == 1, fmt.Errorf("%d pods on n1 (%v)", n, err)
	})
	runReadyPod("e", "n2")
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("drain: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("drain did not finish once the budget allowed it\n%s", out.String())
	}
	if n, _ := podsOn("n1"); n != 0 {
		t.Fatalf("%d pods left on n1 after the drain", n)
	}
	waitFor(t, "the budget at its floor", budgetIs(0, 2))
}
