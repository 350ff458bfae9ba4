package registry

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testResources() []*resource.Resource { return resources(func() time.Time { return testNow }) }

func find(t *testing.T, gv schema.GroupVersion, name string) *resource.Resource {
	t.Helper()
	for _, r := range testResources() {
		if r.GroupVersion == gv && r.Name == name {
			return r
		}
	}
	t.Fatalf("resource %s %s not served", gv, name)
	return nil
}

func TestAllListsEveryResourceOnce(t *testing.T) {
	want := map[string]struct {
		kind       string
		namespaced bool
		short      []string
		all        bool
		status     bool
		scale      bool
	}{
		"v1/componentstatuses": {"ComponentStatus", false, []string{"cs"}, false, false, false},
		"v1/configmaps":        {"ConfigMap", true, []string{"cm"}, false, false, false},
		"v1/events":            {"Event", true, []string{"ev"}, false, false, false},
		"v1/limitranges":       {"LimitRange", true, []string{"limits"}, false, false, false},
		"v1/namespaces":        {"Namespace", false, []string{"ns"}, false, true, false},
		"v1/nodes":             {"Node", false, []string{"no"}, false, true, false},
		"v1/pods":              {"Pod", true, []string{"po"}, true, true, false},
		"v1/resourcequotas":    {"ResourceQuota", true, []string{"quota"}, false, true, false},
		"v1/secrets":           {"Secret", true, nil, false, false, false},
		"v1/serviceaccounts":   {"ServiceAccount", true, []string{"sa"}, false, false, false},
		"v1/services":          {"Service", true, []string{"svc"}, true, true, false},
		"v1/endpoints":         {"Endpoints", true, []string{"ep"}, false, false, false},
		"admissionregistration.k8s.io/v1/mutatingwebhookconfigurations":   {"MutatingWebhookConfiguration", false, nil, false, false, false},
		"admissionregistration.k8s.io/v1/validatingwebhookconfigurations": {"ValidatingWebhookConfiguration", false, nil, false, false, false},
		"apps/v1/deployments":                                         {"Deployment", true, []string{"deploy"}, true, true, true},
		"apps/v1/replicasets":                                         {"ReplicaSet", true, []string{"rs"}, true, true, true},
		"certificates.k8s.io/v1/certificatesigningrequests":           {"CertificateSigningRequest", false, []string{"csr"}, false, true, false},
		"coordination.k8s.io/v1/leases":                               {"Lease", true, nil, false, false, false},
		"discovery.k8s.io/v1/endpointslices":                          {"EndpointSlice", true, nil, false, false, false},
		"rbac.authorization.k8s.io/v1/roles":                          {"Role", true, nil, false, false, false},
		"rbac.authorization.k8s.io/v1/rolebindings":                   {"RoleBinding", true, nil, false, false, false},
		"rbac.authorization.k8s.io/v1/clusterroles":                   {"ClusterRole", false, nil, false, false, false},
		"rbac.authorization.k8s.io/v1/clusterrolebindings":            {"ClusterRoleBinding", false, nil, false, false, false},
		"policy/v1/poddisruptionbudgets":                              {"PodDisruptionBudget", true, []string{"pdb"}, false, true, false},
		"scheduling.k8s.io/v1/priorityclasses":                        {"PriorityClass", false, []string{"pc"}, false, false, false},
		"node.k8s.io/v1/runtimeclasses":                               {"RuntimeClass", false, nil, false, false, false},
		"events.k8s.io/v1/events":                                     {"Event", true, []string{"ev"}, false, false, false},
		"flowcontrol.apiserver.k8s.io/v1/flowschemas":                 {"FlowSchema", false, nil, false, true, false},
		"flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations": {"PriorityLevelConfiguration", false, nil, false, true, false},
	}
	got := All()
	if len(got) != len(want) {
		t.Fatalf("All() has %d resources, want %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for _, r := range got {
		key := r.GroupVersion.String() + "/" + r.Name
		if seen[key] {
			t.Errorf("%s listed twice", key)
		}
		seen[key] = true
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected resource %s", key)
			continue
		}
		if r.Kind != w.kind || r.Namespaced != w.namespaced {
			t.Errorf("%s: kind %s namespaced %v, want %s %v", key, r.Kind, r.Namespaced, w.kind, w.namespaced)
		}
		if !equalStrings(r.ShortNames, w.short) {
			t.Errorf("%s: shortNames %v, want %v", key, r.ShortNames, w.short)
		}
		if gotAll := equalStrings(r.Categories, []string{"all"}); gotAll != w.all {
			t.Errorf("%s: categories %v, want all=%v", key, r.Categories, w.all)
		}
		if (r.Status != nil) != w.status || (r.Scale != nil) != w.scale {
			t.Errorf("%s: status %v scale %v, want %v %v", key, r.Status != nil, r.Scale != nil, w.status, w.scale)
		}
		if (r.GracefulDelete != nil) != (key == "v1/pods") {
			t.Errorf("%s: graceful delete %v", key, r.GracefulDelete != nil)
		}
		if r.SingularName == "" || len(r.Verbs) == 0 || r.Strategy == nil {
			t.Errorf("%s: incomplete discovery data %+v", key, r)
		}
		// New and NewList must be the registered Go types of Kind.
		gvks, _, err := scheme.Scheme.ObjectKinds(r.New())
		if err != nil || gvks[0] != r.GroupVersionKind() {
			t.Errorf("%s: New() is %v (%v), want %v", key, gvks, err, r.GroupVersionKind())
		}
		lgvks, _, err := scheme.Scheme.ObjectKinds(r.NewList())
		if err != nil || lgvks[0] != r.GroupVersion.WithKind(r.Kind+"List") {
			t.Errorf("%s: NewList() is %v (%v)", key, lgvks, err)
		}
		if !meta.IsListType(r.NewList()) {
			t.Errorf("%s: NewList() is not a list", key)
		}
	}
}

