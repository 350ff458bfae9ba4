package fieldmanager

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/registry"
)

func served(t testing.TB, gvk schema.GroupVersionKind) *resource.Resource {
	t.Helper()
	for _, r := range registry.All() {
		if r.GroupVersionKind() == gvk {
			return r
		}
	}
	t.Fatalf("%s is not served", gvk)
	return nil
}

// endpointManagers is the field managers of res's writable endpoints, by
// subresource: the main endpoint's ("") and, for kinds with a status,
// /status's, each resetting what the other owns as the registry's do.
func endpointManagers(t testing.TB, res *resource.Resource) map[string]*Manager {
	t.Helper()
	gvk := res.GroupVersionKind()
	if res.Status == nil {
		return map[string]*Manager{"": managerFor(t, gvk, "")}
	}
	return map[string]*Manager{
		"":       managerFor(t, gvk, "", "status"),
		"status": managerFor(t, gvk, "status", "spec"),
	}
}

func managerFor(t testing.TB, gvk schema.GroupVersionKind, subresource string, reset ...string) *Manager {
	t.Helper()
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	res := served(t, gvk)
	m, err := New(Config{
		TypeConverter: TypeConverterFor(res), Scheme: c.Scheme, Kind: gvk,
		Default: res.Strategy.Default, Subresource: subresource, ResetFields: reset,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// stored makes obj look like a stored object (what apply and update see as
// live).
func stored(obj runtime.Object) runtime.Object {
	m := obj.(metav1.Object)
	m.SetUID("uid-1")
	m.SetResourceVersion("5")
	return obj
}

func deploymentYAML(replicas, image, labels string) []byte {
	return []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {` + labels + `}
spec:
  replicas: ` + replicas + `
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: ` + image + `
`)
}

// entries renders managed fields as "manager/operation[/subresource]: fields".
func entries(t *testing.T, obj runtime.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range obj.(metav1.Object).GetManagedFields() {
		k := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			k += "/" + e.Subresource
		}
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		out[k] = fields
	}
	return out
}

func mustApply(t *testing.T, m *Manager, live runtime.Object, cfg []byte, manager string, force bool) runtime.Object {
	t.Helper()
	out, err := m.Apply(live, cfg, manager, force)
	if err != nil {
		t.Fatalf("apply by %s: %v", manager, err)
	}
	return stored(out)
}

func TestApplyOwnershipAndConflicts(t *testing.T) {
	m := managerFor(t, deploymentKind, "", "status")
	scale := managerFor(t, deploymentKind, "scale")

	// An apply to a missing object: the applier owns what it applied, and
	// the kind's defaults are filled in.
	created := mustApply(t, m, &appsv1.Deployment{}, deploymentYAML("2", "nginx:1.25", "a: x, b: w"), "alice", false)
	d := created.(*appsv1.Deployment)
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.25" || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("created %+v", d.Spec)
	}
	e := entries(t, created)
	if len(e) != 1 || !strings.Contains(e["alice/Apply"], `"f:replicas"`) || !strings.Contains(e["alice/Apply"], `"k:{\"name\":\"nginx\"}"`) {
		t.Fatalf("entries after create: %v", e)
	}

	// Another manager scales through /scale: an Update entry for scale.
	scaled := created.DeepCopyObject().(*appsv1.Deployment)
	five := int32(5)
	scaled.Spec.Replicas = &five
	afterScale := stored(scale.Update(created, scaled, "hpa"))
	if e := entries(t, afterScale); e["hpa/Update/scale"] != `{"f:spec":{"f:replicas":{}}}` || strings.Contains(e["alice/Apply"], "replicas") {
		t.Fatalf("entries after scale: %v", e)
	}

	cases := []struct {
		name      string
		cfg       []byte
		manager   string
		force     bool
		conflicts []string // fields named in the 409, nil for success
		check     func(t *testing.T, out *appsv1.Deployment, e map[string]string)
	}{{
		name: "same replicas as the other owner is shared, no conflict",
		cfg:  deploymentYAML("5", "nginx:1.25", "a: x, b: w"), manager: "alice",
		check: func(t *testing.T, out *appsv1.Deployment, e map[string]string) {
			if !strings.Contains(e["alice/Apply"], "f:replicas") || !strings.Contains(e["hpa/Update/scale"], "f:replicas") {
				t.Errorf("co-ownership: %v", e)
			}
		},
	}, {
		name: "different replicas conflicts with the scale manager",
		cfg:  deploymentYAML("3", "nginx:1.25", "a: x, b: w"), manager: "alice",
		conflicts: []string{".spec.replicas"},
	}, {
		name: "forced, alice takes replicas over",
		cfg:  deploymentYAML("3", "nginx:1.25", "a: x, b: w"), manager: "alice", force: true,
		check: func(t *testing.T, out *appsv1.Deployment, e map[string]string) {
			if *out.Spec.Replicas != 3 {
				t.Errorf("replicas %d", *out.Spec.Replicas)
			}
			if _, ok := e["hpa/Update/scale"]; ok {
				t.Errorf("hpa still owns fields: %v", e)
			}
		},
	}, {
		name: "a second applier conflicts with alice on the image only (replicas has the live value)",
		cfg:  deploymentYAML("5", "nginx:1.27", "a: x"), manager: "bob",
		conflicts: []string{`.spec.template.spec.containers[name="nginx"].image`},
	}, {
		name: "two conflicting fields are both listed",
		cfg:  deploymentYAML("4", "nginx:1.27", "a: x"), manager: "bob",
		conflicts: []string{".spec.replicas", `.spec.template.spec.containers[name="nginx"].image`},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := m.Apply(afterScale, c.cfg, c.manager, c.force)
			if c.conflicts != nil {
				if !apierrors.IsConflict(err) {
					t.Fatalf("want a 409 conflict, got %v", err)
				}
				causes := err.(apierrors.APIStatus).Status().Details.Causes
				var fields []string
				for _, cause := range causes {
					if cause.Type != metav1.CauseTypeFieldManagerConflict {
						t.Errorf("cause type %q", cause.Type)
					}
					fields = append(fields, cause.Field)
				}
				slices.Sort(fields) // causes come in no particular order
				if strings.Join(fields, " ") != strings.Join(c.conflicts, " ") {
					t.Errorf("conflicting fields %v, want %v (%v)", fields, c.conflicts, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, out.(*appsv1.Deployment), entries(t, out))
		})
	}
}

func TestApplyRemovesFieldsNoLongerApplied(t *testing.T) {
	m := managerFor(t, deploymentKind, "", "status")
	live := mustApply(t, m, &appsv1.Deployment{}, deploymentYAML("2", "nginx", "a: x, b: w, c: z"), "alice", false)
	// bob co-owns label c by applying the same value.
	live = mustApply(t, m, live, []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {c: z}
`), "bob", false)
	// alice stops applying b and c: b goes (she was its only owner), c
	// stays (bob still applies it), a stays.
	out := mustApply(t, m, live, deploymentYAML("2", "nginx", "a: x"), "alice", false)
	labels := out.(*appsv1.Deployment).Labels
	if labels["a"] != "x" || labels["c"] != "z" || len(labels) != 2 {
		t.Fatalf("labels %v, want a and c", labels)
	}
}

func TestApplyBadConfiguration(t *testing.T) {
	m := managerFor(t, deploymentKind, "")
	live := &appsv1.Deployment{}
	cases := map[string]string{
		"not YAML":            "{",
		"unknown field":       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {frobs: 1}\n",
		"wrong type":          "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: many}\n",
		"wrong kind":          "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\n",
		"wrong version":       "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n",
		"managedFields given": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, managedFields: [{manager: x}]}\n",
		"a list":              "- a\n- b\n",
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := m.Apply(live, []byte(cfg), "alice", false)
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("want 400, got %v", err)
			}
		})
	}
}

