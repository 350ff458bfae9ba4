package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// memQuotas is a QuotaStore in memory with a real compare-and-swap.
type memQuotas struct {
	mu      sync.Mutex
	quotas  map[string]*corev1.ResourceQuota
	updates int
}

func (m *memQuotas) List(context.Context, string) ([]corev1.ResourceQuota, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []corev1.ResourceQuota
	for _, q := range m.quotas {
		out = append(out, *q.DeepCopy())
	}
	return out, nil
}

func (m *memQuotas) Update(_ context.Context, _, name string, try func(*corev1.ResourceQuota) (*corev1.ResourceQuota, error)) error {
	for {
		m.mu.Lock()
		cur := m.quotas[name].DeepCopy()
		m.mu.Unlock()
		next, err := try(cur)
		if err != nil {
			return err
		}
		m.mu.Lock()
		if m.quotas[name].ResourceVersion == cur.ResourceVersion {
			next.ResourceVersion = fmt.Sprint(m.updates + 1)
			m.updates++
			m.quotas[name] = next
			m.mu.Unlock()
			return nil
		}
		m.mu.Unlock()
	}
}

func quota(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if used != nil {
		q.Status = corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: used}
	}
	return q
}

func TestResourceQuotaDecisions(t *testing.T) {
	small := newPod("p", container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "64Mi")))
	podLevel := newPod("p")
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("memory", "64Mi"), Limits: rl("cpu", "500m")}
	tests := []struct {
		name     string
		quota    *corev1.ResourceQuota
		pod      *corev1.Pod
		want     string
		wantUsed corev1.ResourceList
	}{
		{"pods counted", quota("q", rl("pods", "2"), rl("pods", "1")), small, "", rl("pods", "2")},
		{"pods exceeded", quota("q", rl("pods", "1"), rl("pods", "1")), small,
			`pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`, rl("pods", "1")},
		{"compute charged", quota("q", rl("requests.cpu", "1", "limits.memory", "1Gi", "count/pods", "5"), rl("requests.cpu", "500m", "limits.memory", "0", "count/pods", "0")), small,
			"", rl("requests.cpu", "600m", "limits.memory", "64Mi", "count/pods", "1")},
		{"cpu exceeded", quota("q", rl("requests.cpu", "1", "limits.cpu", "1"), rl("requests.cpu", "950m", "limits.cpu", "900m")), small,
			"exceeded quota: q, requested: limits.cpu=200m,requests.cpu=100m, used: limits.cpu=900m,requests.cpu=950m, limited: limits.cpu=1,requests.cpu=1", nil},
		{"must specify", quota("q", rl("requests.memory", "1Gi", "limits.cpu", "1"), rl("requests.memory", "0", "limits.cpu", "0")), newPod("p"),
			"failed quota: q: must specify limits.cpu for: c; requests.memory for: c", nil},
		// As upstream's pod evaluator: with pod-level resources no
		// container need say, and the pod-level values are charged.
		{"pod-level resources: nothing to specify", quota("q", rl("requests.memory", "1Gi", "limits.cpu", "1"), rl("requests.memory", "0", "limits.cpu", "0")), podLevel,
			"", rl("requests.memory", "64Mi", "limits.cpu", "500m")},
		{"unrelated quota", quota("q", rl("count/configmaps", "0"), rl("count/configmaps", "0")), small, "", rl("count/configmaps", "0")},
		// As upstream's CheckRequest, a quota is judged by its status,
		// what the quota controller last wrote.
		{"no status yet: limits nothing, charged nothing", quota("q", rl("pods", "0"), nil), small, "", nil},
		{"status.hard judged, not spec.hard", func() *corev1.ResourceQuota {
			q := quota("q", rl("pods", "5"), rl("pods", "1"))
			q.Status.Hard = rl("pods", "1")
			return q
		}(), small, `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`, rl("pods", "1")},
		{"spec.hard changed, status.hard not yet: constraints and charge by status.hard", func() *corev1.ResourceQuota {
			q := quota("q", rl("pods", "1"), rl("pods", "0"))
			q.Spec.Hard = rl("pods", "1", "requests.memory", "1Gi")
			return q
		}(), newPod("p"), "", rl("pods", "1")},
		{"status unknown: a restricted resource without usage", func() *corev1.ResourceQuota {
			q := quota("q", rl("pods", "5", "requests.cpu", "2", "count/configmaps", "3"), rl("pods", "1"))
			return q
		}(), small, `pods "p" is forbidden: status unknown for quota: q, resources: pods,requests.cpu`, rl("pods", "1")},
		{"status unknown only for the write's kind", quota("q", rl("pods", "5", "count/configmaps", "3"), rl("pods", "1")), small, "", rl("pods", "2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{"q": tt.quota}}
			err := (&ResourceQuota{Store: store}).Validate(context.Background(), podCreate(tt.pod.DeepCopy()))
			wantForbidden(t, err, tt.want)
			if !apiequality.Semantic.DeepEqual(store.quotas["q"].Status.Used, tt.wantUsed) && (tt.wantUsed != nil || tt.want == "") {
				t.Fatalf("used %v, want %v", store.quotas["q"].Status.Used, tt.wantUsed)
			}
			if tt.want != "" && store.updates != 0 {
				t.Fatalf("a refused create was charged")
			}
			if h := store.quotas["q"].Status.Hard; !apiequality.Semantic.DeepEqual(h, tt.quota.Status.Hard) {
				t.Fatalf("status.hard %v changed by admission (was %v): only the controller writes it", h, tt.quota.Status.Hard)
			}
		})
	}
}

