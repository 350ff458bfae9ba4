package registry

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// flowSchemas serves flowcontrol.apiserver.k8s.io/v1 FlowSchemas, the
// classification half of API Priority and Fairness (package flowcontrol
// reads them). The spec's changes bump generation; the status (the
// Dangling condition) is the API server's, written through /status.
func flowSchemas(now func() time.Time) *resource.Resource {
	k := kind[*flowcontrolv1.FlowSchema]{
		defaults:         defaultFlowSchema,
		spec:             func(fs *flowcontrolv1.FlowSchema) any { return fs.Spec },
		prepareForCreate: func(fs *flowcontrolv1.FlowSchema) { fs.Status = flowcontrolv1.FlowSchemaStatus{} },
		prepareForUpdate: func(fs, old *flowcontrolv1.FlowSchema) { fs.Status = old.Status },
		validate:         validateFlowSchema,
		table: &tableSpec[*flowcontrolv1.FlowSchema]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
				column("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
				column("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
				ageColumn(),
				column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
			},
			cells: func(fs *flowcontrolv1.FlowSchema, now time.Time) []any {
				method := "*"
				if dm := fs.Spec.DistinguisherMethod; dm != nil {
					method = string(dm.Type)
				}
				missing := "?"
				for _, c := range fs.Status.Conditions {
					if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
						missing = string(c.Status)
					}
				}
				return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence),
					method, age(fs.CreationTimestamp, now), missing}
			},
		},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: flowcontrolv1.SchemeGroupVersion,
		Name:         "flowschemas", SingularName: "flowschema", Kind: "FlowSchema",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
		NewList:  func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
		Strategy: s,
		Status: statusStrategy[*flowcontrolv1.FlowSchema]{s: s, k: statusKind[*flowcontrolv1.FlowSchema]{
			keep: func(fs, old *flowcontrolv1.FlowSchema) { fs.Spec = old.Spec },
			validate: func(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
				return validateFlowSchemaStatus(&fs.Status, field.NewPath("status"))
			},
		}},
	}
}

// priorityLevelConfigurations serves flowcontrol.apiserver.k8s.io/v1
// PriorityLevelConfigurations, the levels API Priority and Fairness shares
// the server's seats among.
func priorityLevelConfigurations(now func() time.Time) *resource.Resource {
	k := kind[*flowcontrolv1.PriorityLevelConfiguration]{
		defaults: defaultPriorityLevelConfiguration,
		spec:     func(p *flowcontrolv1.PriorityLevelConfiguration) any { return p.Spec },
		prepareForCreate: func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
		},
		prepareForUpdate: func(p, old *flowcontrolv1.PriorityLevelConfiguration) { p.Status = old.Status },
		validate:         validatePriorityLevelConfiguration,
		table: &tableSpec[*flowcontrolv1.PriorityLevelConfiguration]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
				column("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
				column("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
				column("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
				column("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
				ageColumn(),
			},
			cells: func(p *flowcontrolv1.PriorityLevelConfiguration, now time.Time) []any {
				var shares, queues, handSize, limit any = "<none>", "<none>", "<none>", "<none>"
				if l := p.Spec.Limited; l != nil {
					if l.NominalConcurrencyShares != nil {
						shares = int64(*l.NominalConcurrencyShares)
					}
					if q := l.LimitResponse.Queuing; q != nil {
						queues, handSize, limit = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
					}
				}
				return []any{p.Name, string(p.Spec.Type), shares, queues, handSize, limit, age(p.CreationTimestamp, now)}
			},
		},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: flowcontrolv1.SchemeGroupVersion,
		Name:         "prioritylevelconfigurations", SingularName: "prioritylevelconfiguration", Kind: "PriorityLevelConfiguration",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		Strategy: s,
		Status: statusStrategy[*flowcontrolv1.PriorityLevelConfiguration]{s: s, k: statusKind[*flowcontrolv1.PriorityLevelConfiguration]{
			keep: func(p, old *flowcontrolv1.PriorityLevelConfiguration) { p.Spec = old.Spec },
			validate: func(p, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
				return validatePriorityLevelStatus(&p.Status, field.NewPath("status"))
			},
		}},
	}
}

// The v1 defaults (kube-apiserver's SetDefaults_* of flowcontrol/v1).
const (
	defaultMatchingPrecedence       int32 = 1000
	defaultNominalConcurrencyShares int32 = 30
	defaultQueues                   int32 = 64
	defaultHandSize                 int32 = 8
	defaultQueueLengthLimit         int32 = 50
)

func defaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

func defaultPriorityLevelConfiguration(p *flowcontrolv1.PriorityLevelConfiguration) {
	if e := p.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = int32Ptr(0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = int32Ptr(0)
		}
	}
	l := p.Spec.Limited
	if l == nil {
		return
	}
	// v1 alone: an unset nominalConcurrencyShares is 30, and 0 is kept.
	if l.NominalConcurrencyShares == nil {
		l.NominalConcurrencyShares = int32Ptr(defaultNominalConcurrencyShares)
	}
	if l.LendablePercent == nil {
		l.LendablePercent = int32Ptr(0)
	}
	if q := l.LimitResponse.Queuing; q != nil {
		if q.Queues == 0 {
			q.Queues = defaultQueues
		}
		if q.HandSize == 0 {
			q.HandSize = defaultHandSize
		}
		if q.QueueLengthLimit == 0 {
			q.QueueLengthLimit = defaultQueueLengthLimit
		}
	}
}

