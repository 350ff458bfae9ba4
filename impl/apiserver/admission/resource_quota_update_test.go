package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
)

// writeQuotaStatus writes a quota's status as the resource quota
// controller does (there is none here): status.hard from spec.hard,
// status.used as given and zero for the other names. Admission judges a
// quota by its status alone, as upstream.
func writeQuotaStatus(t *testing.T, core typedcorev1.CoreV1Interface, ns, name string, used corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := core.ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: corev1.ResourceList{}}
		for n := range q.Spec.Hard {
			u, ok := used[n]
			if !ok {
				u = resource.MustParse("0")
			}
			q.Status.Used[n] = u
		}
		_, err = core.ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing the status of quota %s: %v", name, err)
	}
}

// quotaRefused: err is a quota's 403 "exceeded quota" (a probe that the
// quota cache has seen a status; another plugin's 403, such as a service
// account not yet cached, says nothing of it).
func quotaRefused(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// TestQuotaJudgedByStatusThroughTheAPIServer: as upstream's CheckRequest,
// admission judges a quota by the status the quota controller wrote, not
// its spec: a quota with no status yet limits and charges nothing; one
// whose status.hard names a resource of the write's kind without a
// status.used entry refuses it, "status unknown for quota"; a spec.hard
// the controller has not copied to status.hard yet is not enforced.
func TestQuotaJudgedByStatusThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "statusq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	// A configmap quota, once seen by admission, shows the quota cache
	// is up to date.
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0"), "count/configmaps": resource.MustParse("0")}}},
		metav1.CreateOptions{})).must(t, "quota")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/secrets": resource.MustParse("0")}}}, metav1.CreateOptions{})).must(t, "probe quota")
	writeQuotaStatus(t, core, ns, "probe", nil)
	eventually(t, "probe quota seen by admission", func() error {
		if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, dryRun); !quotaRefused(err) {
			return fmt.Errorf("not refused yet: %v", err)
		}
		return nil
	})
	created(core.Pods(ns).Create(ctx, pod("first"), metav1.CreateOptions{})).must(t, "a pod under a quota of 0 pods with no status yet")
	got, err := core.ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Used) != 0 || len(got.Status.Hard) != 0 {
		t.Fatalf("admission wrote the status of a quota the controller has not: %+v", got.Status)
	}

	// The controller has counted configmaps but not pods yet. (Probes
	// are dry runs: a create the quota cache admits before it sees the
	// status would be stored.)
	got.Status = corev1.ResourceQuotaStatus{Hard: got.Spec.Hard.DeepCopy(), Used: corev1.ResourceList{"count/configmaps": resource.MustParse("0")}}
	if _, err := core.ResourceQuotas(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const unknown = `pods "second" is forbidden: status unknown for quota: q, resources: pods`
	eventually(t, "status unknown", func() error {
		if _, err := core.Pods(ns).Create(ctx, pod("second"), dryRun); !apierrors.IsForbidden(err) || err.Error() != unknown {
			return fmt.Errorf("got %v, want 403 %q", err, unknown)
		}
		return nil
	})

	// Counted: the first pod fills the quota; a spec.hard raised but not
	// yet in status.hard is not enforced.
	writeQuotaStatus(t, core, ns, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	got, err = core.ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5")
	if _, err := core.ResourceQuotas(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const exceeded = `pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=0`
	eventually(t, "judged by status.hard", func() error {
		if _, err := core.Pods(ns).Create(ctx, pod("second"), dryRun); !apierrors.IsForbidden(err) || err.Error() != exceeded {
			return fmt.Errorf("got %v, want 403 %q", err, exceeded)
		}
		return nil
	})
	// The controller copies spec.hard: admitted and charged.
	writeQuotaStatus(t, core, ns, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	eventually(t, "admitted once status.hard is raised", func() error {
		_, err := core.Pods(ns).Create(ctx, pod("second"), dryRun)
		return err
	})
	created(core.Pods(ns).Create(ctx, pod("second"), metav1.CreateOptions{})).must(t, "a pod within status.hard")
	got, err = core.ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used[corev1.ResourcePods]; u.Value() != 2 {
		t.Fatalf("status.used.pods = %s, want 2", u.String())
	}
}

// TestQuotaOnServiceWritesThroughTheAPIServer: as upstream's service
// quota evaluator, a service counts services.loadbalancers (type
// LoadBalancer) and services.nodeports (its ports, when NodePort or
// LoadBalancer), on create and on update: an update is charged what it
// adds over the stored service (a type change to LoadBalancer or
// NodePort), and usage that does not grow (zero) is never checked.
func TestQuotaOnServiceWritesThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "svcq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "svc"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "svc", nil)
	svc := func(name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Type: typ, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		}}
	}
	eventually(t, "quota seen by admission", func() error {
		if _, err := core.Services(ns).Create(ctx, svc("probe", corev1.ServiceTypeClusterIP), dryRun); !quotaRefused(err) {
			return fmt.Errorf("not refused yet: %v", err)
		}
		return nil
	})
	q, err := core.ResourceQuotas(ns).Get(ctx, "svc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard = corev1.ResourceList{
		corev1.ResourceServices:              resource.MustParse("5"),
		corev1.ResourceServicesLoadBalancers: resource.MustParse("1"),
		corev1.ResourceServicesNodePorts:     resource.MustParse("2"),
	}
	if _, err := core.ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeQuotaStatus(t, core, ns, "svc", nil)

	created(core.Services(ns).Create(ctx, svc("a", corev1.ServiceTypeClusterIP), metav1.CreateOptions{})).must(t, "ClusterIP service a")
	created(core.Services(ns).Create(ctx, svc("lb1", corev1.ServiceTypeLoadBalancer), metav1.CreateOptions{})).must(t, "LoadBalancer service lb1")
	_, err = core.Services(ns).Create(ctx, svc("lb2", corev1.ServiceTypeLoadBalancer), metav1.CreateOptions{})
	wantStatus(t, err, 403, `services "lb2" is forbidden: exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1`)

	// ClusterIP to NodePort: one more node port (2 of 2).
	update := func(name string, typ corev1.ServiceType) error {
		cur, err := core.Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Type = typ
		_, err = core.Services(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	if err := update("a", corev1.ServiceTypeNodePort); err != nil {
		t.Fatalf("ClusterIP to NodePort within quota: %v", err)
	}
	_, err = core.Services(ns).Create(ctx, svc("np", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	wantStatus(t, err, 403, `services "np" is forbidden: exceeded quota: svc, requested: services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=2`)
	// NodePort to LoadBalancer keeps its node port: only the load
	// balancer is requested, and refused.
	wantStatus(t, update("a", corev1.ServiceTypeLoadBalancer), 403,
		`services "a" is forbidden: exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1`)

	got, err := core.ResourceQuotas(ns).Get(ctx, "svc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[corev1.ResourceName]int64{corev1.ResourceServices: 2, corev1.ResourceServicesLoadBalancers: 1, corev1.ResourceServicesNodePorts: 2} {
		if u := got.Status.Used[n]; u.Value() != want {
			t.Errorf("status.used[%s] = %s, want %d", n, u.String(), want)
		}
	}

	// A quota lowered below its usage refuses only what adds to it: a
	// ClusterIP service uses no load balancer and no node port.
	got.Spec.Hard[corev1.ResourceServicesLoadBalancers] = resource.MustParse("0")
	if _, err := core.ResourceQuotas(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeQuotaStatus(t, core, ns, "svc", got.Status.Used)
	created(core.Services(ns).Create(ctx, svc("c", corev1.ServiceTypeClusterIP), metav1.CreateOptions{})).must(t, "ClusterIP service c under a lowered load balancer quota")
}

// TestQuotaOnPodScopeChangeThroughTheAPIServer: upstream's pod quota
// evaluator handles pod creates, pods/resize updates and a plain update
// that moves a pod into or out of the Terminating scope
// (activeDeadlineSeconds set or removed; since 1.33): such an update into
// a full Terminating quota is refused with the quota's 403, and a plain
// update within the scope is not evaluated.
func TestQuotaOnPodScopeChangeThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "podq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "terminating"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "terminating", nil)
	pod := func(name string, deadline *int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			ActiveDeadlineSeconds: deadline, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	deadline := int64(30)
	eventually(t, "quota seen by admission", func() error {
		if _, err := core.Pods(ns).Create(ctx, pod("probe", &deadline), dryRun); !quotaRefused(err) {
			return fmt.Errorf("not refused yet: %v", err)
		}
		return nil
	})
	p := created(core.Pods(ns).Create(ctx, pod("p", nil), metav1.CreateOptions{})).must(t, "pod outside the Terminating scope")
	p.Labels = map[string]string{"app": "p"}
	p = created(core.Pods(ns).Update(ctx, p, metav1.UpdateOptions{})).must(t, "a label update, scope unchanged")
	p.Spec.ActiveDeadlineSeconds = &deadline
	_, err := core.Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
	const want = `pods "p" is forbidden: exceeded quota: terminating, requested: pods=1, used: pods=0, limited: pods=0`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("an update setting activeDeadlineSeconds into a full Terminating quota: %v, want 403 %q", err, want)
	}
	got, err := core.ResourceQuotas(ns).Get(ctx, "terminating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used[corev1.ResourcePods]; u.Value() != 0 {
		t.Fatalf("status.used.pods = %s after a refused pod update, want 0", u.String())
	}
}

// TestQuotaIgnoresEventsThroughTheAPIServer: events are ignored by
// upstream's quota (DefaultIgnoredResources): a count/events quota never
// refuses or charges an event.
func TestQuotaIgnoresEventsThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "eventq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "objects"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/events": resource.MustParse("0"), "count/configmaps": resource.MustParse("0")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "objects", nil)
	eventually(t, "quota seen by admission", func() error {
		if _, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun); !quotaRefused(err) {
			return fmt.Errorf("not refused yet: %v", err)
		}
		return nil
	})
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"},
		Reason: "Test", Message: "m", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "test"}}
	created(core.Events(ns).Create(ctx, ev, metav1.CreateOptions{})).must(t, "event under a count/events quota of 0")
	got, err := core.ResourceQuotas(ns).Get(ctx, "objects", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := got.Status.Used["count/events"]; ok && u.Value() != 0 {
		t.Fatalf("status.used[count/events] = %s, want 0", u.String())
	}
}