func TestResourceQuotaDryRunAndRefund(t *testing.T) {
	store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{
		"a": quota("a", rl("pods", "5"), rl("pods", "0")),
		"b": quota("b", rl("pods", "1"), rl("pods", "1")),
	}}
	p := &ResourceQuota{Store: store}
	a := podCreate(newPod("p"))
	a.DryRun = true
	wantForbidden(t, p.Validate(context.Background(), a), "exceeded quota: b")
	delete(store.quotas, "b")
	wantForbidden(t, p.Validate(context.Background(), a), "")
	if u := store.quotas["a"].Status.Used["pods"]; u.Value() != 0 {
		t.Fatalf("dry run charged the quota: %v", u.String())
	}

	// A dry run that b refuses gives nothing back to a, which it never
	// charged: a keeps its usage.
	store.quotas["a"] = quota("a", rl("pods", "5"), rl("pods", "2"))
	store.quotas["b"] = quota("b", rl("pods", "1"), rl("pods", "1"))
	wantForbidden(t, p.Validate(context.Background(), a), "exceeded quota: b")
	if u := store.quotas["a"].Status.Used["pods"]; u.Value() != 2 {
		t.Fatalf("a refused dry run took a charge back it never made: used %v, want 2", u.String())
	}
	store.quotas["a"] = quota("a", rl("pods", "5"), rl("pods", "0"))

	// quota a is charged, then b refuses: a gets its charge back.
	wantForbidden(t, p.Validate(context.Background(), podCreate(newPod("p"))), "exceeded quota: b")
	if u := store.quotas["a"].Status.Used["pods"]; u.Value() != 0 {
		t.Fatalf("refused create left a charge on quota a: %v", u.String())
	}
}

