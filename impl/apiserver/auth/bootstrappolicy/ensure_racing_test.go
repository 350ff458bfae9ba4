package bootstrappolicy_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
)

// racingClient makes one ClusterRole's writes fail as when other writers
// keep creating, deleting or changing it: fault "appears" answers its
// reads NotFound and its creates AlreadyExists, "vanishes" and
// "conflicts" answer its updates NotFound and Conflict.
type racingClient struct {
	objcachetest.PolicyClient
	name   string
	fault  string
	writes int
}

func (c *racingClient) ours(gr schema.GroupResource, name string) bool {
	return gr.Resource == "clusterroles" && name == c.name
}

func (c *racingClient) Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (runtime.Object, error) {
	if c.fault == "appears" && c.ours(gr, name) {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return c.PolicyClient.Get(ctx, gr, namespace, name)
}

func (c *racingClient) Create(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	if m, err := meta.Accessor(obj); err == nil && c.fault == "appears" && c.ours(gr, m.GetName()) {
		c.writes++
		return apierrors.NewAlreadyExists(gr, m.GetName())
	}
	return c.PolicyClient.Create(ctx, gr, obj)
}

func (c *racingClient) Update(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	if m, err := meta.Accessor(obj); err == nil && c.ours(gr, m.GetName()) {
		switch c.fault {
		case "vanishes":
			c.writes++
			return apierrors.NewNotFound(gr, m.GetName())
		case "conflicts":
			c.writes++
			return apierrors.NewConflict(gr, m.GetName(), nil)
		}
	}
	return c.PolicyClient.Update(ctx, gr, obj)
}

// TestEnsureGivesUpOnARacingObject: as kube-apiserver's reconciliation,
// an object that keeps being created (or deleted) under a create (or an
// update) is decided three times and then logged and left; a write that
// keeps losing to another's (Conflict) is tried again as often as
// client-go's retry.DefaultBackoff allows. The rest of the policy is
// written and Ensure returns. ensureItem used to retry these without
// limit, so Ensure ran until its context ended.
func TestEnsureGivesUpOnARacingObject(t *testing.T) {
	const name = "system:kube-scheduler"
	tests := []struct {
		fault  string
		writes int
	}{
		{fault: "appears", writes: 3},
		{fault: "vanishes", writes: 3},
		{fault: "conflicts", writes: retry.DefaultBackoff.Steps},
	}
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			s := newStores(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			plain := objcachetest.PolicyClient{Stores: s}
			if err := bootstrappolicy.Ensure(ctx, plain); err != nil {
				t.Fatal(err)
			}
			// Trim the role so that Ensure updates it, and another so
			// that the rest of the policy is seen to be written.
			updateClusterRole(t, s, name, func(r *rbacv1.ClusterRole) { r.Rules = r.Rules[1:] })
			updateClusterRole(t, s, "system:volume-scheduler", func(r *rbacv1.ClusterRole) { r.Rules = nil })
			c := &racingClient{PolicyClient: plain, name: name, fault: tc.fault}
			if err := bootstrappolicy.Ensure(ctx, c); err != nil {
				t.Fatalf("Ensure: %v, want the racing object left and the rest written", err)
			}
			if c.writes != tc.writes {
				t.Errorf("the racing object was written %d times, want %d", c.writes, tc.writes)
			}
			vol := getClusterRole(t, s, "system:volume-scheduler")
			if ok, missing := validation.Covers(vol.Rules, defaultClusterRole(t, vol.Name).Rules); !ok {
				t.Errorf("system:volume-scheduler not reconciled: missing %+v", missing)
			}
		})
	}
}
