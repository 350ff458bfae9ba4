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
	// reviewVersions is admissionReviewVersions: the AdmissionReview
	// versions the webhook takes, by preference.
	reviewVersions []string
	// index is the webhook's place among all the mutating webhooks of
	// every configuration (its audit annotations' index).
	index int
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
	fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType, nsSel, objSel *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32,
	reviewVersions []string) webhook {
	w := webhook{config: config, name: name, clientConfig: cc, rules: rules, reviewVersions: reviewVersions,
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
// matchPolicy Equivalent, if not the request's. As kube-apiserver's
// ShouldCallHook, a namespace that cannot be read for a webhook the
// request would otherwise go to ends the list: that last entry carries
// the error in shouldCallErr, for the dispatcher to return at that
// webhook's turn (the mutating one calls the webhooks before it first;
// the validating one decides for all before calling any). A dry-run
// request to a webhook with side effects is refused at its call
// (dryRunRefusal), not here.
func (d *webhookDispatcher) matching(ctx context.Context, a *Attributes) ([]matchedHook, error) {
	hooks, m, err := d.candidates(ctx, a)
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	var out []matchedHook
	for _, w := range hooks {
		h, ok, err := m.shouldCall(ctx, w, a)
		if err != nil {
			return append(out, matchedHook{webhook: w, as: h.as, shouldCallErr: err}), nil
		}
		if ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// candidates lists the webhooks that may be called for a request (none
// for the admission configurations themselves) with the matcher that
// decides, webhook by webhook, whether to call each.
func (d *webhookDispatcher) candidates(ctx context.Context, a *Attributes) ([]webhook, *hookMatcher, error) {
	if admissionConfigResources[a.Resource.GroupResource()] {
		return nil, nil, nil // never lock the configurations themselves out
	}
	hooks, err := d.list(ctx)
	if err != nil || len(hooks) == 0 {
		return nil, nil, err
	}
	return hooks, &hookMatcher{d: d}, nil
}

// hookMatcher decides for one request whether to call a webhook, as
// kube-apiserver's ShouldCallHook; it reads the namespace's labels and
// the equivalent resources at most once per request.
type hookMatcher struct {
	d         *webhookDispatcher
	ns        namespaceLabelCache
	eqs       []EquivalentResource
	eqsLoaded bool
}

// shouldCall reports whether w is called for a (with the equivalent
// resource it is called for, if not the request's), the object selector
// matched against a's object as it is now. A namespace that cannot be
// read is an error only for a webhook the request would otherwise go to
// (kube-apiserver's ShouldCallHook reports it after the object selector
// and rules).
func (m *hookMatcher) shouldCall(ctx context.Context, w webhook, a *Attributes) (matchedHook, bool, error) {
	equivalents := func() []EquivalentResource {
		if !m.eqsLoaded && m.d.equivalents != nil {
			m.eqs = m.d.equivalents.EquivalentResources(a.Resource, a.Subresource)
		}
		m.eqsLoaded = true
		return m.eqs
	}
	ok, as := matchResource(&w, a, equivalents)
	if !ok {
		return matchedHook{}, false, nil
	}
	var nsErr error
	if w.invalid == nil && !w.namespaceSelector.Empty() {
		set, applies, err := m.d.namespaceLabels(ctx, a, &m.ns)
		if err == nil && applies && !w.namespaceSelector.Matches(set) {
			return matchedHook{}, false, nil
		}
		nsErr = err
	}
	if w.invalid == nil && !w.objectSelector.Empty() && !objectSelectorMatches(w.objectSelector, a) {
		return matchedHook{}, false, nil
	}
	if nsErr != nil {
		return matchedHook{webhook: w, as: as}, false, nsErr
	}
	return matchedHook{webhook: w, as: as}, true, nil
}

// dryRunRefusal is the 400 a dry-run request gets from a webhook whose
// side effects are not None or NoneOnDryRun, whatever its failurePolicy
// (kube-apiserver's dispatchers check it as they call the webhook).
func dryRunRefusal(w *webhook, a *Attributes) error {
	if a.DryRun && w.sideEffects != admissionregistrationv1.SideEffectClassNone && w.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", w.name))
	}
	return nil
}

// namespaceLabelCache holds a request's namespace labels once read.
type namespaceLabelCache struct {
	loaded, applies bool
	set             labels.Set
	err             error
}

// namespaceLabels are the labels a non-empty namespaceSelector is matched
// against, as kube-apiserver's namespace matcher reads them (applies is
// false when the selector does not apply: a cluster-scoped request not to
// a namespace):
//
//   - a create or update of a namespaces resource (of any group, as
//     upstream compares the resource name only) without subresource: the
//     object's own labels, the namespace not being stored yet or still
//     holding its old labels;
//   - otherwise (a Namespace's delete, status, finalize; a namespaced
//     object) the labels of the request's namespace, read from the cache
//     and, when missing there, from storage; missing there too, the
//     request fails with that NotFound error (404), as upstream keeps it
//     "for backwards compatibility".
//
// The stored namespace's labels are read once per request; a namespace
// write's own labels are read at every webhook's turn, since a mutating
// webhook's patch may have changed them (kube-apiserver's matcher reads
// them from the object the earlier webhooks patched).
func (d *webhookDispatcher) namespaceLabels(ctx context.Context, a *Attributes, c *namespaceLabelCache) (labels.Set, bool, error) {
	if namespaceWrite(a) {
		return d.readNamespaceLabels(ctx, a)
	}
	if !c.loaded {
		c.loaded = true
		c.set, c.applies, c.err = d.readNamespaceLabels(ctx, a)
	}
	return c.set, c.applies, c.err
}

// namespaceWrite: a is a create or update of a namespaces resource
// without subresource, matched by its object's own labels.
func namespaceWrite(a *Attributes) bool {
	return a.Resource.Resource == nsResource.Resource && a.Subresource == "" && (a.Operation == Create || a.Operation == Update)
}

func (d *webhookDispatcher) readNamespaceLabels(ctx context.Context, a *Attributes) (labels.Set, bool, error) {
	isNamespaces := a.Resource.Resource == nsResource.Resource
	if a.Namespace == "" && !isNamespaces {
		return nil, false, nil
	}
	if namespaceWrite(a) {
		m, err := meta.Accessor(a.Object)
		if err != nil {
			return nil, false, apierrors.NewInternalError(fmt.Errorf("reading the labels of the namespace written for webhook selectors: %v", err))
		}
		return labels.Set(m.GetLabels()), true, nil
	}
	if a.Namespace == "" {
		// Upstream's client refuses to read a namespace without a name (a
		// 500 there); no such namespace exists.
		return nil, false, apierrors.NewNotFound(nsResource, "")
	}
	ns, err := d.namespaces(ctx, a.Namespace, false)
	if apierrors.IsNotFound(err) {
		ns, err = d.namespaces(ctx, a.Namespace, true)
	}
	if apierrors.IsNotFound(err) {
		if _, ok := err.(apierrors.APIStatus); ok {
			return nil, false, err
		}
		return nil, false, apierrors.NewNotFound(nsResource, a.Namespace)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading namespace %s for webhook selectors: %w", a.Namespace, err)
	}
	return labels.Set(ns.Labels), true, nil
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

func newDispatcher(d *deps, gr schema.GroupResource, newList func() runtime.Object, toWebhooks func([]runtime.Object) []webhook, credentials *WebhookCredentials) (*webhookDispatcher, error) {
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
	return &webhookDispatcher{list: list, namespaces: ns, clients: &webhookClients{credentials: credentials}, services: services, loopback: lb, equivalents: eq, log: slog.Default()}, nil
}

// sortByName orders configurations by name, as kube-apiserver calls them.
func sortByName[T any](items []T, name func(*T) string) {
	if len(items) < 2 {
		return // nothing to order (sort.Slice would still allocate)
	}
	sort.Slice(items, func(i, j int) bool { return name(&items[i]) < name(&items[j]) })
}
