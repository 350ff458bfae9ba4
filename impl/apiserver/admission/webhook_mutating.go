package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

var mutatingConfigResource = schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}

// MutatingWebhook calls the MutatingWebhookConfigurations' webhooks that
// match a request, one after another in configuration-name order, sending
// an admission.k8s.io/v1 AdmissionReview over HTTPS to clientConfig.url
// or clientConfig.service (verified against clientConfig.caBundle). A
// JSONPatch response is applied to the object; a refusal ends the request
// with the webhook's status; a failed call (error, timeout, bad response)
// ends it with 500 unless the failurePolicy is Ignore. Webhooks with
// reinvocationPolicy IfNeeded are called once more when a later webhook
// changed the object, after the Chain has run every in-tree mutating
// plugin again (Admit).
//
// A patched object is defaulted again, as kube-apiserver's dispatcher runs
// the scheme's defaulter on it: a container a webhook adds gets its
// imagePullPolicy and termination message defaults, a changed
// serviceAccountName is mirrored in serviceAccount. The defaults are the
// API server's (the StoreGetter given to NewPlugins, when it is an
// ObjectDefaulter); without one a patched object is not defaulted.
type MutatingWebhook struct {
	*webhookDispatcher
	// defaulter, if not nil, defaults a patched object.
	defaulter ObjectDefaulter
}

// ObjectDefaulter fills the unset fields of an object of a kind with the
// defaults of the resource serving that kind (*apiserver.Server is one).
type ObjectDefaulter interface {
	DefaultObject(gvk schema.GroupVersionKind, obj runtime.Object)
}

func newMutatingWebhook(d *deps) (any, error) {
	w, err := newDispatcher(d, mutatingConfigResource,
		func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		func(objs []runtime.Object) []webhook {
			return mutatingWebhooks(typed[admissionregistrationv1.MutatingWebhookConfiguration](objs))
		}, d.opts.MutatingWebhookCredentials)
	if err != nil {
		return nil, err
	}
	od, _ := d.stores.(ObjectDefaulter)
	return &MutatingWebhook{webhookDispatcher: w, defaulter: od}, nil
}

func mutatingWebhooks(configs []admissionregistrationv1.MutatingWebhookConfiguration) []webhook {
	sortByName(configs, func(c *admissionregistrationv1.MutatingWebhookConfiguration) string { return c.Name })
	var out []webhook
	for _, c := range configs {
		for _, h := range c.Webhooks {
			w := toWebhook(c.Name, h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions)
			w.reinvoke = h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
			w.mutating = true
			w.index = len(out)
			out = append(out, w)
		}
	}
	return out
}

// Admit implements Mutator. As kube-apiserver's dispatcher, whether to
// call each webhook is decided at its turn, its objectSelector matched
// against the object as the webhooks before it left it, in the
// reinvocation round too (a webhook that no longer matches is not
// reinvoked, one not called in the first round is never called).
//
// Reinvocation is kube-apiserver's: a webhook changing the object makes
// the IfNeeded webhooks called before it due a second call, and asks the
// Chain for a second run of every mutating plugin; in that run this
// plugin calls only the webhooks due, and all the IfNeeded webhooks
// called so far when the in-tree plugins changed the object since this
// plugin last left it. Outside a Chain (a lone plugin) both rounds are
// run here, without in-tree plugins between them.
func (p *MutatingWebhook) Admit(ctx context.Context, a *Attributes) error {
	saved := a.reinvocation
	a.reinvocation = nil
	defer func() { a.reinvocation = saved }()
	if err := p.admitRound(ctx, a); err != nil || a.reinvocation == nil || !a.reinvocation.again {
		return err
	}
	a.reinvocation.second = true
	return p.admitRound(ctx, a)
}

