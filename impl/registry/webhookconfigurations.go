package registry

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration: cluster-scoped lists of admission
// webhooks, defaulted and validated as kube-apiserver does.

func mutatingWebhookConfigurations(now func() time.Time) *resource.Resource {
	k := kind[*admissionregistrationv1.MutatingWebhookConfiguration]{
		namespaced: false,
		defaults: func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				defaultWebhook(webhookFieldsOfMutating(w))
				if w.ReinvocationPolicy == nil {
					p := admissionregistrationv1.NeverReinvocationPolicy
					w.ReinvocationPolicy = &p
				}
			}
		},
		spec: func(c *admissionregistrationv1.MutatingWebhookConfiguration) any { return c.Webhooks },
		validate: func(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			var errs field.ErrorList
			names := map[string]bool{}
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				p := field.NewPath("webhooks").Index(i)
				errs = append(errs, validateWebhook(webhookFieldsOfMutating(w), names, p)...)
				if w.ReinvocationPolicy != nil {
					switch *w.ReinvocationPolicy {
					case admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
					default:
						errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *w.ReinvocationPolicy,
							[]string{string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy)}))
					}
				}
			}
			return errs
		},
		table: webhookTable(func(c *admissionregistrationv1.MutatingWebhookConfiguration) int { return len(c.Webhooks) }),
	}
	return &resource.Resource{
		GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name:         "mutatingwebhookconfigurations", SingularName: "mutatingwebhookconfiguration", Kind: "MutatingWebhookConfiguration",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList:  func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Strategy: newStrategy(k, now),
	}
}

func validatingWebhookConfigurations(now func() time.Time) *resource.Resource {
	k := kind[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		namespaced: false,
		defaults: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			for i := range c.Webhooks {
				defaultWebhook(webhookFieldsOfValidating(&c.Webhooks[i]))
			}
		},
		spec: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) any { return c.Webhooks },
		validate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			var errs field.ErrorList
			names := map[string]bool{}
			for i := range c.Webhooks {
				errs = append(errs, validateWebhook(webhookFieldsOfValidating(&c.Webhooks[i]), names, field.NewPath("webhooks").Index(i))...)
			}
			return errs
		},
		table: webhookTable(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) int { return len(c.Webhooks) }),
	}
	return &resource.Resource{
		GroupVersion: admissionregistrationv1.SchemeGroupVersion,
		Name:         "validatingwebhookconfigurations", SingularName: "validatingwebhookconfiguration", Kind: "ValidatingWebhookConfiguration",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:  func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Strategy: newStrategy(k, now),
	}
}

func webhookTable[T object](count func(T) int) *tableSpec[T] {
	return &tableSpec[T]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Webhooks", "integer", "Webhooks indicates the number of webhooks in the configuration."),
			ageColumn(),
		},
		cells: func(c T, now time.Time) []any {
			return []any{c.GetName(), int64(count(c)), age(c.GetCreationTimestamp(), now)}
		},
	}
}

// webhookFields points at the fields mutating and validating webhooks
// share, so one function defaults and validates both.
type webhookFields struct {
	Name                    *string
	ClientConfig            *admissionregistrationv1.WebhookClientConfig
	Rules                   []admissionregistrationv1.RuleWithOperations
	FailurePolicy           **admissionregistrationv1.FailurePolicyType
	MatchPolicy             **admissionregistrationv1.MatchPolicyType
	NamespaceSelector       **metav1.LabelSelector
	ObjectSelector          **metav1.LabelSelector
	SideEffects             **admissionregistrationv1.SideEffectClass
	TimeoutSeconds          **int32
	AdmissionReviewVersions []string
	MatchConditions         []admissionregistrationv1.MatchCondition
}

func webhookFieldsOfMutating(w *admissionregistrationv1.MutatingWebhook) webhookFields {
	return webhookFields{&w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector,
		&w.ObjectSelector, &w.SideEffects, &w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

func webhookFieldsOfValidating(w *admissionregistrationv1.ValidatingWebhook) webhookFields {
	return webhookFields{&w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector,
		&w.ObjectSelector, &w.SideEffects, &w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

// defaultWebhook: failurePolicy Fail, matchPolicy Equivalent, empty
// (match-everything) selectors, timeout 10 s, rule scope "*", service
// port 443 (SetDefaults_ValidatingWebhook / _MutatingWebhook).
func defaultWebhook(w webhookFields) {
	if *w.FailurePolicy == nil {
		p := admissionregistrationv1.Fail
		*w.FailurePolicy = &p
	}
	if *w.MatchPolicy == nil {
		p := admissionregistrationv1.Equivalent
		*w.MatchPolicy = &p
	}
	if *w.NamespaceSelector == nil {
		*w.NamespaceSelector = &metav1.LabelSelector{}
	}
	if *w.ObjectSelector == nil {
		*w.ObjectSelector = &metav1.LabelSelector{}
	}
	if *w.TimeoutSeconds == nil {
		t := int32(10)
		*w.TimeoutSeconds = &t
	}
	for i := range w.Rules {
		if w.Rules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			w.Rules[i].Scope = &s
		}
	}
	if s := w.ClientConfig.Service; s != nil && s.Port == nil {
		p := int32(443)
		s.Port = &p
	}
}

func validateWebhook(w webhookFields, seen map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	name := *w.Name
	namePath := p.Child("name")
	if name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(namePath, name, msg))
		}
		if strings.Count(name, ".") < 2 {
			errs = append(errs, field.Invalid(namePath, name, "should be a domain with at least three segments separated by dots"))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(namePath, name))
		}
		seen[name] = true
	}
	for i := range w.Rules {
		errs = append(errs, validateWebhookRule(&w.Rules[i], p.Child("rules").Index(i))...)
	}
	if fp := *w.FailurePolicy; fp != nil && *fp != admissionregistrationv1.Fail && *fp != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}))
	}
	if mp := *w.MatchPolicy; mp != nil && *mp != admissionregistrationv1.Exact && *mp != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}))
	}
	switch se := *w.SideEffects; {
	case se == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	case *se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun:
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *se, []string{string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun)}))
	}
	if t := *w.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateReviewVersions(w.AdmissionReviewVersions, p.Child("admissionReviewVersions"))...)
	if s := *w.NamespaceSelector; s != nil {
		errs = append(errs, validateLabelSelector(s, p.Child("namespaceSelector"))...)
	}
	if s := *w.ObjectSelector; s != nil {
		errs = append(errs, validateLabelSelector(s, p.Child("objectSelector"))...)
	}
	if len(w.MatchConditions) > 0 {
		errs = append(errs, field.Forbidden(p.Child("matchConditions"), "CEL match conditions are not supported by this server"))
	}
	errs = append(errs, validateClientConfig(w.ClientConfig, p.Child("clientConfig"))...)
	return errs
}

