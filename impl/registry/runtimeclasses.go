package registry

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// runtimeClasses is node.k8s.io/v1 runtimeclasses: cluster-scoped, no
// status, no defaults, created by an update of a missing object and
// updated only with a resourceVersion, as kube-apiserver's strategy. The
// RuntimeClass admission plugin (package admission) applies a class to the
// pods that name it.
func runtimeClasses(now func() time.Time) *resource.Resource {
	k := kind[*nodev1.RuntimeClass]{
		namespaced:                     false,
		validate:                       validateRuntimeClass,
		validateCreate:                 validateRuntimeClassCreate,
		validateUpdate:                 validateRuntimeClassUpdate,
		warnings:                       runtimeClassWarnings,
		requireResourceVersionOnUpdate: true,
		table: &tableSpec[*nodev1.RuntimeClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				// kube-apiserver's printer takes this description from
				// ObjectMeta's documentation, which has no "handler": "".
				column("Handler", "string", objectMetaDoc["handler"]),
				ageColumn(),
			},
			cells: func(rc *nodev1.RuntimeClass, now time.Time) []any {
				return []any{rc.Name, rc.Handler, age(rc.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: nodev1.SchemeGroupVersion,
		Name:         "runtimeclasses", SingularName: "runtimeclass", Kind: "RuntimeClass",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList:  func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

// validateRuntimeClass is what creates and updates check besides the
// handler: overhead.podFixed as container limits, scheduling.nodeSelector
// as labels and scheduling.tolerations as a pod's, without duplicates
// (upstream's ValidateRuntimeClass).
func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	if rc.Overhead != nil {
		errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		path := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
		}
		tolerations := path.Child("tolerations")
		errs = append(errs, validateTolerations(s.Tolerations, tolerations)...)
		type listKey struct {
			key      string
			operator corev1.TolerationOperator
			value    string
			effect   corev1.TaintEffect
		}
		seen := map[listKey]bool{}
		for i, t := range s.Tolerations {
			k := listKey{t.Key, t.Operator, t.Value, t.Effect}
			if seen[k] {
				errs = append(errs, field.Duplicate(tolerations.Index(i), t))
			}
			seen[k] = true
		}
	}
	return errs
}

// validateRuntimeClassCreate checks the handler of a new class: required,
// a DNS label. kube-apiserver 1.37 enforces these declaratively (the
// handler's +k8s:required and +k8s:format=k8s-short-name rules are beta,
// so authoritative by default): an empty handler is "Required value" only.
func validateRuntimeClassCreate(rc *nodev1.RuntimeClass) field.ErrorList {
	path := field.NewPath("handler")
	if rc.Handler == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(rc.Handler) {
		errs = append(errs, field.Invalid(path, rc.Handler, msg))
	}
	return errs
}

// validateRuntimeClassUpdate: the handler is immutable. As kube-apiserver
// 1.37's declarative rules, an unchanged handler is not checked again and
// a changed one is "field is immutable" (with no value shown), plus
// "Required value" when emptied.
func validateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	if rc.Handler == old.Handler {
		return nil
	}
	path := field.NewPath("handler")
	errs := field.ErrorList{field.Invalid(path, nil, "field is immutable")}
	if rc.Handler == "" {
		errs = append(errs, field.Required(path, ""))
	}
	return errs
}

// deprecatedNodeLabels are the node labels kube-apiserver warns about in
// node selectors, with its messages (upstream's pkg/api/node
// deprecatedNodeLabels; also used for pods, pod_warnings.go).
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// runtimeClassWarnings are the Warning headers of a create or update: one
// per deprecated node label in scheduling.nodeSelector (in key order;
// upstream's follow map order).
func runtimeClassWarnings(rc, _ *nodev1.RuntimeClass) []string {
	if rc.Scheduling == nil {
		return nil
	}
	var keys []string
	for k := range rc.Scheduling.NodeSelector {
		if _, ok := deprecatedNodeLabels[k]; ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: %s", field.NewPath("scheduling", "nodeSelector"), deprecatedNodeLabels[k]))
	}
	return out
}