// admitRound is one run of the plugin in the round a.reinvocation says
// (the first while it is nil).
func (p *MutatingWebhook) admitRound(ctx context.Context, a *Attributes) error {
	hooks, m, err := p.candidates(ctx, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	if a.reinvocation == nil {
		a.reinvocation = &reinvocation{invoked: map[int]bool{}, due: map[int]bool{}}
	}
	r := a.reinvocation
	makeDue := func() {
		for i := range r.invoked {
			r.due[i] = true
		}
		clear(r.invoked)
	}
	if r.second && r.last != nil && !apiequality.Semantic.DeepEqual(r.last, a.Object) {
		makeDue()
	}
	defer func() {
		r.last = nil
		if a.Object != nil && !reflect.ValueOf(a.Object).IsNil() {
			r.last = a.Object.DeepCopyObject()
		}
	}()
	round := 0
	if r.second {
		round = 1
	}
	for _, w := range hooks {
		h, ok, err := m.shouldCall(ctx, w, a)
		if err != nil {
			return err
		}
		if !ok || r.second && !r.due[w.index] {
			continue
		}
		changed, err := p.callOne(ctx, h, a, round)
		if err != nil {
			return err
		}
		if changed {
			makeDue()
			r.again = true
		}
		if w.reinvoke {
			r.invoked[w.index] = true
		}
	}
	return nil
}

// callOne calls one webhook and applies its patch; changed reports whether
// the object changed. A webhook called for an equivalent resource patches
// the object converted to its kind, which is then converted back. round
// is 0, or 1 for a reinvocation.
//
// As kube-apiserver's dispatcher, the call is recorded in the audit log:
// mutation.webhook.admission.k8s.io/round_<round>_index_<index> says
// whether the webhook changed the object (however the call ended), an
// applied patch is recorded under patch.webhook.admission.k8s.io/ (Request
// level and above), and a failed call its failurePolicy Ignore lets pass
// under failed-open.mutation.webhook.admission.k8s.io/ (the webhook's name).
// A dry-run request to a webhook with side effects is refused here, its
// mutation annotation recorded (mutated false), as upstream's.
func (p *MutatingWebhook) callOne(ctx context.Context, m matchedHook, a *Attributes, round int) (changed bool, err error) {
	w := m.webhook
	suffix := fmt.Sprintf("round_%d_index_%d", round, w.index)
	defer func() {
		v, _ := json.Marshal(mutationAnnotation{Configuration: w.config, Webhook: w.name, Mutated: changed})
		audit.AddAnnotation(ctx, mutationAnnotationPrefix+suffix, string(v))
	}()
	// As kube-apiserver, a call failed by the end of the request's own
	// context is not recorded as failed open, and a request whose context
	// has ended goes no further than the failure its policy let through.
	callFailed := func(err error) error {
		if err := p.callFailed(w, err); err != nil {
			return err
		}
		if !errors.Is(err, context.Canceled) {
			audit.AddAnnotation(ctx, "failed-open."+mutationAnnotationPrefix+suffix, w.name)
		}
		if ctx.Err() != nil {
			return errRequestEnded()
		}
		return nil
	}
	if err := dryRunRefusal(&w, a); err != nil {
		return false, err
	}
	va, err := p.versioned(a, m.as)
	if err != nil {
		return false, err
	}
	rev, err := reviewFor(va, a)
	if err != nil {
		return false, err
	}
	start := time.Now()
	resp, err := p.call(ctx, w, rev)
	// Left out of the request's SLI latency, as kube-apiserver tracks its
	// mutating calls (summed: they run one after another).
	request.ExcludedLatencyFrom(ctx).AddMutatingWebhook(time.Since(start))
	if err != nil {
		return false, callFailed(err)
	}
	addResponseWarnings(ctx, w.name, resp)
	if !resp.Allowed {
		return false, denied(w.name, resp.Result)
	}
	// readResponse has checked that a patch comes with its type. As
	// kube-apiserver: an empty patch or an empty list of operations is no
	// change, whatever the type; one that does not decode is a failed
	// call; a patch of a DELETE (or CONNECT), which has no object, is a
	// 500 whatever the failurePolicy (it is not a failed call); then a
	// type other than JSONPatch is a failed call.
	if len(resp.Patch) == 0 {
		return false, nil
	}
	ops, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return false, callFailed(fmt.Errorf("received undecodable patch in webhook response: %w", err))
	}
	if len(ops) == 0 {
		return false, nil
	}
	if va.Object == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", w.name))
	}
	if pt := *resp.PatchType; pt != admissionv1.PatchTypeJSONPatch {
		return false, callFailed(fmt.Errorf("unsupported patch type %q", pt))
	}
	changed, err = applyJSONPatch(va, rev.Request.Object.Raw, ops)
	if err != nil {
		return false, err
	}
	if v, err := json.Marshal(patchAnnotation{Configuration: w.config, Webhook: w.name, Patch: ops, PatchType: string(admissionv1.PatchTypeJSONPatch)}); err == nil {
		audit.AddAnnotationAtLevel(ctx, patchAnnotationPrefix+suffix, string(v), audit.LevelRequest)
	}
	// As kube-apiserver: any applied patch is followed by defaulting;
	// changed is decided before it.
	if p.defaulter != nil {
		p.defaulter.DefaultObject(va.Kind, va.Object)
	}
	if changed && va != a {
		if err := p.convertBack(a, va); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// The audit annotations of a mutating webhook call (kube-apiserver's keys
// and values).
const (
	mutationAnnotationPrefix = "mutation.webhook.admission.k8s.io/"
	patchAnnotationPrefix    = "patch.webhook.admission.k8s.io/"
)

type mutationAnnotation struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Mutated       bool   `json:"mutated"`
}

type patchAnnotation struct {
	Configuration string          `json:"configuration"`
	Webhook       string          `json:"webhook"`
	Patch         jsonpatch.Patch `json:"patch,omitempty"`
	PatchType     string          `json:"patchType,omitempty"`
}

// applyJSONPatch patches the object's JSON and decodes the result back
// into a.Object in place; it reports whether the object changed. As
// kube-apiserver, a patch that does not apply and a result that does not
// decode (keys are case-sensitive; a missing apiVersion or kind is the
// object's) or is of another kind are a 500, whatever the failurePolicy;
// and changed compares the decoded objects semantically (the result's
// apiVersion and kind as the patch left them), not their JSON: a field
// the kind does not have, or a quantity written in another form, is no
// change.
func applyJSONPatch(a *Attributes, original []byte, patch jsonpatch.Patch) (bool, error) {
	patched, err := patch.Apply(original)
	if err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("applying the webhook's JSON patch: %w", err))
	}
	fresh := reflect.New(reflect.TypeOf(a.Object).Elem()).Interface().(runtime.Object)
	if err := utiljson.Unmarshal(patched, fresh); err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("decoding the object the webhook's patch made: %w", err))
	}
	gvk := fresh.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvk.Kind = a.Kind.Kind
	}
	if gvk.Version == "" {
		gvk.Group, gvk.Version = a.Kind.Group, a.Kind.Version
	}
	if gvk != a.Kind {
		return false, apierrors.NewInternalError(fmt.Errorf("the webhook's patch changed the object's kind to %s", gvk))
	}
	before := a.Object.DeepCopyObject()
	before.GetObjectKind().SetGroupVersionKind(a.Kind)
	changed := !apiequality.Semantic.DeepEqual(before, fresh)
	fresh.GetObjectKind().SetGroupVersionKind(gvk)
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(fresh).Elem())
	return changed, nil
}