func TestNamespacesCannotBeDeletedByCollection(t *testing.T) {
	ns := find(t, schema.GroupVersion{Version: "v1"}, "namespaces")
	for _, v := range ns.Verbs {
		if v == "deletecollection" {
			t.Fatal("namespaces serve deletecollection; Kubernetes does not")
		}
	}
}

// Every strategy handles an empty object and an empty list without
// panicking, and renders a table with one cell per column.
func TestEveryStrategyHandlesEmptyObjects(t *testing.T) {
	ctx := context.Background()
	for _, r := range testResources() {
		t.Run(r.GroupVersion.String()+"/"+r.Name, func(t *testing.T) {
			obj := r.New()
			r.Strategy.Default(obj)
			r.Strategy.PrepareForCreate(ctx, obj)
			_ = r.Strategy.Validate(ctx, obj)
			old := obj.DeepCopyObject()
			r.Strategy.PrepareForUpdate(ctx, obj, old)
			_ = r.Strategy.ValidateUpdate(ctx, obj, old)
			if _, f, err := r.Strategy.GetAttrs(obj); err != nil || f["metadata.name"] != "" {
				t.Errorf("GetAttrs = %v, %v", f, err)
			}
			if r.Status != nil {
				r.Status.PrepareForUpdate(ctx, obj, old)
				_ = r.Status.ValidateUpdate(ctx, obj, old)
			}
			table, err := r.Strategy.ConvertToTable(ctx, obj, nil)
			if err != nil {
				t.Fatalf("ConvertToTable(object): %v", err)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Fatalf("table of one object: %d rows, %+v", len(table.Rows), table)
			}
			if table.Rows[0].Object.Object != obj {
				t.Errorf("row does not carry the object")
			}
			table, err = r.Strategy.ConvertToTable(ctx, r.NewList(), &metav1.TableOptions{NoHeaders: true})
			if err != nil || len(table.Rows) != 0 || table.ColumnDefinitions != nil {
				t.Fatalf("table of empty list without headers: %+v, %v", table, err)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
