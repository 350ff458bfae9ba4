package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// webhook is one admission webhook of either kind, defaults applied.
type webhook struct {
	config            string
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     admissionregistrationv1.FailurePolicyType
	namespaceSelector labels.Selector
	objectSelector    labels.Selector
	sideEffects       admissionregistrationv1.SideEffectClass
	timeout           time.Duration
	reinvoke          bool
	// invalid holds a selector that does not parse: calling it fails.
	invalid error
}

var admissionConfigResources = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: true,
}

func toWebhook(config, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	fp *admissionregistrationv1.FailurePolicyType, nsSel, objSel *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32) webhook {
	w := webhook{config: config, name: name, clientConfig: cc, rules: rules,
		failurePolicy: admissionregistrationv1.Fail, timeout: 10 * time.Second,
		namespaceSelector: labels.Everything(), objectSelector: labels.Everything(),
		sideEffects: admissionregistrationv1.SideEffectClassUnknown}
	if fp != nil {
		w.failurePolicy = *fp
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
	log        *slog.Logger
}

// Start implements Starter: the webhook clients' idle connections are
// closed when the server stops.
func (d *webhookDispatcher) Start(ctx context.Context) {
	<-ctx.Done()
	d.clients.closeIdle()
}

// matching returns the webhooks a request goes to, in configuration-name
// order; a dry-run request that reaches a webhook with side effects is
// refused.
func (d *webhookDispatcher) matching(ctx context.Context, a *Attributes) ([]webhook, error) {
	if admissionConfigResources[a.Resource.GroupResource()] {
		return nil, nil // never lock the configurations themselves out
	}
	hooks, err := d.list(ctx)
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	var nsLabels labels.Set
	nsLoaded := false
	var out []webhook
	for _, w := range hooks {
		if !rulesMatch(w.rules, a) {
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
		out = append(out, w)
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
	ruleRes, ruleSub, hasSub := cutSlash(rule)
	if !hasSub {
		return rule == "*" && sub == ""
	}
	return (ruleRes == "*" || ruleRes == res) && (ruleSub == "*" || ruleSub == sub) && sub != ""
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// review builds the AdmissionReview a webhook receives.
func review(a *Attributes) (*admissionv1.AdmissionReview, error) {
	gvk := metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind}
	gvr := metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource}
	req := &admissionv1.AdmissionRequest{
		UID: uuid.NewUUID(), Kind: gvk, Resource: gvr, SubResource: a.Subresource,
		RequestKind: &gvk, RequestResource: &gvr, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(a.Operation),
		DryRun: &a.DryRun,
	}
	if req.Name == "" && a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			req.Name = m.GetName()
		}
	}
	if u := a.User; u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if req.Object.Raw, err = encodeWithKind(a.Object, a.Kind); err != nil {
		return nil, err
	}
	if req.OldObject.Raw, err = encodeWithKind(a.OldObject, a.Kind); err != nil {
		return nil, err
	}
	var opts runtime.Object
	var dryRun []string
	if a.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	switch a.Operation {
	case Create:
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: dryRun}
	case Update:
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, DryRun: dryRun}
	case Delete:
		opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}, DryRun: dryRun}
	}
	if opts != nil {
		if req.Options.Raw, err = json.Marshal(opts); err != nil {
			return nil, err
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

// encodeWithKind is obj's JSON with apiVersion and kind set.
func encodeWithKind(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(gvk)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the object for webhooks: %w", err)
	}
	return b, nil
}

// call sends the review to the webhook and returns its response.
func (d *webhookDispatcher) call(ctx context.Context, w webhook, rev *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, error) {
	if w.invalid != nil {
		return nil, w.invalid
	}
	if w.clientConfig.URL == nil {
		return nil, errors.New("webhooks addressed by service are not supported; use clientConfig.url")
	}
	client, err := d.clients.get(w.clientConfig.CABundle)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(rev)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *w.clientConfig.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	if err != nil {
		return nil, fmt.Errorf("failed to read the webhook's response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server responded with status %d", resp.StatusCode)
	}
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("received invalid webhook response: %w", err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", out.APIVersion, out.Kind)
	}
	if out.Response == nil {
		return nil, errors.New("webhook response was absent")
	}
	if out.Response.UID != rev.Request.UID {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", rev.Request.UID, out.Response.UID)
	}
	return out.Response, nil
}

// callFailed applies the webhook's failure policy to a failed call.
func (d *webhookDispatcher) callFailed(w webhook, err error) error {
	if w.failurePolicy == admissionregistrationv1.Ignore {
		d.log.Debug("admission webhook failed; ignored by its failurePolicy", "webhook", w.name, "err", err)
		return nil
	}
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", w.name, err))
}

// denied is a webhook's refusal as the client sees it.
func denied(name string, result *metav1.Status) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = deniedBy + ": " + st.Message
	case st.Reason != "":
		st.Message = deniedBy + ": " + string(st.Reason)
	default:
		st.Message = deniedBy + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// addResponseWarnings passes a webhook's warnings to the client and its
// audit annotations (as "<webhook name>/<key>") to the audit log.
func addResponseWarnings(ctx context.Context, name string, resp *admissionv1.AdmissionResponse) {
	for _, w := range resp.Warnings {
		AddWarning(ctx, w)
	}
	for k, v := range resp.AuditAnnotations {
		audit.AddAnnotation(ctx, name+"/"+k, v)
	}
}

// webhookClients are HTTPS clients by CA bundle, so connections are kept
// between calls.
type webhookClients struct {
	mu      sync.Mutex
	clients map[string]*http.Client
}

func (c *webhookClients) get(caBundle []byte) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[string(caBundle)]; ok {
		return cl, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("clientConfig.caBundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}}
	if c.clients == nil {
		c.clients = map[string]*http.Client{}
	}
	c.clients[string(caBundle)] = cl
	return cl, nil
}

func (c *webhookClients) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.CloseIdleConnections()
	}
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
	return &webhookDispatcher{list: list, namespaces: ns, clients: &webhookClients{}, log: slog.Default()}, nil
}

// sortByName orders configurations by name, as kube-apiserver calls them.
func sortByName[T any](items []T, name func(*T) string) {
	sort.Slice(items, func(i, j int) bool { return name(&items[i]) < name(&items[j]) })
}