var webhookOperations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}

func validateWebhookRule(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	opsPath := p.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(opsPath, ""))
	}
	if len(r.Operations) > 1 && hasWildcard(r.Operations) {
		errs = append(errs, field.Invalid(opsPath, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !containsString(webhookOperations, string(op)) {
			errs = append(errs, field.NotSupported(opsPath.Index(i), op, webhookOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateRuleResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope:
		default:
			errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, []string{"*", "Cluster", "Namespaced"}))
		}
	}
	return errs
}

// validateRuleResources: "resource", "resource/subresource", "*",
// "*/*", "resource/*", "*/subresource"; a wildcard may not be combined
// with what it already covers.
func validateRuleResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	subWildcards := map[string]bool{} // resources "x/*" present
	resWildcards := map[string]bool{} // subresources "*/y" present
	for _, r := range resources {
		res, sub, hasSub := strings.Cut(r, "/")
		if hasSub && sub == "*" {
			subWildcards[res] = true
		}
		if hasSub && res == "*" {
			resWildcards[sub] = true
		}
	}
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		res, sub, hasSub := strings.Cut(r, "/")
		if res == "" || (hasSub && (sub == "" || strings.Contains(sub, "/"))) {
			errs = append(errs, field.Invalid(p.Index(i), r, "must be of the form resource, resource/subresource, '*', '*/*', 'resource/*' or '*/subresource'"))
			continue
		}
		switch {
		case r == "*" && len(resources) > 1 && !hasSubresourceRule(resources):
			errs = append(errs, field.Invalid(p.Index(i), r, "if '*' is present, must not specify other resources without subresources"))
		case r == "*/*" && len(resources) > 1:
			errs = append(errs, field.Invalid(p.Index(i), r, "if '*/*' is present, must not specify other resources"))
		case hasSub && sub != "*" && subWildcards[res]:
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		case hasSub && res != "*" && resWildcards[sub]:
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
	}
	return errs
}

func hasSubresourceRule(resources []string) bool {
	for _, r := range resources {
		if r != "*" && !strings.Contains(r, "/") {
			return false
		}
	}
	return true
}

func hasWildcard[S ~string](items []S) bool {
	for _, s := range items {
		if s == "*" {
			return true
		}
	}
	return false
}

func validateReviewVersions(versions []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of v1, v1beta1")}
	}
	known := false
	seen := map[string]bool{}
	for i, v := range versions {
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
		}
		seen[v] = true
		if v == "v1" || v == "v1beta1" {
			known = true
		}
	}
	if !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		up := p.Child("url")
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return append(errs, field.Invalid(up, *cc.URL, "url must be a valid URL: "+err.Error()))
		}
		if u.Scheme != "https" {
			errs = append(errs, field.Invalid(up, u.Scheme, "'https' is the only allowed URL scheme"))
		}
		if u.Host == "" {
			errs = append(errs, field.Invalid(up, u.Host, "host must be specified"))
		}
		if u.User != nil {
			errs = append(errs, field.Invalid(up, u.User.String(), "user information is not permitted in the URL"))
		}
		if u.Fragment != "" || u.RawFragment != "" {
			errs = append(errs, field.Invalid(up, u.Fragment, "fragments are not permitted in the URL"))
		}
		if u.RawQuery != "" {
			errs = append(errs, field.Invalid(up, u.RawQuery, "query parameters are not permitted in the URL"))
		}
	case cc.Service != nil:
		sp := p.Child("service")
		if cc.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), "service name is required"))
		}
		if cc.Service.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "service namespace is required"))
		}
		if cc.Service.Path != nil && !strings.HasPrefix(*cc.Service.Path, "/") {
			errs = append(errs, field.Invalid(sp.Child("path"), *cc.Service.Path, "must start with a '/'"))
		}
		if port := cc.Service.Port; port != nil && (*port < 1 || *port > 65535) {
			errs = append(errs, field.Invalid(sp.Child("port"), *port, "port is not valid: must be between 1 and 65535, inclusive"))
		}
	}
	return errs
}
