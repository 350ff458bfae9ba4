// Package componentstatus computes core/v1 ComponentStatus objects, the
// health of the control plane's components as kube-apiserver reports it
// (`kubectl get componentstatuses`, deprecated since 1.19): every read
// probes the components again, nothing is stored. Store hands them to the
// API server's generic handlers as a read-only storage.Interface.
//
// The components are kube-apiserver's: each etcd storage backend
// ("etcd-0", read of <prefix>/health), and the controller manager and the
// scheduler at their secure /healthz endpoints on 127.0.0.1 (ports 10257
// and 10259), each probed with a 20 second timeout.
package componentstatus

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// ProbeTimeout bounds every probe, as kube-apiserver's.
const ProbeTimeout = 20 * time.Second

// The secure health endpoints kube-apiserver probes for the controller
// manager and the scheduler.
const (
	ControllerManagerURL = "https://127.0.0.1:10257/healthz"
	SchedulerURL         = "https://127.0.0.1:10259/healthz"
)

// maxBodyBytes is how much of a health endpoint's answer becomes the
// condition's message (kube-apiserver's HTTP prober reads 10 KiB).
const maxBodyBytes = 10 << 10

// Outcome is what one probe found: the Healthy condition's status,
// message and error.
type Outcome struct {
	Status         corev1.ConditionStatus
	Message, Error string
}

// Prober checks one component.
type Prober interface {
	Probe(ctx context.Context) Outcome
}

// Component is one probed component, by the name its ComponentStatus has.
type Component struct {
	Name   string
	Prober Prober
}

// Status is the ComponentStatus of component name whose probe gave o: one
// Healthy condition carrying it.
func Status(name string, o Outcome) *corev1.ComponentStatus {
	return &corev1.ComponentStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Conditions: []corev1.ComponentCondition{{
			Type: corev1.ComponentHealthy, Status: o.Status, Message: o.Message, Error: o.Error,
		}},
	}
}

// HTTP probes a health endpoint with a GET, as kube-apiserver's HTTP
// prober does: redirects are followed, a 2xx answer is healthy with its
// body as message, another status unhealthy ("HTTP probe failed with
// statuscode: <code>"), a request that fails (refused, timed out) unhealthy
// with the error as message.
type HTTP struct {
	URL       string
	UserAgent string
	client    *http.Client
}

// NewHTTP probes url, over TLS with tlsConfig for an https URL
// (kube-apiserver skips verification of its components' serving
// certificates: InsecureSkipVerify), sending userAgent (UserAgent).
func NewHTTP(url string, tlsConfig *tls.Config, userAgent string) *HTTP {
	return &HTTP{URL: url, UserAgent: userAgent, client: &http.Client{
		Timeout: ProbeTimeout,
		Transport: &http.Transport{
			// No proxy (Proxy nil), no connection kept between probes.
			TLSClientConfig: tlsConfig, DisableKeepAlives: true, DisableCompression: true,
			TLSHandshakeTimeout: 10 * time.Second,
		},
	}}
}

// UserAgent is the User-Agent of kube-apiserver's probes for a server
// whose /version reports info: kube-probe/<major>.<minor>, as
// kube-apiserver's probe requests format it from its version info
// whatever it holds (k8s.io/kubernetes pkg/probe/http request.go
// userAgent), so a version without them gives "kube-probe/."
// ("v1.37.2-kubeproof" → "kube-probe/1.37", "devel" → "kube-probe/.").
func UserAgent(info version.Info) string {
	return "kube-probe/" + info.Major + "." + info.Minor
}

// Probe implements Prober.
func (p *HTTP) Probe(ctx context.Context) Outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return Outcome{Status: corev1.ConditionUnknown, Error: fmt.Sprintf("failed to construct probe request: %v", err)}
	}
	req.Header.Set("User-Agent", p.UserAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := p.client.Do(req)
	if err != nil {
		return httpOutcome(0, nil, err, nil)
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	return httpOutcome(resp.StatusCode, body, nil, readErr)
}

// httpOutcome decides a probe from its answer: the status code and body
// read, or the request's error, or the error reading the body.
func httpOutcome(code int, body []byte, requestErr, readErr error) Outcome {
	switch {
	case requestErr != nil:
		// Errors are failures, timeouts included.
		return Outcome{Status: corev1.ConditionFalse, Message: requestErr.Error()}
	case readErr != nil:
		return Outcome{Status: corev1.ConditionUnknown, Error: readErr.Error()}
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return Outcome{Status: corev1.ConditionTrue, Message: string(body)}
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		// A redirect the client stopped at: kube-apiserver's prober calls
		// it a warning, neither healthy nor unhealthy.
		return Outcome{Status: corev1.ConditionUnknown, Message: "Probe terminated redirects, Response body: " + string(body)}
	default:
		// Not the body: it may hold what a user may not see.
		return Outcome{Status: corev1.ConditionFalse, Message: fmt.Sprintf("HTTP probe failed with statuscode: %d", code)}
	}
}

// Etcd probes an etcd storage backend by reading the key <prefix>/health,
// as kube-apiserver's etcd prober does: healthy with message "ok" when the
// read succeeds, whether or not the key exists.
type Etcd struct {
	KV clientv3.KV
	// Prefix is the storage backend's key prefix ("/registry").
	Prefix string
}

// Probe implements Prober.
func (e Etcd) Probe(ctx context.Context) Outcome {
	if e.KV == nil {
		return Outcome{Status: corev1.ConditionFalse, Error: "error getting data from etcd: no etcd client"}
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if _, err := e.KV.Get(ctx, path.Join("/", e.Prefix, "health")); err != nil {
		return Outcome{Status: corev1.ConditionFalse, Error: fmt.Sprintf("error getting data from etcd: %v", err)}
	}
	return Outcome{Status: corev1.ConditionTrue, Message: "ok"}
}

// KubeAPIServer is the components kube-apiserver probes: the controller
// manager and the scheduler at their secure health endpoints (cmURL and
// schedulerURL; ControllerManagerURL and SchedulerURL when empty), without
// verifying their certificates, and each etcd backend as "etcd-<i>".
func KubeAPIServer(cmURL, schedulerURL, userAgent string, etcd ...Etcd) []Component {
	if cmURL == "" {
		cmURL = ControllerManagerURL
	}
	if schedulerURL == "" {
		schedulerURL = SchedulerURL
	}
	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // as kube-apiserver probes its components
	out := []Component{
		{Name: "controller-manager", Prober: NewHTTP(cmURL, insecure, userAgent)},
		{Name: "scheduler", Prober: NewHTTP(schedulerURL, insecure, userAgent)},
	}
	for i, e := range etcd {
		out = append(out, Component{Name: fmt.Sprintf("etcd-%d", i), Prober: e})
	}
	return out
}
