package etcd3

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// TestEtcdErrorWritesAreNotRetryable: a read etcd failed is unreachable,
// which the API server answers with a ServerTimeout carrying Retry-After; a
// write etcd failed may still commit (a proposal that timed out), so it is
// answered 500 InternalError without Retry-After, as kube-apiserver's, and
// client-go does not send it again (a create sent twice comes back
// AlreadyExists for the caller's own object).
func TestEtcdErrorWritesAreNotRetryable(t *testing.T) {
	s := &Store{}
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		op, verb  string
		err       error
		code      int32
		retry     int32
		unreached bool
	}{
		{"create", endpoints.VerbCreate, rpctypes.ErrTimeout, 500, 0, false},
		{"update", endpoints.VerbUpdate, rpctypes.ErrTimeoutDueToLeaderFail, 500, 0, false},
		{"delete", endpoints.VerbDelete, rpctypes.ErrTimeout, 500, 0, false},
		{"get", endpoints.VerbGet, rpctypes.ErrTimeout, 500, 2, true},
		{"list", endpoints.VerbList, rpctypes.ErrNoLeader, 500, 2, true},
		// The request's own deadline: 504 Timeout, no retry suggested.
		{"create", endpoints.VerbCreate, context.DeadlineExceeded, 504, 0, true},
	} {
		t.Run(tc.op+" "+tc.err.Error(), func(t *testing.T) {
			err := s.etcdError("/pods/ns/a", tc.op, tc.err)
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not wrap %v", err, tc.err)
			}
			var se *storage.Error
			if got := errors.As(err, &se) && se.Code == storage.ErrCodeUnreachable; got != tc.unreached {
				t.Fatalf("%v: unreachable %v, want %v", err, got, tc.unreached)
			}
			st := endpoints.ToStatusError(err, tc.verb, gr, "a").ErrStatus
			var retry int32
			if st.Details != nil {
				retry = st.Details.RetryAfterSeconds
			}
			if st.Code != tc.code || retry != tc.retry {
				t.Fatalf("%v: Status %d (%s) retry %d, want %d retry %d", err, st.Code, st.Reason, retry, tc.code, tc.retry)
			}
		})
	}
}