func TestUpdateRecordsManagers(t *testing.T) {
	cmKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	m := managerFor(t, cmKind, "")

	// A create (live has no uid) is tracked from the start.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"a": "1"}}
	created := stored(m.Update(&corev1.ConfigMap{}, cm, "creator"))
	if e := entries(t, created); e["creator/Update"] != `{"f:data":{".":{},"f:a":{}}}` {
		t.Fatalf("after create: %v", e)
	}
	// An update by another manager records only what it changed.
	upd := created.DeepCopyObject().(*corev1.ConfigMap)
	upd.Data["b"] = "2"
	updated := stored(m.Update(created, upd, "editor"))
	e := entries(t, updated)
	if e["editor/Update"] != `{"f:data":{"f:b":{}}}` || e["creator/Update"] != `{"f:data":{".":{},"f:a":{}}}` {
		t.Fatalf("after update: %v", e)
	}
	// An update that changes nothing adds no manager.
	same := stored(m.Update(updated, updated.DeepCopyObject(), "noop"))
	if _, ok := entries(t, same)["noop/Update"]; ok {
		t.Fatalf("no-op update recorded: %v", entries(t, same))
	}
	// An empty managedFields list from the client resets them.
	reset := updated.DeepCopyObject().(*corev1.ConfigMap)
	reset.ManagedFields = []metav1.ManagedFieldsEntry{}
	if got := m.Update(updated, reset, "resetter").(*corev1.ConfigMap).ManagedFields; len(got) != 0 {
		t.Fatalf("reset left %v", got)
	}

	// An existing object nobody tracked stays untracked on update, as in
	// Kubernetes (it starts being tracked on its first apply).
	legacy := stored(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "ns"}}).(*corev1.ConfigMap)
	changed := legacy.DeepCopy()
	changed.Data = map[string]string{"x": "y"}
	if got := m.Update(legacy, changed, "editor").(*corev1.ConfigMap).ManagedFields; len(got) != 0 {
		t.Fatalf("untracked object got %v", got)
	}
	applied, err := m.Apply(changed, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old, namespace: ns}\ndata: {z: w}\n"), "applier", false)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries(t, applied); !strings.Contains(e["before-first-apply/Update"], "f:x") || !strings.Contains(e["applier/Apply"], "f:z") {
		t.Fatalf("first apply of an untracked object: %v", e)
	}
}

