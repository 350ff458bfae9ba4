package filters

import (
	"errors"
	"net/http"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The response headers naming the request's FlowSchema and priority level,
// in canonical form (set without canonicalising on every request).
var (
	flowSchemaUIDHeader    = http.CanonicalHeaderKey(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	priorityLevelUIDHeader = http.CanonicalHeaderKey(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
)

// WithPriorityAndFairness is API Priority and Fairness, kube-apiserver's
// default in place of WithMaxInFlight (same place in the chain: after
// authentication and impersonation). Each request is classified (response
// headers X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID) and
// waits for a seat of its priority level; turned away it gets 429
// TooManyRequests with Retry-After. A watch waits for a seat like any
// request and gives it back as it starts streaming; the other long-running
// requests (exec, attach, log, portforward, proxy) are let through
// unclassified, as kube-apiserver does. The seat is given back however the
// handler ends, a panic included.
func WithPriorityAndFairness(next http.Handler, c *codec.Codecs, fc *flowcontrol.Controller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := request.InfoFrom(r.Context())
		if info == nil {
			next.ServeHTTP(w, r)
			return
		}
		watch := info.IsResourceRequest && info.Verb == "watch"
		if info.IsLongRunning() && !watch {
			next.ServeHTTP(w, r)
			return
		}
		cl := fc.Classify(request.UserFrom(r.Context()), info)
		h := w.Header()
		h[flowSchemaUIDHeader], h[priorityLevelUIDHeader] = cl.HeaderValues()
		req, err := fc.Wait(r.Context(), cl)
		if err != nil {
			retryAfter := 1
			if rej := (*flowcontrol.Rejection)(nil); errors.As(err, &rej) {
				retryAfter = int(rej.RetryAfter)
			}
			endpoints.WriteStatusError(w, r, c, apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfter))
			return
		}
		if watch {
			fc.Release(req)
			next.ServeHTTP(w, r)
			return
		}
		defer fc.Release(req)
		next.ServeHTTP(w, r)
	})
}
