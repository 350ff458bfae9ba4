package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func resourceQuotas(now func() time.Time) *resource.Resource {
	k := kind[*corev1.ResourceQuota]{
		namespaced:       true,
		prepareForCreate: func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} },
		prepareForUpdate: func(q, old *corev1.ResourceQuota) { q.Status = old.Status },
		validate:         validateResourceQuota,
		table: &tableSpec[*corev1.ResourceQuota]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Request", "string", "Used and hard request quotas."),
				column("Limit", "string", "Used and hard limit quotas."),
				ageColumn(),
			},
			cells: resourceQuotaCells,
		},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "resourcequotas", SingularName: "resourcequota", Kind: "ResourceQuota",
		Namespaced: true, ShortNames: []string{"quota"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList:  func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Strategy: s,
		Status: statusStrategy[*corev1.ResourceQuota]{s: s, k: statusKind[*corev1.ResourceQuota]{
			keep: func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec },
			validate: func(q, _ *corev1.ResourceQuota) field.ErrorList {
				errs := validateResourceList(q.Status.Hard, field.NewPath("status", "hard"), validateQuotaResourceName)
				return append(errs, validateResourceList(q.Status.Used, field.NewPath("status", "used"), validateQuotaResourceName)...)
			},
		}},
	}
}

var quotaScopes = []string{
	string(corev1.ResourceQuotaScopeTerminating), string(corev1.ResourceQuotaScopeNotTerminating),
	string(corev1.ResourceQuotaScopeBestEffort), string(corev1.ResourceQuotaScopeNotBestEffort),
	string(corev1.ResourceQuotaScopePriorityClass), string(corev1.ResourceQuotaScopeCrossNamespacePodAffinity),
	string(corev1.ResourceQuotaScopeVolumeAttributesClass),
}

// standardQuotaResources are the quota names without a domain prefix.
var standardQuotaResources = map[corev1.ResourceName]bool{
	corev1.ResourcePods: true, corev1.ResourceServices: true, corev1.ResourceReplicationControllers: true,
	corev1.ResourceQuotas: true, corev1.ResourceSecrets: true, corev1.ResourceConfigMaps: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceServicesNodePorts: true,
	corev1.ResourceServicesLoadBalancers: true, corev1.ResourceCPU: true, corev1.ResourceMemory: true,
	corev1.ResourceEphemeralStorage: true, corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true,
	corev1.ResourceRequestsStorage: true, corev1.ResourceRequestsEphemeralStorage: true,
	corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true, corev1.ResourceLimitsEphemeralStorage: true,
}

// validateQuotaResourceName accepts standard quota resources (including
// hugepages) and domain-prefixed names such as count/deployments.apps.
func validateQuotaResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	errs := validateResourceName(name, path)
	n := string(name)
	if len(errs) == 0 && !strings.Contains(n, "/") && !standardQuotaResources[name] &&
		!strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(n, corev1.ResourceRequestsHugePagesPrefix) {
		errs = append(errs, field.Invalid(path, name, "must be a standard resource for quota"))
	}
	return errs
}

func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := validateResourceList(q.Spec.Hard, field.NewPath("spec", "hard"), validateQuotaResourceName)
	for i, scope := range q.Spec.Scopes {
		if !containsString(quotaScopes, string(scope)) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "scopes").Index(i), scope, quotaScopes))
		}
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for i, req := range sel.MatchExpressions {
			p := field.NewPath("spec", "scopeSelector", "matchExpressions").Index(i)
			if !containsString(quotaScopes, string(req.ScopeName)) {
				errs = append(errs, field.NotSupported(p.Child("scopeName"), req.ScopeName, quotaScopes))
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
		}
	}
	return errs
}

// resourceQuotaCells renders "name: used/hard" pairs from the quota's status
// (what the quota controller enforces, as upstream's printer shows it),
// limits.* resources in the LIMIT column and everything else in REQUEST,
// sorted by name. A quota nobody has computed status for shows none.
func resourceQuotaCells(q *corev1.ResourceQuota, now time.Time) []any {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used := q.Status.Used[corev1.ResourceName(name)]
		hard := q.Status.Hard[corev1.ResourceName(name)]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limits = append(limits, cell)
		} else {
			requests = append(requests, cell)
		}
	}
	return []any{q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), age(q.CreationTimestamp, now)}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