func int32Ptr(v int32) *int32 { return &v }

// Limits of the API's values.
const (
	maxQueues = 10_000_000
	// maxHashBits is how much of a flow's 64-bit hash shuffle sharding may
	// use to deal a hand: queues^handSize must fit in it.
	maxHashBits = 60
)

// resourceVerbs are the verbs a rule may list (besides "*" alone).
var resourceVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}

func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch p := fs.Spec.MatchingPrecedence; {
	case p <= 0:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), p, "must be positive"))
	case p > flowcontrolv1.FlowSchemaMaxMatchingPrecedence:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), p,
			fmt.Sprintf("must not be greater than %d", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	case p == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), p, "1 is reserved for the FlowSchema named 'exempt'"))
	}
	if dm := fs.Spec.DistinguisherMethod; dm != nil {
		switch dm.Type {
		case flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		default:
			errs = append(errs, field.NotSupported(spec.Child("distinguisherMethod", "type"), dm.Type,
				[]string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}))
		}
	}
	plPath := spec.Child("priorityLevelConfiguration", "name")
	if pl := fs.Spec.PriorityLevelConfiguration.Name; pl == "" {
		errs = append(errs, field.Required(plPath, "a FlowSchema must name its priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(pl, false) {
			errs = append(errs, field.Invalid(plPath, pl, msg))
		}
	}
	for i := range fs.Spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&fs.Spec.Rules[i], spec.Child("rules").Index(i))...)
	}
	if mand := flowcontrol.MandatoryFlowSchema(fs.Name); mand != nil && !apiequality.Semantic.DeepEqual(fs.Spec, mand.Spec) {
		errs = append(errs, field.Invalid(spec, fs.Spec, fmt.Sprintf("the spec of the mandatory FlowSchema %q is fixed", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(&fs.Status, field.NewPath("status"))...)
}

func validatePolicyRulesWithSubjects(r *flowcontrolv1.PolicyRulesWithSubjects, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Subjects) == 0 {
		errs = append(errs, field.Required(path.Child("subjects"), "at least one subject is required"))
	}
	for i := range r.Subjects {
		errs = append(errs, validateSubject(&r.Subjects[i], path.Child("subjects").Index(i))...)
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		errs = append(errs, field.Required(path, "resourceRules or nonResourceRules must have at least one rule"))
	}
	for i := range r.ResourceRules {
		errs = append(errs, validateResourcePolicyRule(&r.ResourceRules[i], path.Child("resourceRules").Index(i))...)
	}
	for i := range r.NonResourceRules {
		errs = append(errs, validateNonResourcePolicyRule(&r.NonResourceRules[i], path.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

func validateSubject(s *flowcontrolv1.Subject, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// forbid reports the member that does not belong to the subject's kind.
	forbid := func(set bool, member, kind string) {
		if set {
			errs = append(errs, field.Forbidden(path.Child(member), fmt.Sprintf("only a subject of kind %s may set %s", kind, member)))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(path.Child("user"), "required for a subject of kind User"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(path.Child("user", "name"), ""))
		}
		forbid(s.Group != nil, "group", "Group")
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(path.Child("group"), "required for a subject of kind Group"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(path.Child("group", "name"), ""))
		}
		forbid(s.User != nil, "user", "User")
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
	case flowcontrolv1.SubjectKindServiceAccount:
		sa := path.Child("serviceAccount")
		if s.ServiceAccount == nil {
			errs = append(errs, field.Required(sa, "required for a subject of kind ServiceAccount"))
		} else {
			switch n := s.ServiceAccount.Name; {
			case n == "":
				errs = append(errs, field.Required(sa.Child("name"), ""))
			case n != flowcontrolv1.NameAll:
				for _, msg := range apivalidation.ValidateServiceAccountName(n, false) {
					errs = append(errs, field.Invalid(sa.Child("name"), n, msg))
				}
			}
			if ns := s.ServiceAccount.Namespace; ns == "" {
				errs = append(errs, field.Required(sa.Child("namespace"), "a service account subject needs its namespace"))
			} else {
				for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
					errs = append(errs, field.Invalid(sa.Child("namespace"), ns, msg))
				}
			}
		}
		forbid(s.User != nil, "user", "User")
		forbid(s.Group != nil, "group", "Group")
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, []string{
			string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}))
	}
	return errs
}

// validateWildcardList checks a list that must not be empty (when
// required) and may hold the wildcard only alone.
func validateWildcardList(list []string, wildcard string, required bool, path *field.Path, what string) field.ErrorList {
	switch {
	case len(list) == 0 && required:
		return field.ErrorList{field.Required(path, fmt.Sprintf("at least one %s is required", what))}
	case len(list) > 1 && slices.Contains(list, wildcard):
		return field.ErrorList{field.Invalid(path, list, fmt.Sprintf("'%s' must be the only %s when present", wildcard, what))}
	}
	return nil
}

func validateVerbs(verbs []string, path *field.Path) field.ErrorList {
	if errs := validateWildcardList(verbs, flowcontrolv1.VerbAll, true, path, "verb"); errs != nil {
		return errs
	}
	if len(verbs) == 1 && verbs[0] == flowcontrolv1.VerbAll {
		return nil
	}
	for _, v := range verbs {
		if !slices.Contains(resourceVerbs, v) {
			return field.ErrorList{field.NotSupported(path, verbs, resourceVerbs)}
		}
	}
	return nil
}

func validateResourcePolicyRule(r *flowcontrolv1.ResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, path.Child("verbs"))
	errs = append(errs, validateWildcardList(r.APIGroups, flowcontrolv1.APIGroupAll, true, path.Child("apiGroups"), "API group")...)
	errs = append(errs, validateWildcardList(r.Resources, flowcontrolv1.ResourceAll, true, path.Child("resources"), "resource")...)
	nsPath := path.Child("namespaces")
	if len(r.Namespaces) == 0 && !r.ClusterScope {
		return append(errs, field.Required(nsPath, "a rule that is not cluster scoped needs at least one namespace"))
	}
	if ns := validateWildcardList(r.Namespaces, flowcontrolv1.NamespaceEvery, false, nsPath, "namespace"); ns != nil {
		return append(errs, ns...)
	}
	for i, ns := range r.Namespaces {
		if ns == flowcontrolv1.NamespaceEvery {
			continue
		}
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(nsPath.Index(i), ns, "must be '*' or a DNS-1123 label: "+msg))
		}
	}
	return errs
}

