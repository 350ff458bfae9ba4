package fieldmanager

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// tweakScalars changes, along struct fields and non-nil pointers, some of
// the scalar fields of the struct v (strings, integers, booleans, times)
// and, now and then, something else (a map, a list, a pointer), so that
// some writes take the owned road and some do not.
func tweakScalars(r *rand.Rand, v reflect.Value, depth int) {
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() || r.Intn(3) != 0 {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		switch {
		case f.Type() == timeType:
			f.Set(reflect.ValueOf(metav1.NewTime(f.Interface().(metav1.Time).Add(time.Duration(r.Intn(3)) * time.Second))))
		case f.Type() == microTimeType:
			f.Set(reflect.ValueOf(metav1.NewMicroTime(f.Interface().(metav1.MicroTime).Add(time.Duration(r.Intn(3)) * time.Microsecond))))
		case f.Kind() == reflect.String:
			f.SetString(f.String() + "x")
		case f.Kind() == reflect.Bool:
			f.SetBool(!f.Bool())
		case f.CanInt():
			f.SetInt(f.Int() + 1)
		case f.Kind() == reflect.Struct && depth < 6:
			tweakScalars(r, f, depth+1)
		case r.Intn(4) == 0:
			f.SetZero()
		}
	}
}

// An update that changes scalar fields records exactly what apimachinery's
// field manager records (times aside: the writer's entry is stamped when,
// and only when, the full field manager stamps it), whether its writer
// alone owns what it changes (the owned road) or not, on random objects of
// every served kind, through the main endpoint and /status.
func TestOwnedUpdateMatchesFieldManager(t *testing.T) {
	const perKind = 40
	owned := 0
	for _, res := range registry.All() {
		gvk := res.GroupVersionKind()
		t.Run(gvk.String(), func(t *testing.T) {
			managers := endpointManagers(t, res)
			r := rand.New(rand.NewSource(int64(len(gvk.String()))))
			f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(23), scheme.Codecs).NilChance(0.3).NumElements(0, 2)
			for sub, m := range managers {
				if m.owned == nil {
					t.Skipf("no owned road for %s", gvk)
				}
				for i := 0; i < perKind; i++ {
					live := res.New()
					f.Fill(live)
					accessor(t, live).SetManagedFields(nil)
					res.Strategy.Default(live)
					writer := "creator"
					created := managers[""].fm.UpdateNoErrors(res.New(), live.DeepCopyObject(), writer)
					accessor(t, live).SetManagedFields(accessor(t, created).GetManagedFields())
					if sub == "status" || i%3 == 0 {
						// A second writer, owning what it changed.
						writer = "second"
						next := live.DeepCopyObject()
						tweakScalars(r, reflect.ValueOf(next).Elem(), 0)
						live = m.fm.UpdateNoErrors(live.DeepCopyObject(), next, writer)
					}
					accessor(t, live).SetUID("uid-1")
					// Entries written in the past, not all in their order,
					// so that stamping one moves it.
					mf := accessor(t, live).GetManagedFields()
					for j, k := range r.Perm(len(mf)) {
						mf[j].Time = &metav1.Time{Time: time.Now().Add(-time.Duration(k+1) * time.Hour).Truncate(time.Second)}
					}
					obj := live.DeepCopyObject()
					tweakScalars(r, reflect.ValueOf(obj).Elem(), 0)
					if i%2 == 0 {
						accessor(t, obj).SetManagedFields(nil)
					}
					if i%5 == 4 {
						writer = "other"
					}
					took := false
					if _, ok := m.owned.update(live.DeepCopyObject(), obj.DeepCopyObject(), writer, m.tc); ok {
						took = true
						owned++
					}
					want := m.fm.UpdateNoErrors(live.DeepCopyObject(), obj.DeepCopyObject(), writer)
					liveCopy := live.DeepCopyObject()
					got := m.Update(live, obj.DeepCopyObject(), writer)
					if !reflect.DeepEqual(live, liveCopy) {
						t.Fatalf("%s: the update changed the live object", sub)
					}
					if !reflect.DeepEqual(timeless(t, got), timeless(t, want)) {
						t.Fatalf("%s (owned road %v): managed fields differ\n got: %v\nwant: %v", sub, took, timeless(t, got), timeless(t, want))
					}
					sameStamps(t, live, got, want)
				}
			}
		})
	}
	t.Logf("%d updates took the owned road", owned)
	if owned < 50 {
		t.Errorf("only %d updates took the owned road", owned)
	}
}

// sameStamps checks that got stamped exactly the entries want stamped:
// each entry's time is live's, or both are new.
func sameStamps(t *testing.T, live, got, want runtime.Object) {
	t.Helper()
	before := map[string]*metav1.Time{}
	for _, e := range accessor(t, live).GetManagedFields() {
		before[e.Manager+"/"+e.Subresource] = e.Time
	}
	stamped := func(obj runtime.Object) map[string]bool {
		out := map[string]bool{}
		for _, e := range accessor(t, obj).GetManagedFields() {
			old, ok := before[e.Manager+"/"+e.Subresource]
			out[e.Manager+"/"+e.Subresource] = !ok || !reflect.DeepEqual(old, e.Time)
		}
		return out
	}
	if g, w := stamped(got), stamped(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("stamped entries %v, want %v", g, w)
	}
}

