package resourcequota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func hardList(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// synced is a quota whose status the controller wrote: status.hard is
// spec.hard and every name has usage.
func synced(name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	used := corev1.ResourceList{}
	for n := range hard {
		used[n] = resource.MustParse("0")
	}
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: used}}
}

// TestRecountOnUpdateAsUpstream: as upstream's quota informer update
// handler, only a change of spec.hard is recounted at once.
func TestRecountOnUpdateAsUpstream(t *testing.T) {
	base := synced("q", hardList("pods", "3", "requests.cpu", "1"))
	for _, tc := range []struct {
		name   string
		change func(q *corev1.ResourceQuota)
		want   bool
	}{
		{"nothing", func(*corev1.ResourceQuota) {}, false},
		{"a hard limit raised", func(q *corev1.ResourceQuota) { q.Spec.Hard["pods"] = resource.MustParse("4") }, true},
		{"a hard limit added", func(q *corev1.ResourceQuota) { q.Spec.Hard["secrets"] = resource.MustParse("4") }, true},
		{"a hard limit removed", func(q *corev1.ResourceQuota) { delete(q.Spec.Hard, "pods") }, true},
		{"the same quantity written otherwise", func(q *corev1.ResourceQuota) { q.Spec.Hard["requests.cpu"] = resource.MustParse("1000m") }, false},
		{"status.used missing a name", func(q *corev1.ResourceQuota) { delete(q.Status.Used, "pods") }, false},
		{"status.hard behind spec.hard", func(q *corev1.ResourceQuota) { q.Status.Hard["pods"] = resource.MustParse("1") }, false},
		{"a label", func(q *corev1.ResourceQuota) { q.Labels = map[string]string{"a": "b"} }, false},
		{"scopes", func(q *corev1.ResourceQuota) {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, false},
	} {
		cur := base.DeepCopy()
		tc.change(cur)
		if got := RecountOnUpdate(base, cur); got != tc.want {
			t.Errorf("%s: recount %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMissingUsageAsUpstream: a quota goes to the missing usage queue when
// its status.hard is not its spec.hard or a name the controller counts
// has no usage, as upstream's addQuota.
func TestMissingUsageAsUpstream(t *testing.T) {
	counts := func(n corev1.ResourceName) bool { return n != "count/widgets.example.com" }
	for _, tc := range []struct {
		name string
		q    func() *corev1.ResourceQuota
		want bool
	}{
		{"synced", func() *corev1.ResourceQuota { return synced("q", hardList("pods", "3")) }, false},
		{"no status", func() *corev1.ResourceQuota {
			q := synced("q", hardList("pods", "3"))
			q.Status = corev1.ResourceQuotaStatus{}
			return q
		}, true},
		{"status.hard behind", func() *corev1.ResourceQuota {
			q := synced("q", hardList("pods", "3"))
			q.Spec.Hard["pods"] = resource.MustParse("4")
			return q
		}, true},
		{"a counted name without usage", func() *corev1.ResourceQuota {
			q := synced("q", hardList("pods", "3", "secrets", "1"))
			delete(q.Status.Used, "secrets")
			return q
		}, true},
		{"a name not counted without usage", func() *corev1.ResourceQuota {
			q := synced("q", hardList("pods", "3", "count/widgets.example.com", "1"))
			delete(q.Status.Used, "count/widgets.example.com")
			return q
		}, false},
	} {
		if got := MissingUsage(tc.q(), counts); got != tc.want {
			t.Errorf("%s: missing usage %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestQuotaEventsEnqueueAsUpstream: the quota informer's handlers. An
// added quota goes to the missing usage queue when its status lacks what
// it should show, else to the main queue; an update is enqueued only when
// spec.hard changed — a status write that leaves usage missing or
// status.hard behind is not (it was: any spec change, or a status not
// following spec.hard, was recounted at once); a deleted quota is
// enqueued (its sync finds it gone).
func TestQuotaEventsEnqueueAsUpstream(t *testing.T) {
	cs := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(cs, factory, []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithResource("secrets")}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	defer c.missingUsage.ShutDown()
	lens := func() [2]int { return [2]int{c.queue.Len(), c.missingUsage.Len()} }
	step := func(what string, do func(), want [2]int) {
		t.Helper()
		before := lens()
		do()
		after := lens()
		if got := [2]int{after[0] - before[0], after[1] - before[1]}; got != want {
			t.Errorf("%s: enqueued %v (main, missing usage), want %v", what, got, want)
		}
	}
	fresh := synced("fresh", hardList("pods", "3"))
	fresh.Status = corev1.ResourceQuotaStatus{}
	step("a new quota without status", func() { c.addQuota(fresh) }, [2]int{0, 1})
	step("a synced quota (informer start)", func() { c.addQuota(synced("a", hardList("pods", "3"))) }, [2]int{1, 0})

	old := synced("b", hardList("pods", "3", "secrets", "2"))
	statusOnly := old.DeepCopy()
	delete(statusOnly.Status.Used, "secrets")
	statusOnly.Status.Hard["pods"] = resource.MustParse("1")
	step("a status write leaving usage missing and status.hard behind", func() { c.updateQuota(old, statusOnly) }, [2]int{0, 0})
	scoped := old.DeepCopy()
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}
	step("a spec change other than spec.hard", func() { c.updateQuota(old, scoped) }, [2]int{0, 0})
	raised := synced("c", hardList("pods", "3"))
	raisedCur := raised.DeepCopy()
	raisedCur.Spec.Hard["pods"] = resource.MustParse("5")
	step("spec.hard raised", func() { c.updateQuota(raised, raisedCur) }, [2]int{0, 1})
	step("a deleted quota", func() { c.enqueueDeleted(synced("d", hardList("pods", "3"))) }, [2]int{1, 0})
}