func validateNonResourcePolicyRule(r *flowcontrolv1.NonResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, path.Child("verbs"))
	urls := path.Child("nonResourceURLs")
	if e := validateWildcardList(r.NonResourceURLs, flowcontrolv1.NonResourceAll, true, urls, "non-resource URL"); e != nil {
		return append(errs, e...)
	}
	if len(r.NonResourceURLs) == 1 && r.NonResourceURLs[0] == flowcontrolv1.NonResourceAll {
		return errs
	}
	for i, u := range r.NonResourceURLs {
		if msg := nonResourceURLProblem(u); msg != "" {
			errs = append(errs, field.Invalid(urls.Index(i), u, msg))
		}
	}
	return errs
}

// nonResourceURLProblem says what is wrong with a rule's non-resource
// path, or "": it is "/" or starts with "/", has no spaces and no "//",
// and a "*" only as a final "/*".
func nonResourceURLProblem(u string) string {
	switch {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with '/'"
	case strings.Contains(u, " "):
		return "must not contain spaces"
	case strings.Contains(u, "//"):
		return "must not contain '//'"
	}
	if n := strings.Count(u, "*"); n > 1 || (n == 1 && !strings.HasSuffix(u, "/*")) {
		return "'*' may only end the path, as '/*'"
	}
	return ""
}

func validateFlowSchemaStatus(st *flowcontrolv1.FlowSchemaStatus, path *field.Path) field.ErrorList {
	return uniqueConditionTypes(st.Conditions, func(c flowcontrolv1.FlowSchemaCondition) flowcontrolv1.FlowSchemaConditionType { return c.Type }, path)
}

func validatePriorityLevelStatus(st *flowcontrolv1.PriorityLevelConfigurationStatus, path *field.Path) field.ErrorList {
	return uniqueConditionTypes(st.Conditions, func(c flowcontrolv1.PriorityLevelConfigurationCondition) flowcontrolv1.PriorityLevelConfigurationConditionType {
		return c.Type
	}, path)
}

