package controllermanager_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond)) }()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readyEveryPod stands in for kubelets: it marks every pod Running and Ready.
func readyEveryPod(ctx context.Context, cs kubernetes.Interface, ns string) {
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
					continue
				}
				p.Status.Phase = corev1.PodRunning
				now := metav1.Now()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func newDeployment(name string, replicas int32) *appsv1.Deployment {
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
		},
	}
}

// TestAgainstTheAPIServer runs the controller manager against kubeproof's
// API server on embedded etcd: create, scale, roll out, and delete a
// Deployment with each propagation policy.
func TestAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	restCfg := rest.CopyConfig(c.AdminConfig)
	// Standing in for the controller manager's: no warnings logged.
	controllermanager.QuietWarnings(restCfg)
	restCfg.QPS, restCfg.Burst = 1000, 2000 // the default 5 QPS would dominate every wait
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = true // through a Lease in kube-system, as kube-controller-manager
	cfg.Election.Identity = "integration-test"
	cfg.Controllers = []string{"*", "-" + controllermanager.NodeLifecycle}
	cfg.RootCA = restCfg.CAData
	if len(cfg.RootCA) == 0 {
		t.Fatal("the admin config carries no CA bundle to publish")
	}
	var wg sync.WaitGroup
	wg.Add(2)
	cmErr := make(chan error, 1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, cs, restCfg, cfg) }()
	go func() { defer wg.Done(); readyEveryPod(ctx, cs, "default") }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	// The service account controller and root CA publisher give every
	// namespace its default ServiceAccount and kube-root-ca.crt.
	eventually(t, "default ServiceAccount and kube-root-ca.crt in default", func() (bool, error) {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cm.Data["ca.crt"] == string(cfg.RootCA), nil
	})
	// The resource quota controller recounts a new quota's usage.
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("100")}}}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "quota usage counted", func() (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		used, ok := q.Status.Used[corev1.ResourceConfigMaps]
		return ok && used.Value() >= 1, nil // at least kube-root-ca.crt
	})
	if err := cs.CoreV1().ResourceQuotas("default").Delete(ctx, "q", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller computes a budget's status.
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "budget status observed", func() (bool, error) {
		b, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return b.Status.ObservedGeneration == b.Generation && b.Generation > 0, nil
	})
	deps := cs.AppsV1().Deployments("default")
	podsOf := func(app string) (int, error) {
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n, nil
	}
	complete := func(name string, replicas int32) func() (bool, error) {
		return func() (bool, error) {
			d, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := d.Status
			n, err := podsOf(name)
			if err != nil {
				return false, err
			}
			return st.ObservedGeneration == d.Generation && st.UpdatedReplicas == replicas && st.Replicas == replicas &&
				st.AvailableReplicas == replicas && int32(n) == replicas, fmt.Errorf("status %+v, %d pods", st, n)
		}
	}

	if _, err := deps.Create(ctx, newDeployment("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the leader-election Lease", func() (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "integration-test", err
	})
	eventually(t, "3 available replicas", complete("web", 3))
	for _, n := range []int32{6, 2} {
		d, _ := deps.Get(ctx, "web", metav1.GetOptions{})
		d.Spec.Replicas = &n
		if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("scaled to %d", n), complete("web", n))
	}

	// Roll out a new image while watching every ReplicaSet change: the
	// replicas never total more than replicas + maxSurge (DEP-1).
	w, err := cs.AppsV1().ReplicaSets("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]int32{}
	maxTotal := int32(0)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			specs[rs.Name] = *rs.Spec.Replicas
			total := int32(0)
			for _, v := range specs {
				total += v
			}
			maxTotal = max(maxTotal, total)
		}
	}()
	d, _ := deps.Get(ctx, "web", metav1.GetOptions{})
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rollout to nginx:2", complete("web", 2))
	w.Stop()
	<-watchDone
	if maxTotal > 3 {
		t.Fatalf("replicas totalled %d during the rollout, more than replicas+maxSurge = 3", maxTotal)
	}
	d, _ = deps.Get(ctx, "web", metav1.GetOptions{})
	if d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Fatalf("revision %q", d.Annotations["deployment.kubernetes.io/revision"])
	}

	// `kubectl rollout undo` copies the revision-1 template back client-side:
	// the old ReplicaSet is reused under revision 3.
	d, _ = deps.Get(ctx, "web", metav1.GetOptions{})
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1"
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "undo to nginx:1", complete("web", 2))
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(rss.Items) != 2 {
		t.Fatalf("after undo: %d replicasets (%v), want 2", len(rss.Items), err)
	}
	if d, _ = deps.Get(ctx, "web", metav1.GetOptions{}); d.Annotations["deployment.kubernetes.io/revision"] != "3" {
		t.Fatalf("revision after undo %q, want 3", d.Annotations["deployment.kubernetes.io/revision"])
	}

	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		name := map[metav1.DeletionPropagation]string{metav1.DeletePropagationBackground: "bg", metav1.DeletePropagationForeground: "fg", metav1.DeletePropagationOrphan: "orphan"}[policy]
		if _, err := deps.Create(ctx, newDeployment(name, 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" available", complete(name, 2))
		p := policy
		if err := deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" deployment gone", func() (bool, error) {
			_, err := deps.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		rsList := func() ([]appsv1.ReplicaSet, error) {
			l, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				return nil, err
			}
			return l.Items, nil
		}
		if policy == metav1.DeletePropagationOrphan {
			rss, err := rsList()
			if err != nil || len(rss) != 1 || len(rss[0].OwnerReferences) != 0 {
				t.Fatalf("orphan: replicasets %+v, %v", rss, err)
			}
			if n, _ := podsOf(name); n != 2 {
				t.Fatalf("orphan: %d pods left, want 2", n)
			}
			continue
		}
		eventually(t, name+" replicasets and pods collected", func() (bool, error) {
			rss, err := rsList()
			if err != nil {
				return false, err
			}
			n, err := podsOf(name)
			return len(rss) == 0 && n == 0, err
		})
	}

	// Deleting a namespace deletes what is in it, then the namespace.
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("the API server did not add the kubernetes finalizer: %v", ns.Spec.Finalizers)
	}
	if _, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dd := newDeployment("inside", 2)
	dd.Namespace = "doomed"
	if _, err := cs.AppsV1().Deployments("doomed").Create(ctx, dd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pods in the doomed namespace", func() (bool, error) {
		l, err := cs.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 2, err
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace doomed gone", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