func TestResourceQuotaScopes(t *testing.T) {
	bestEffort := newPod("p")
	burstable := newPod("p", container("a", rl("cpu", "1"), nil))
	terminating := newPod("p")
	terminating.Spec.ActiveDeadlineSeconds = ptr(int64(10))
	critical := newPod("p")
	critical.Spec.PriorityClassName = "high"
	tests := []struct {
		name   string
		scopes []corev1.ResourceQuotaScope
		sel    *corev1.ScopeSelector
		pod    *corev1.Pod
		covers bool
	}{
		{"BestEffort covers best effort", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, nil, bestEffort, true},
		{"BestEffort skips burstable", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, nil, burstable, false},
		{"NotBestEffort covers burstable", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}, nil, burstable, true},
		{"Terminating", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, nil, terminating, true},
		{"NotTerminating skips terminating", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, nil, terminating, false},
		{"PriorityClass In", nil, &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}, critical, true},
		{"PriorityClass In other", nil, &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}, bestEffort, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := quota("q", rl("pods", "1"), nil)
			q.Spec.Scopes, q.Spec.ScopeSelector = tt.scopes, tt.sel
			if got := quotaeval.Covers(q, podResource, tt.pod); got != tt.covers {
				t.Fatalf("covers %v, want %v", got, tt.covers)
			}
		})
	}
}

func TestResourceQuotaStoreErrors(t *testing.T) {
	boom := errors.New("etcd down")
	p := &ResourceQuota{Store: failingQuotas{boom}}
	err := p.Validate(context.Background(), podCreate(newPod("p")))
	if !errors.Is(err, boom) || apierrors.IsForbidden(err) {
		t.Fatalf("a storage failure must surface as itself, got %v", err)
	}
}

type failingQuotas struct{ err error }

func (f failingQuotas) List(context.Context, string) ([]corev1.ResourceQuota, error) {
	return nil, f.err
}
func (f failingQuotas) Update(context.Context, string, string, func(*corev1.ResourceQuota) (*corev1.ResourceQuota, error)) error {
	return f.err
}

// TestQuotaHandlesAsUpstream: the writes upstream's quota evaluators
// handle — pods on create, on an update into or out of the Terminating
// scope and on a pods/resize update; services on create and update of any
// subresource; events never; other resources on create, not of a
// subresource.
func TestQuotaHandlesAsUpstream(t *testing.T) {
	svc, ev := corev1.Resource("services"), corev1.Resource("events")
	deadline, negative := int64(30), int64(-1)
	plain := &corev1.Pod{}
	terminating := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline}}
	longer := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &negative}}
	for _, tc := range []struct {
		gr       schema.GroupResource
		op       Operation
		sub      string
		obj, old runtime.Object
		want     bool
	}{
		{podResource, Create, "", plain, nil, true},
		{podResource, Update, "", plain, plain, false},
		{podResource, Update, "", terminating, plain, true},
		{podResource, Update, "", plain, terminating, true},
		{podResource, Update, "", terminating, terminating, false},
		{podResource, Update, "", longer, plain, false},
		{podResource, Update, "status", terminating, plain, false},
		{podResource, Update, "resize", nil, nil, true},
		{podResource, Update, "ephemeralcontainers", nil, nil, false},
		{podResource, Create, "binding", nil, nil, false},
		{svc, Create, "", nil, nil, true},
		{svc, Update, "", nil, nil, true},
		{svc, Update, "status", nil, nil, true},
		{svc, Delete, "", nil, nil, false},
		{ev, Create, "", nil, nil, false},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, Create, "", nil, nil, false},
		{corev1.Resource("configmaps"), Create, "", nil, nil, true},
		{corev1.Resource("configmaps"), Update, "", nil, nil, false},
		// A TokenRequest (serviceaccounts/token) creates no service account.
		{corev1.Resource("serviceaccounts"), Create, "token", nil, nil, false},
		{corev1.Resource("serviceaccounts"), Create, "", nil, nil, true},
	} {
		if got := quotaHandles(tc.gr, tc.op, tc.sub, tc.obj, tc.old); got != tc.want {
			t.Errorf("%s %s/%s: handles %v, want %v", tc.op, tc.gr, tc.sub, got, tc.want)
		}
	}
}