// A kubelet renewing its node's Lease and an event recorder counting a
// repeated event take the owned road; the same write by another manager,
// or one that also changes what the writer does not own, does not.
func TestOwnedUpdateRoad(t *testing.T) {
	leases := managerFor(t, coordinationv1.SchemeGroupVersion.WithKind("Lease"), "")
	read := &coordinationv1.Lease{}
	readJSON(t, "lease.json", read)
	// As the server stores it (testdata's FieldsV1 is indented).
	lease := leases.fm.UpdateNoErrors(read.DeepCopy(), read.DeepCopy(), "kubeproof").(*coordinationv1.Lease)
	renewed := lease.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: renewed.Spec.RenewTime.Add(10 * time.Second)}
	sameMicro := lease.DeepCopy()
	sameMicro.Spec.RenewTime = &metav1.MicroTime{Time: sameMicro.Spec.RenewTime.Add(100 * time.Nanosecond)}
	relabeled := renewed.DeepCopy()
	relabeled.Labels = map[string]string{"a": "b"}
	holder := renewed.DeepCopy()
	holder.Spec.HolderIdentity = nil

	events := managerFor(t, corev1.SchemeGroupVersion.WithKind("Event"), "")
	ev := &corev1.Event{}
	readJSON(t, "event.json", ev)
	ev.ManagedFields = nil
	created := events.fm.UpdateNoErrors(&corev1.Event{}, ev.DeepCopy(), "kubeproof").(*corev1.Event)
	ev.ManagedFields = created.ManagedFields
	counted := ev.DeepCopy()
	counted.Count++
	counted.LastTimestamp = metav1.NewTime(counted.LastTimestamp.Add(time.Minute))
	counted.ManagedFields = nil

	for _, tt := range []struct {
		name      string
		m         *Manager
		live, obj runtime.Object
		manager   string
		want      bool
	}{
		{"lease renewal", leases, lease, renewed, "kubeproof", true},
		{"lease renewal without managed fields", leases, lease, withoutManaged(renewed), "kubeproof", true},
		{"renewal within the same microsecond", leases, lease, sameMicro, "kubeproof", true},
		{"renewal by another manager", leases, lease, renewed, "someone", false},
		{"renewal that adds labels", leases, lease, relabeled, "kubeproof", false},
		{"renewal that removes a field", leases, lease, holder, "kubeproof", false},
		{"event counted", events, ev, counted, "kubeproof", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.m.owned.update(tt.live.DeepCopyObject(), tt.obj.DeepCopyObject(), tt.manager, tt.m.tc)
			if ok != tt.want {
				t.Fatalf("took the owned road: %v, want %v", ok, tt.want)
			}
			want := tt.m.fm.UpdateNoErrors(tt.live.DeepCopyObject(), tt.obj.DeepCopyObject(), tt.manager)
			if !ok {
				got = tt.m.Update(tt.live.DeepCopyObject(), tt.obj.DeepCopyObject(), tt.manager)
			}
			if !reflect.DeepEqual(timeless(t, got), timeless(t, want)) {
				t.Fatalf("managed fields differ\n got: %v\nwant: %v", timeless(t, got), timeless(t, want))
			}
			sameStamps(t, tt.live, got, want)
		})
	}
}

func withoutManaged(l *coordinationv1.Lease) *coordinationv1.Lease {
	c := l.DeepCopy()
	c.ManagedFields = nil
	return c
}

// Concurrent renewals of many leases share the endpoint's cache of field
// sets safely and each takes the owned road.
func TestOwnedUpdatesConcurrently(t *testing.T) {
	m := managerFor(t, coordinationv1.SchemeGroupVersion.WithKind("Lease"), "")
	read := &coordinationv1.Lease{}
	readJSON(t, "lease.json", read)
	errs := make(chan string, 8)
	for g := range 8 {
		go func() {
			for i := range 50 {
				l := read.DeepCopy()
				l.OwnerReferences[0].UID = types.UID(fmt.Sprintf("node-%d-%d", g, i%10))
				l.ManagedFields = nil
				live := m.fm.UpdateNoErrors(&coordinationv1.Lease{}, l, "kubeproof").(*coordinationv1.Lease)
				live.UID = "uid-1"
				next := live.DeepCopy()
				next.Spec.RenewTime = &metav1.MicroTime{Time: next.Spec.RenewTime.Add(time.Second)}
				if _, ok := m.owned.update(live, next, "kubeproof", m.tc); !ok {
					errs <- "a renewal did not take the owned road"
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
