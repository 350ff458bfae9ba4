package endpoints

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// retryingStore makes every update take two attempts, as a compare-and-
// swap that lost to a concurrent write does: the first attempt's result is
// dropped and the stored object's resourceVersion moves before the second.
type retryingStore struct {
	*memStore
	attempts int
}

func (s *retryingStore) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, try storage.UpdateFunc) error {
	s.memStore.mu.Lock()
	cur, ok := s.objs[key]
	if ok {
		if _, err := try(cur.DeepCopyObject()); err != nil {
			s.memStore.mu.Unlock()
			return err
		}
		s.attempts++
		s.put(key, cur) // a concurrent write: a new resourceVersion
	}
	s.memStore.mu.Unlock()
	return s.memStore.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, func(old runtime.Object) (runtime.Object, error) {
		s.attempts++
		return try(old)
	})
}

// An update retried after a concurrent write gets the request's object as
// it was sent on every attempt: a PUT without resourceVersion succeeds
// (the first attempt set the stale one on the object it was given), and
// what is stored is what one attempt stores.
func TestUpdateRetryGetsTheRequestAsSent(t *testing.T) {
	for _, path := range []string{"/api/v1/namespaces/default/pods/startup-1/status", "/api/v1/namespaces/default/pods/startup-1"} {
		stored := func(retry bool) *corev1.Pod {
			h, mem := servedHandler(t, "pods")
			store := &retryingStore{memStore: mem}
			if retry {
				h.store = store
			}
			live, body := kubeletStatusWrite(t)
			mem.mu.Lock()
			mem.put("/pods/default/startup-1", live.DeepCopy())
			mem.mu.Unlock()
			if r := do(h, "PUT", path, "application/json", body); r.code != 200 {
				t.Fatalf("PUT %s (retry %v): %d %s", path, retry, r.code, r.body)
			}
			if retry && store.attempts != 2 {
				t.Fatalf("PUT %s: %d attempts, want 2", path, store.attempts)
			}
			mem.mu.Lock()
			defer mem.mu.Unlock()
			got := mem.objs["/pods/default/startup-1"].(*corev1.Pod).DeepCopy()
			got.ResourceVersion = ""
			for i := range got.ManagedFields {
				got.ManagedFields[i].Time = nil
			}
			return got
		}
		once, retried := stored(false), stored(true)
		if !equality.Semantic.DeepEqual(once, retried) {
			t.Fatalf("PUT %s: retried update stored\n%#v\nwant\n%#v", path, retried, once)
		}
	}
}