// TestQuotaChargesOnUpdate: as upstream's CheckRequest on an update, a
// quota that covered the stored object too is charged the growth only
// (never a negative), one the object enters (a resized pod that leaves
// BestEffort, an update that sets activeDeadlineSeconds) all of its
// usage, and one it leaves nothing; a status write is charged without
// being refused.
func TestQuotaChargesOnUpdate(t *testing.T) {
	small := newPod("p", container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "100m", "memory", "64Mi")))
	small.ResourceVersion = "5"
	bigger := small.DeepCopy()
	bigger.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "300m", "memory", "32Mi"), Limits: rl("cpu", "300m", "memory", "32Mi")}
	bestEffort := newPod("p")
	bestEffort.ResourceVersion = "5"
	terminating := bigger.DeepCopy()
	terminating.Spec.ActiveDeadlineSeconds = ptr(int64(30))
	unused := func() corev1.ResourceList { return rl("pods", "0", "requests.cpu", "0", "requests.memory", "0") }
	scoped := func(name string, s corev1.ResourceQuotaScope) corev1.ResourceQuota {
		q := quota(name, rl("pods", "10", "requests.cpu", "1", "requests.memory", "1Gi"), unused())
		q.Spec.Scopes = []corev1.ResourceQuotaScope{s}
		return *q
	}
	quotas := []corev1.ResourceQuota{
		*quota("all", rl("pods", "10", "requests.cpu", "1", "requests.memory", "1Gi"), unused()),
		scoped("besteffort", corev1.ResourceQuotaScopeBestEffort),
		scoped("notbesteffort", corev1.ResourceQuotaScopeNotBestEffort),
		scoped("terminating", corev1.ResourceQuotaScopeTerminating),
	}
	for _, tc := range []struct {
		name     string
		obj, old *corev1.Pod
		want     map[string]corev1.ResourceList
	}{
		{"resized up: the growth, memory going down is no charge", bigger, small,
			map[string]corev1.ResourceList{"all": rl("requests.cpu", "200m"), "notbesteffort": rl("requests.cpu", "200m")}},
		{"cpu down, memory up: the memory growth", small, bigger,
			map[string]corev1.ResourceList{"all": rl("requests.memory", "32Mi"), "notbesteffort": rl("requests.memory", "32Mi")}},
		{"unchanged: nothing", small, small, map[string]corev1.ResourceList{}},
		{"leaves BestEffort: all of it to the quota it enters", bigger, bestEffort,
			map[string]corev1.ResourceList{"all": rl("requests.cpu", "300m", "requests.memory", "32Mi"),
				"notbesteffort": rl("pods", "1", "requests.cpu", "300m", "requests.memory", "32Mi")}},
		{"enters Terminating", terminating, bigger,
			map[string]corev1.ResourceList{"terminating": rl("pods", "1", "requests.cpu", "300m", "requests.memory", "32Mi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			charges, err := quotaCharges(quotas, podResource, Update, tc.obj, tc.old, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]corev1.ResourceList{}
			for _, c := range charges {
				got[c.quota] = c.delta
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("charges %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := quotaCharges(quotas, podResource, Update, small, nil, time.Now()); err == nil || err.Error() != "unable to get previous usage since prior version of object was not found" {
		t.Fatalf("update without the stored object: %v", err)
	}

	// A status write is charged, never refused; the same growth on the
	// main resource is refused.
	full := quota("q", rl("services.loadbalancers", "1"), rl("services.loadbalancers", "1"))
	clusterIP := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "3"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	lb := clusterIP.DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	for sub, want := range map[string]string{"": "exceeded quota: q, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1", "status": ""} {
		store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{"q": full.DeepCopy()}}
		a := &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("services"), Subresource: sub,
			Namespace: "ns", Name: "s", Object: lb.DeepCopy(), OldObject: clusterIP.DeepCopy()}
		wantForbidden(t, (&ResourceQuota{Store: store}).Validate(context.Background(), a), want)
		if u := store.quotas["q"].Status.Used["services.loadbalancers"]; want == "" && u.Value() != 2 {
			t.Errorf("status write: used %s, want 2", u.String())
		}
	}
}
