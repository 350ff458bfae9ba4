package filters

import (
	"errors"
	"net/http"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
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
// headers X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID), its work
// estimated by est (nil: one seat each), and waits for the seats of its
// priority level; turned away it gets 429 TooManyRequests with
// Retry-After. A watch is counted among the open watches (est.Watches)
// while it runs, and holds its seats until the storage says its initial
// events are sent (storage.WatchInitialized), or until it ends if that
// comes first (it failed, or the client went away). The other
// long-running requests (exec, attach, log, portforward, proxy) are let
// through unclassified, as kube-apiserver does. The seats are given back
// however the handler ends, a panic included.
func WithPriorityAndFairness(next http.Handler, c *codec.Codecs, fc *flowcontrol.Controller, est *flowcontrol.Estimator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The work is admitFlow's, so that this frame, under which the
		// rest of the request (a watch's whole life) runs, stays small.
		seat, forget, r := admitFlow(w, r, c, fc, est)
		if r == nil {
			return
		}
		if seat != nil {
			defer fc.Release(seat)
		}
		if forget != nil {
			defer forget()
		}
		next.ServeHTTP(w, r)
	})
}

// admitFlow classifies r and waits for its seats. It returns the request
// to go on with, or nil when it has answered r (429); the seats to
// release when r ends (nil for the long-running requests APF exempts); for
// a watch, what forgets it in the watch count (or nil), and its request
// carries the release of its seats once its initial events are sent.
//
//go:noinline
func admitFlow(w http.ResponseWriter, r *http.Request, c *codec.Codecs, fc *flowcontrol.Controller, est *flowcontrol.Estimator) (*flowcontrol.Request, func(), *http.Request) {
	info := request.InfoFrom(r.Context())
	if info == nil {
		return nil, nil, r
	}
	watch := info.IsResourceRequest && info.Verb == "watch"
	if info.IsLongRunning() && !watch {
		return nil, nil, r
	}
	cl := fc.Classify(request.UserFrom(r.Context()), info)
	h := w.Header()
	h[flowSchemaUIDHeader], h[priorityLevelUIDHeader] = cl.HeaderValues()
	var work flowcontrol.WorkEstimate
	if est != nil {
		var watchers int
		work, watchers = est.Estimate(info, r.URL.RawQuery, func() int { return fc.MaxSeats(cl) })
		fc.ObserveWork(cl, work, watchers)
	}
	start := time.Now()
	req, err := fc.WaitFor(r.Context(), cl, work)
	if err != nil {
		retryAfter := 1
		if rej := (*flowcontrol.Rejection)(nil); errors.As(err, &rej) {
			retryAfter = int(rej.RetryAfter)
		}
		markOutcome(w, throttled)
		endpoints.WriteStatusError(w, r, c, apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfter))
		return nil, nil, nil
	}
	// The wait for seats is left out of the request's SLI latency, as
	// kube-apiserver tracks its queue wait.
	request.ExcludedLatencyFrom(r.Context()).AddQueueWait(time.Since(start))
	var forget func()
	if watch {
		if est != nil && est.Watches != nil {
			forget = est.Watches.Register(info)
		}
		r = r.WithContext(storage.WithWatchInitialized(r.Context(), func() { fc.Release(req) }))
	}
	return req, forget, r
}
