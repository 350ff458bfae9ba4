package admission

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// webhook is one admission webhook of either kind, defaults applied.
type webhook struct {
	config            string
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	matchPolicy       admissionregistrationv1.MatchPolicyType
	failurePolicy     admissionregistrationv1.FailurePolicyType
	namespaceSelector labels.Selector
	objectSelector    labels.Selector
	sideEffects       admissionregistrationv1.SideEffectClass
	timeout           time.Duration
	reinvoke          bool
	// mutating: a MutatingWebhookConfiguration's, which may patch
	// (readResponse refuses a validating webhook's patch).
	mutating bool
	// invalid holds a selector that does not parse: calling it fails.
	invalid error
}

var admissionConfigResources = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: true,
}

func toWebhook(config, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType, nsSel, objSel *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32) webhook {
	w := webhook{config: config, name: name, clientConfig: cc, rules: rules,
		failurePolicy: admissionregistrationv1.Fail, matchPolicy: admissionregistrationv1.Equivalent, timeout: 10 * time.Second,
		namespaceSelector: labels.Everything(), objectSelector: labels.Everything(),
		sideEffects: admissionregistrationv1.SideEffectClassUnknown}
	if fp != nil {
		w.failurePolicy = *fp
	}
	if mp != nil {
		w.matchPolicy = *mp
	}
	if se != nil {
		w.sideEffects = *se
	}
	if timeout != nil {
		w.timeout = time.Duration(*timeout) * time.Second
	}
	var err error
	if nsSel != nil {
		if w.namespaceSelector, err = metav1.LabelSelectorAsSelector(nsSel); err != nil {
			w.invalid = fmt.Errorf("invalid namespaceSelector: %w", err)
		}
	}
	if objSel != nil {
		if w.objectSelector, err = metav1.LabelSelectorAsSelector(objSel); err != nil {
			w.invalid = fmt.Errorf("invalid objectSelector: %w", err)
		}
	}
	return w
}

// webhookDispatcher finds the webhooks a request matches and calls them.
type webhookDispatcher struct {
	list       func(ctx context.Context) ([]webhook, error)
	namespaces NamespaceGetter
	clients    *webhookClients
	// services resolves webhooks addressed by service (nil: the server
	// serves no services; such webhooks fail).
	services *serviceResolver
	// loopback, when set, is the server's own client configuration, which
	// webhooks at the URL host kubernetes.default.svc:443 are called with.
	loopback LoopbackGetter
	// equivalents, when not nil, lets matchPolicy Equivalent match
	// equivalent resources (nil: only the request's own).
	equivalents EquivalentResourceMapper
	log         *slog.Logger
}

// Start implements Starter: the webhook clients' idle connections are
// closed when the server stops.
func (d *webhookDispatcher) Start(ctx context.Context) {
	<-ctx.Done()
	d.clients.closeIdle()
}

// matching returns the webhooks a request goes to, in configuration-name
// order, each with the equivalent resource it is called for under
// matchPolicy Equivalent, if not the request's; a dry-run request that
// reaches a webhook with side effects is refused.
func (d *webhookDispatcher) matching(ctx context.Context, a *Attributes) ([]matchedHook, error) {
	if admissionConfigResources[a.Resource.GroupResource()] {
		return nil, nil // never lock the configurations themselves out
	}
	hooks, err := d.list(ctx)
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	var nsLabels labels.Set
	nsLoaded := false
	var eqs []EquivalentResource
	eqsLoaded := false
	equivalents := func() []EquivalentResource {
		if !eqsLoaded && d.equivalents != nil {
			eqs = d.equivalents.EquivalentResources(a.Resource, a.Subresource)
		}
		eqsLoaded = true
		return eqs
	}
	var out []matchedHook
	for _, w := range hooks {
		ok, as := matchResource(&w, a, equivalents)
		if !ok {
			continue
		}
		if w.invalid == nil && !w.namespaceSelector.Empty() {
			set, err := d.namespaceLabels(ctx, a, &nsLabels, &nsLoaded)
			if err != nil {
				return nil, err
			}
			if set != nil && !w.namespaceSelector.Matches(set) {
				continue
			}
		}
		if w.invalid == nil && !w.objectSelector.Empty() && !objectSelectorMatches(w.objectSelector, a) {
			continue
		}
		if a.DryRun && w.sideEffects != admissionregistrationv1.SideEffectClassNone && w.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", w.name))
		}
		out = append(out, matchedHook{webhook: w, as: as})
	}
	return out, nil
}

