package registry

import (
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The hand-written checks agree with upstream's regular expressions both
// ways on strings built from the characters that matter (so the fast path
// is taken for every valid value, and never for an invalid one).
func TestNameChecksAgreeWithUpstream(t *testing.T) {
	checks := []struct {
		name     string
		fast     func(string) bool
		upstream func(string) []string
	}{
		{"DNS-1123 label", isDNS1123Label, validation.IsDNS1123Label},
		{"DNS-1123 subdomain", isDNS1123Subdomain, validation.IsDNS1123Subdomain},
		{"qualified name", isQualifiedName, validation.IsQualifiedName},
		{"label value", isLabelValue, validation.IsValidLabelValue},
		{"configmap key", isConfigMapKey, validation.IsConfigMapKey},
	}
	values := []string{"", "a", "A", "0", "-", ".", "..", "..a", ".a", "a.", "a-", "-a", "a_b", "a.b", "a..b",
		"a/b", "/b", "a/", "a/b/c", "example.com/Name", "Example.com/name", "a\n", "é", "a b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "ab",
		"p/" + strings.Repeat("b", 63), "p/" + strings.Repeat("b", 64), strings.Repeat("a", 253), strings.Repeat("a", 254)}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab0Z-._/ \n\xff"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		values = append(values, string(b))
	}
	for _, c := range checks {
		for _, v := range values {
			if got, want := c.fast(v), len(c.upstream(v)) == 0; got != want {
				t.Errorf("%s(%q) = %v, upstream finds errors: %v", c.name, v, got, !want)
			}
		}
	}
}

// Whenever metaSurelyValid answers true, upstream's ObjectMeta validation
// finds nothing; and it answers true for the usual valid metadata.
func TestMetaSurelyValidOnlyWhenUpstreamFindsNothing(t *testing.T) {
	valid := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "cm-1", Namespace: "default", Labels: map[string]string{"app": "web", "example.com/tier": ""},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}},
		}}
	}
	cases := []struct {
		name   string
		change func(*corev1.ConfigMap)
		sure   bool // metaSurelyValid must say true
	}{
		{"valid", func(*corev1.ConfigMap) {}, true},
		{"no labels or managed fields", func(cm *corev1.ConfigMap) { cm.Labels, cm.ManagedFields = nil, nil }, true},
		{"apply entry", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].Operation = metav1.ManagedFieldsOperationApply }, true},
		{"no name", func(cm *corev1.ConfigMap) { cm.Name = "" }, false},
		{"bad name", func(cm *corev1.ConfigMap) { cm.Name = "CM" }, false},
		{"long name", func(cm *corev1.ConfigMap) { cm.Name = strings.Repeat("a", 254) }, false},
		{"no namespace", func(cm *corev1.ConfigMap) { cm.Namespace = "" }, false},
		{"bad namespace", func(cm *corev1.ConfigMap) { cm.Namespace = "a.b" }, false},
		{"generateName", func(cm *corev1.ConfigMap) { cm.GenerateName = "cm-" }, false},
		{"negative generation", func(cm *corev1.ConfigMap) { cm.Generation = -1 }, false},
		{"bad label key", func(cm *corev1.ConfigMap) { cm.Labels["-x"] = "v" }, false},
		{"bad label value", func(cm *corev1.ConfigMap) { cm.Labels["x"] = "v/" }, false},
		{"annotations", func(cm *corev1.ConfigMap) { cm.Annotations = map[string]string{"a": "b"} }, false},
		{"owner", func(cm *corev1.ConfigMap) { cm.OwnerReferences = []metav1.OwnerReference{{}} }, false},
		{"finalizer", func(cm *corev1.ConfigMap) { cm.Finalizers = []string{"x/y"} }, false},
		{"empty operation", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].Operation = "" }, false},
		{"bad fields type", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].FieldsType = "FieldsV2" }, false},
		{"unprintable manager", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].Manager = "a\tb" }, false},
		{"long manager", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].Manager = strings.Repeat("m", 129) }, false},
		{"long subresource", func(cm *corev1.ConfigMap) { cm.ManagedFields[0].Subresource = strings.Repeat("s", 257) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm := valid()
			c.change(cm)
			sure := metaSurelyValid(cm, true, apivalidation.NameIsDNSSubdomain, true)
			errs := apivalidation.ValidateObjectMetaAccessor(cm, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
			if sure && len(errs) > 0 {
				t.Fatalf("metaSurelyValid = true, upstream: %v", errs)
			}
			if sure != c.sure {
				t.Errorf("metaSurelyValid = %v, want %v (upstream: %v)", sure, c.sure, errs)
			}
			// A kind with its own name function is asked through it.
			if got := metaSurelyValid(cm, true, apivalidation.NameIsDNSLabel, false); got && len(apivalidation.ValidateObjectMetaAccessor(cm, true, apivalidation.NameIsDNSLabel, field.NewPath("metadata"))) > 0 {
				t.Errorf("with NameIsDNSLabel: metaSurelyValid = true, upstream finds errors")
			}
			// A cluster-scoped kind may not have a namespace.
			if got := metaSurelyValid(cm, false, apivalidation.NameIsDNSSubdomain, true); got && cm.Namespace != "" {
				t.Errorf("cluster-scoped with a namespace: metaSurelyValid = true")
			}
		})
	}
}

// The strategy's validation is upstream's whether or not the fast path is
// taken: the same errors for invalid metadata, none for valid.
func TestStrategyValidateKeepsUpstreamErrors(t *testing.T) {
	r := testResourcesByName(t, "configmaps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "default"},
		Data: map[string]string{"..k": "v", "ok.key": "v"}}
	errs := r.Strategy.Validate(t.Context(), cm)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"metadata.name", "data[..k]"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("error fields %v, want %v (%v)", got, want, errs)
	}
	cm.Name = "good"
	delete(cm.Data, "..k")
	if errs := r.Strategy.Validate(t.Context(), cm); len(errs) > 0 {
		t.Fatalf("valid configmap: %v", errs)
	}
}