// TestNewRefusesResetFieldsWithOnly: Only's filter would replace
// ResetFields' silently, so a Config with both is an error naming the
// kind; either alone builds.
func TestNewRefusesResetFieldsWithOnly(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	podKind := corev1.SchemeGroupVersion.WithKind("Pod")
	res := served(t, podKind)
	cfg := Config{TypeConverter: TypeConverterFor(res), Scheme: c.Scheme, Kind: podKind, Default: res.Strategy.Default,
		Subresource: "ephemeralcontainers", ResetFields: []string{"status"}, Only: []string{"spec", "ephemeralContainers"}}
	m, err := New(cfg)
	if !errors.Is(err, ErrResetFieldsWithOnly) || m != nil {
		t.Fatalf("New with ResetFields and Only: %v, %v; want ErrResetFieldsWithOnly", m, err)
	}
	if !strings.Contains(err.Error(), "/v1, Kind=Pod") {
		t.Errorf("error %q does not name the kind", err)
	}
	for _, one := range []func(*Config){func(c *Config) { c.ResetFields = nil }, func(c *Config) { c.Only = nil }} {
		cfg := cfg
		one(&cfg)
		if _, err := New(cfg); err != nil {
			t.Errorf("New(ResetFields %v, Only %v): %v", cfg.ResetFields, cfg.Only, err)
		}
	}
}

func TestStatusEndpointDoesNotOwnSpec(t *testing.T) {
	m := managerFor(t, deploymentKind, "status", "spec")
	main := managerFor(t, deploymentKind, "", "status")
	live := mustApply(t, main, &appsv1.Deployment{}, deploymentYAML("2", "nginx", "a: x"), "alice", false)
	upd := live.DeepCopyObject().(*appsv1.Deployment)
	upd.Status.Replicas = 2
	seven := int32(7)
	upd.Spec.Replicas = &seven
	e := entries(t, m.Update(live, upd, "controller"))
	if got := e["controller/Update/status"]; got != `{"f:status":{"f:replicas":{}}}` {
		t.Fatalf("status writer owns %s, want only status.replicas (%v)", got, e)
	}
}

func TestManagerName(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := []struct{ fieldManager, userAgent, want string }{
		{"kubectl-edit", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl-edit"},
		{"", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "kube-controller-manager/v1.37.1 (linux/amd64)/replicaset-controller", "kube-controller-manager"},
		{"", "Go-http-client/2.0", "Go-http-client"},
		{"", "tab\there/1", "tabhere"},
		{"", long, strings.Repeat("x", 128)},
		{"", "", ""},
	}
	for _, c := range cases {
		if got := ManagerName(c.fieldManager, c.userAgent); got != c.want {
			t.Errorf("ManagerName(%q, %q) = %q, want %q", c.fieldManager, c.userAgent, got, c.want)
		}
	}
}

// ManagerName's printable-ASCII shortcut gives what the rune-by-rune
// filter gives, for random user agents around the length limit.
func TestManagerNameShortcutAgrees(t *testing.T) {
	filtered := func(ua string) string {
		product, _, _ := strings.Cut(ua, "/")
		var b strings.Builder
		for _, r := range product {
			if unicode.IsPrint(r) && b.Len()+utf8.RuneLen(r) <= 128 {
				b.WriteRune(r)
			} else if unicode.IsPrint(r) {
				break
			}
		}
		return b.String()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "Z", "-", " ", "~", "/", "\t", "\x7f", "\xff", "é", "\u00a0"}
	for range 5000 {
		var b strings.Builder
		for n := rng.IntN(140); b.Len() < n; {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if got, want := ManagerName("", b.String()), filtered(b.String()); got != want {
			t.Fatalf("ManagerName(%q) = %q, want %q", b.String(), got, want)
		}
	}
}

func TestTypeConverterListSemantics(t *testing.T) {
	// Containers merge by name: two appliers each own their container.
	m := managerFor(t, deploymentKind, "", "status")
	live := mustApply(t, m, &appsv1.Deployment{}, deploymentYAML("1", "nginx", "a: x"), "alice", false)
	out, err := m.Apply(live, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  template:
    spec:
      containers:
      - name: sidecar
        image: busybox
`), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	cs := out.(*appsv1.Deployment).Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Name != "nginx" || cs[1].Name != "sidecar" {
		t.Fatalf("containers %+v", cs)
	}
}