// namespaceLabels are the labels a namespaceSelector is matched against:
// the namespace's for a namespaced request, the object's own for a
// Namespace, none (nil: the selector does not apply) otherwise.
func (d *webhookDispatcher) namespaceLabels(ctx context.Context, a *Attributes, cache *labels.Set, loaded *bool) (labels.Set, error) {
	if *loaded {
		return *cache, nil
	}
	*loaded = true
	switch {
	case a.Resource.GroupResource() == nsResource && a.Subresource == "":
		for _, obj := range []runtime.Object{a.Object, a.OldObject} {
			if m, err := meta.Accessor(obj); obj != nil && err == nil {
				*cache = labels.Set(m.GetLabels())
				return *cache, nil
			}
		}
		*cache = labels.Set{}
	case a.Namespace != "":
		ns, err := d.namespaces(ctx, a.Namespace, false)
		if apierrors.IsNotFound(err) {
			ns, err = d.namespaces(ctx, a.Namespace, true)
		}
		if apierrors.IsNotFound(err) {
			*cache = labels.Set{}
			return *cache, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s for webhook selectors: %w", a.Namespace, err)
		}
		*cache = labels.Set(ns.Labels)
	}
	return *cache, nil
}

func objectSelectorMatches(sel labels.Selector, a *Attributes) bool {
	for _, obj := range []runtime.Object{a.Object, a.OldObject} {
		if obj == nil {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			return true
		}
	}
	return false
}

// rulesMatch: some rule names the operation, group, version, resource (and
// subresource) and scope of the request.
func rulesMatch(rules []admissionregistrationv1.RuleWithOperations, a *Attributes) bool {
	for _, r := range rules {
		if ruleMatches(&r, a) {
			return true
		}
	}
	return false
}

func ruleMatches(r *admissionregistrationv1.RuleWithOperations, a *Attributes) bool {
	opOK := false
	for _, op := range r.Operations {
		if op == admissionregistrationv1.OperationAll || string(op) == string(a.Operation) {
			opOK = true
		}
	}
	if !opOK || !anyMatches(r.APIGroups, a.Resource.Group) || !anyMatches(r.APIVersions, a.Resource.Version) {
		return false
	}
	resOK := false
	for _, res := range r.Resources {
		if resourceMatches(res, a.Resource.Resource, a.Subresource) {
			resOK = true
		}
	}
	if !resOK {
		return false
	}
	scope := admissionregistrationv1.AllScopes
	if r.Scope != nil {
		scope = *r.Scope
	}
	namespaced := a.Namespace != "" && a.Resource.GroupResource() != nsResource
	switch scope {
	case admissionregistrationv1.ClusterScope:
		return !namespaced
	case admissionregistrationv1.NamespacedScope:
		return namespaced
	}
	return true
}

func anyMatches(items []string, v string) bool {
	for _, i := range items {
		if i == "*" || i == v {
			return true
		}
	}
	return false
}

// resourceMatches: "pods", "pods/status", "*" (no subresources), "*/*",
// "pods/*", "*/status".
func resourceMatches(rule, res, sub string) bool {
	want := res
	if sub != "" {
		want = res + "/" + sub
	}
	if rule == want || rule == "*/*" {
		return true
	}
	ruleRes, ruleSub, hasSub := strings.Cut(rule, "/")
	if !hasSub {
		return rule == "*" && sub == ""
	}
	return (ruleRes == "*" || ruleRes == res) && (ruleSub == "*" || ruleSub == sub) && sub != ""
}

func newDispatcher(d *deps, gr schema.GroupResource, newList func() runtime.Object, toWebhooks func([]runtime.Object) []webhook) (*webhookDispatcher, error) {
	c, err := d.cache(gr, newList)
	if err != nil {
		return nil, err
	}
	ns, err := d.namespaces()
	if err != nil {
		return nil, err
	}
	list := func(ctx context.Context) ([]webhook, error) {
		objs, err := c.list(ctx, "")
		if err != nil {
			return nil, err
		}
		return toWebhooks(objs), nil
	}
	services, err := newServiceResolver(d)
	if err != nil {
		return nil, err
	}
	eq, _ := d.stores.(EquivalentResourceMapper)
	lb, _ := d.stores.(LoopbackGetter)
	return &webhookDispatcher{list: list, namespaces: ns, clients: &webhookClients{}, services: services, loopback: lb, equivalents: eq, log: slog.Default()}, nil
}

// sortByName orders configurations by name, as kube-apiserver calls them.
func sortByName[T any](items []T, name func(*T) string) {
	if len(items) < 2 {
		return // nothing to order (sort.Slice would still allocate)
	}
	sort.Slice(items, func(i, j int) bool { return name(&items[i]) < name(&items[j]) })
}
