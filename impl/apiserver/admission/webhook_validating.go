package admission

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

var validatingConfigResource = schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}

// ValidatingWebhook calls the ValidatingWebhookConfigurations' webhooks
// that match a request, all at once (as kube-apiserver does), with the
// same AdmissionReview, matching and failure policy as MutatingWebhook.
// Any refusal or failed call under failurePolicy Fail rejects the request;
// the first to arrive is reported, as kube-apiserver's.
type ValidatingWebhook struct {
	*webhookDispatcher
}

func newValidatingWebhook(d *deps) (any, error) {
	w, err := newDispatcher(d, validatingConfigResource,
		func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		func(objs []runtime.Object) []webhook {
			return validatingWebhooks(typed[admissionregistrationv1.ValidatingWebhookConfiguration](objs))
		}, d.opts.ValidatingWebhookCredentials)
	if err != nil {
		return nil, err
	}
	return &ValidatingWebhook{w}, nil
}

func validatingWebhooks(configs []admissionregistrationv1.ValidatingWebhookConfiguration) []webhook {
	sortByName(configs, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) string { return c.Name })
	var out []webhook
	for _, c := range configs {
		for _, h := range c.Webhooks {
			out = append(out, toWebhook(c.Name, h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions))
		}
	}
	return out
}

// Validate implements Validator.
func (p *ValidatingWebhook) Validate(ctx context.Context, a *Attributes) error {
	hooks, err := p.matching(ctx, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	// As kube-apiserver: whether to call each webhook is decided for all
	// before any is called.
	if last := hooks[len(hooks)-1]; last.shouldCallErr != nil {
		return last.shouldCallErr
	}
	// One review per resource the webhooks are called for: the request's,
	// and any equivalent one a webhook matched instead.
	reviews := map[schema.GroupVersionResource]*admissionv1.AdmissionReview{}
	for _, m := range hooks {
		gvr := a.Resource
		if m.as != nil {
			gvr = m.as.Resource
		}
		if reviews[gvr] != nil {
			continue
		}
		va, err := p.versioned(a, m.as)
		if err != nil {
			return err
		}
		if reviews[gvr], err = reviewFor(va, a); err != nil {
			return err
		}
	}
	// As kube-apiserver, none is called for a request whose context has
	// already ended.
	if ctx.Err() != nil {
		return errRequestEnded()
	}
	// As kube-apiserver, the first failure to arrive is the request's
	// (the others are dropped); it is recorded before the webhook's
	// warnings and audit annotations are.
	var (
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	var wg sync.WaitGroup
	for i, m := range hooks {
		w := m.webhook
		rev := reviews[a.Resource]
		if m.as != nil {
			rev = reviews[m.as.Resource]
		}
		wg.Go(func() {
			// As kube-apiserver, a dry run a webhook with side effects
			// cannot take is refused in its call, the others still called.
			if err := dryRunRefusal(&w, a); err != nil {
				fail(err)
				return
			}
			start := time.Now()
			resp, err := p.call(ctx, w, rev)
			// Left out of the request's SLI latency, as kube-apiserver
			// tracks its validating calls (the longest: they run in
			// parallel).
			request.ExcludedLatencyFrom(ctx).AddValidatingWebhook(time.Since(start))
			if err != nil {
				// As kube-apiserver: a failure let through is recorded,
				// indexed among the webhooks the request matched.
				if err := p.callFailed(w, err); err != nil {
					fail(err)
					return
				}
				audit.AddAnnotation(ctx, fmt.Sprintf("failed-open.validating.webhook.admission.k8s.io/round_0_index_%d", i), w.name)
				return
			}
			if !resp.Allowed {
				fail(denied(w.name, resp.Result))
			}
			addResponseWarnings(ctx, w.name, resp)
		})
	}
	wg.Wait()
	return first
}
