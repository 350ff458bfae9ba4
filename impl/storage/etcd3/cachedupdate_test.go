package etcd3_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// TestGuaranteedUpdateFrom starts updates from a cached object, current or
// stale, as the watch cache hands them over: every case must end as an
// update from a quorum read would (the result computed from the current
// object, no write when nothing changes), the stale object costing only
// extra attempts.
func TestGuaranteedUpdateFrom(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: storagetest.ConfigMaps()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// setup stores v0 and then v1 at key, and returns the object as stored
	// at each revision.
	setup := func(t *testing.T, name string) (key string, stale, current *corev1.ConfigMap) {
		t.Helper()
		key = "/configmaps/ns/" + name
		stale = &corev1.ConfigMap{}
		in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-1"}, Data: map[string]string{"v": "0"}}
		if err := s.Create(ctx, key, in, stale); err != nil {
			t.Fatal(err)
		}
		current = &corev1.ConfigMap{}
		if err := s.GuaranteedUpdate(ctx, key, current, false, nil, set("1")); err != nil {
			t.Fatal(err)
		}
		return key, stale, current
	}
	revision := func(t *testing.T) int64 {
		t.Helper()
		resp, err := etcd.Client().Get(ctx, "/registry/none")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	errStale := errors.New("computed from v0")

	tests := []struct {
		name   string
		cached func(stale, current *corev1.ConfigMap) *corev1.ConfigMap
		// precondition on the current object's resourceVersion.
		precondition bool
		update       func(seen *[]string) storage.UpdateFunc
		wantSeen     string
		wantData     string
		wantErr      error
		wantWrite    bool
	}{{
		name:   "current cached object",
		cached: func(_, cur *corev1.ConfigMap) *corev1.ConfigMap { return cur },
		update: record(set("2")), wantSeen: "1", wantData: "2", wantWrite: true,
	}, {
		name:   "stale: the failed CAS retries on the current object",
		cached: func(stale, _ *corev1.ConfigMap) *corev1.ConfigMap { return stale },
		update: record(appendData("+mine")), wantSeen: "0,1", wantData: "1+mine", wantWrite: true,
	}, {
		name:   "stale: an error from the stale object is retried on the current one",
		cached: func(stale, _ *corev1.ConfigMap) *corev1.ConfigMap { return stale },
		update: record(failOn("0", errStale, set("2"))), wantSeen: "0,1", wantData: "2", wantWrite: true,
	}, {
		name:   "current: an error is the update's",
		cached: func(_, cur *corev1.ConfigMap) *corev1.ConfigMap { return cur },
		update: record(failOn("1", errStale, set("2"))), wantSeen: "1", wantErr: errStale,
	}, {
		name:   "current: no change, no write",
		cached: func(_, cur *corev1.ConfigMap) *corev1.ConfigMap { return cur },
		update: record(set("1")), wantSeen: "1", wantData: "1",
	}, {
		name:   "stale: no change to the stale object is a change to the current one",
		cached: func(stale, _ *corev1.ConfigMap) *corev1.ConfigMap { return stale },
		update: record(set("0")), wantSeen: "0,1", wantData: "0", wantWrite: true,
	}, {
		name:         "stale: a precondition failing on the stale object is checked on the current one",
		cached:       func(stale, _ *corev1.ConfigMap) *corev1.ConfigMap { return stale },
		precondition: true,
		update:       record(set("2")), wantSeen: "1", wantData: "2", wantWrite: true,
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, stale, current := setup(t, "cm-"+strconv.Itoa(i))
			var pre *storage.Preconditions
			if tt.precondition {
				rv := current.ResourceVersion
				pre = &storage.Preconditions{ResourceVersion: &rv}
			}
			var seen []string
			before := revision(t)
			out := &corev1.ConfigMap{}
			err := s.GuaranteedUpdateFrom(ctx, key, out, false, pre, tt.update(&seen), tt.cached(stale, current).DeepCopy())
			if got := strings.Join(seen, ","); got != tt.wantSeen {
				t.Errorf("tryUpdate saw %q, want %q", got, tt.wantSeen)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if wrote := revision(t) != before; wrote != tt.wantWrite {
				t.Fatalf("wrote %v, want %v", wrote, tt.wantWrite)
			}
			if tt.wantErr != nil {
				return
			}
			stored := &corev1.ConfigMap{}
			if err := s.Get(ctx, key, storage.GetOptions{}, stored); err != nil {
				t.Fatal(err)
			}
			if out.Data["v"] != tt.wantData || stored.Data["v"] != tt.wantData || out.ResourceVersion != stored.ResourceVersion {
				t.Fatalf("update returned %q at %s, stored %q at %s; want %q", out.Data["v"], out.ResourceVersion,
					stored.Data["v"], stored.ResourceVersion, tt.wantData)
			}
		})
	}
}

// set sets data v.
func set(v string) storage.UpdateFunc {
	return func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap).DeepCopy()
		cm.Data = map[string]string{"v": v}
		return cm, nil
	}
}

// appendData appends suffix to data v.
func appendData(suffix string) storage.UpdateFunc {
	return func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap).DeepCopy()
		cm.Data = map[string]string{"v": cm.Data["v"] + suffix}
		return cm, nil
	}
}

// failOn fails with err when data v is bad, else is next.
func failOn(bad string, err error, next storage.UpdateFunc) storage.UpdateFunc {
	return func(in runtime.Object) (runtime.Object, error) {
		if in.(*corev1.ConfigMap).Data["v"] == bad {
			return nil, err
		}
		return next(in)
	}
}

// record makes an update that notes the data v of each object it is
// called on in seen.
func record(u storage.UpdateFunc) func(seen *[]string) storage.UpdateFunc {
	return func(seen *[]string) storage.UpdateFunc {
		return func(in runtime.Object) (runtime.Object, error) {
			*seen = append(*seen, in.(*corev1.ConfigMap).Data["v"])
			return u(in)
		}
	}
}