// uniqueConditionTypes requires every status condition to have a type,
// each at most once.
func uniqueConditionTypes[C any, T ~string](conds []C, typeOf func(C) T, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[T]bool{}
	for i, c := range conds {
		p := path.Child("conditions").Index(i)
		if t := typeOf(c); t == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		} else if seen[t] {
			errs = append(errs, field.Duplicate(p.Child("type"), t))
		} else {
			seen[t] = true
		}
	}
	return errs
}

func validatePriorityLevelConfiguration(p *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if (p.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (p.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(spec.Child("type"), p.Spec.Type, "the type is Exempt exactly when the name is 'exempt'"))
	}
	switch p.Spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if p.Spec.Limited != nil {
			errs = append(errs, field.Forbidden(spec.Child("limited"), "only a Limited priority level may set it"))
		}
		if e := p.Spec.Exempt; e != nil {
			if v := e.NominalConcurrencyShares; v != nil && *v < 0 {
				errs = append(errs, field.Invalid(spec.Child("exempt", "nominalConcurrencyShares"), *v, "must not be negative"))
			}
			errs = append(errs, validatePercent(e.LendablePercent, spec.Child("exempt", "lendablePercent"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if p.Spec.Exempt != nil {
			errs = append(errs, field.Forbidden(spec.Child("exempt"), "only an Exempt priority level may set it"))
		}
		if p.Spec.Limited == nil {
			errs = append(errs, field.Required(spec.Child("limited"), "required for a Limited priority level"))
		} else {
			errs = append(errs, validateLimited(p.Spec.Limited, spec.Child("limited"))...)
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), p.Spec.Type, []string{
			string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}))
	}
	if mand := flowcontrol.MandatoryPriorityLevel(p.Name); mand != nil {
		want := mand.Spec.DeepCopy()
		// The exempt level's shares and lendable percentage are the
		// administrator's to choose.
		if p.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && p.Spec.Exempt != nil {
			want.Exempt.NominalConcurrencyShares = p.Spec.Exempt.NominalConcurrencyShares
			want.Exempt.LendablePercent = p.Spec.Exempt.LendablePercent
		}
		if !apiequality.Semantic.DeepEqual(p.Spec, *want) {
			errs = append(errs, field.Invalid(spec, p.Spec, fmt.Sprintf("the spec of the mandatory PriorityLevelConfiguration %q is fixed", p.Name)))
		}
	}
	return append(errs, validatePriorityLevelStatus(&p.Status, field.NewPath("status"))...)
}

func validatePercent(v *int32, path *field.Path) field.ErrorList {
	if v != nil && (*v < 0 || *v > 100) {
		return field.ErrorList{field.Invalid(path, *v, "must be between 0 and 100")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v := l.NominalConcurrencyShares; v != nil && *v < 0 {
		errs = append(errs, field.Invalid(path.Child("nominalConcurrencyShares"), *v, "must not be negative"))
	}
	errs = append(errs, validatePercent(l.LendablePercent, path.Child("lendablePercent"))...)
	if v := l.BorrowingLimitPercent; v != nil && *v < 0 {
		errs = append(errs, field.Invalid(path.Child("borrowingLimitPercent"), *v, "must not be negative"))
	}
	lr := path.Child("limitResponse")
	switch l.LimitResponse.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if l.LimitResponse.Queuing != nil {
			errs = append(errs, field.Forbidden(lr.Child("queuing"), "only the Queue limit response may set it"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if q := l.LimitResponse.Queuing; q == nil {
			errs = append(errs, field.Required(lr.Child("queuing"), "required for the Queue limit response"))
		} else {
			errs = append(errs, validateQueuing(q, lr.Child("queuing"))...)
		}
	default:
		errs = append(errs, field.NotSupported(lr.Child("type"), l.LimitResponse.Type, []string{
			string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}))
	}
	return errs
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(path.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	switch {
	case q.Queues <= 0:
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, "must be positive"))
	case q.Queues > maxQueues:
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize, fmt.Sprintf("must not be greater than queues (%d)", q.Queues)))
	case entropyBits(q.Queues, q.HandSize) > maxHashBits:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize,
			fmt.Sprintf("dealing %d of %d queues needs %d bits of a flow's hash, more than %d", q.HandSize, q.Queues, entropyBits(q.Queues, q.HandSize), maxHashBits)))
	}
	return errs
}

// entropyBits is how many bits of hash shuffle sharding needs to deal
// hand cards out of deck: hand * log2(deck), rounded up.
func entropyBits(deck, hand int32) int {
	return int(math.Ceil(math.Log2(float64(deck)) * float64(hand)))
}
