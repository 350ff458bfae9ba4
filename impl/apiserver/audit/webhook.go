package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Webhook defaults and retry schedule, as kube-apiserver's audit webhook:
// every failure is retried, 5 attempts in all, the waits between them
// starting at the initial backoff, growing 1.5 times, each plus up to
// 20% jitter; each request is cut off after 30s.
const (
	DefaultWebhookInitialBackoff = 10 * time.Second
	webhookAttempts              = 5
	webhookBackoffFactor         = 1.5
	webhookBackoffJitter         = 0.2
	webhookRequestTimeout        = 30 * time.Second
)

// EventListKind is the kind of the object a webhook is sent.
const EventListKind = "EventList"

// EventList is an audit.k8s.io/v1 EventList.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Event `json:"items"`
}

// WebhookBackend POSTs events, as an audit.k8s.io/v1 EventList, to the
// remote audit service a kubeconfig file describes
// (--audit-webhook-config-file: its current context's cluster server is
// the URL, its user the credentials). By itself it is the blocking mode:
// one request per event, the caller waiting; NewBuffered in front of it
// is the batch mode.
type WebhookBackend struct {
	client         *http.Client
	url            string
	initialBackoff time.Duration
	metrics        *Metrics
	// sleep waits d or until ctx ends (tests give a fake).
	sleep func(ctx context.Context, d time.Duration) error
	// jitter is a number in [0, 1).
	jitter func() float64
}

// NewWebhookBackend loads the kubeconfig at configFile.
func NewWebhookBackend(configFile string, initialBackoff time.Duration, m *Metrics) (*WebhookBackend, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = configFile
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("initializing audit webhook: %w", err)
	}
	cfg.Timeout = webhookRequestTimeout
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("initializing audit webhook: %w", err)
	}
	u, err := webhookURL(cfg)
	if err != nil {
		return nil, fmt.Errorf("initializing audit webhook: %w", err)
	}
	return &WebhookBackend{client: client, url: u, initialBackoff: initialBackoff, metrics: m,
		sleep: sleepContext, jitter: rand.Float64}, nil
}

// webhookURL is the URL events are posted to, as client-go's REST
// client under kube-apiserver's webhook makes it: the kubeconfig's
// server (https without a scheme only when TLS is configured), its path
// cleaned.
func webhookURL(cfg *rest.Config) (string, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "", err
	}
	u.Path = path.Join("/", u.Path)
	return u.String(), nil
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the client's kept-alive connections (sending later
// events opens new ones).
func (w *WebhookBackend) Close() error {
	w.client.CloseIdleConnections()
	return nil
}

// ProcessEvent implements Backend: one request for ev.
func (w *WebhookBackend) ProcessEvent(ev *Event) bool {
	return w.ProcessEvents(context.Background(), []*Event{ev})
}

// ProcessEvents implements BatchBackend: one EventList for events,
// retried as kube-apiserver's; false (the events counted and logged as
// plugin "webhook" errors) when every attempt failed.
func (w *WebhookBackend) ProcessEvents(ctx context.Context, events []*Event) bool {
	if err := w.post(ctx, events); err != nil {
		pluginError(w.metrics, PluginWebhook, err, events...)
		return false
	}
	return true
}

// webhookBackoff is the wait before retry n (0 the first retry), given
// a jitter fraction in [0, 1).
func webhookBackoff(initial time.Duration, n int, jitter float64) time.Duration {
	d := float64(initial)
	for range n {
		d *= webhookBackoffFactor
	}
	return time.Duration(d + jitter*webhookBackoffJitter*d)
}

func (w *WebhookBackend) post(ctx context.Context, events []*Event) error {
	list := EventList{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: EventListKind}, Items: make([]Event, len(events))}
	for i, ev := range events {
		list.Items[i] = *ev
	}
	body, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("encoding audit events: %w", err)
	}
	var last error
	for attempt := range webhookAttempts {
		if attempt > 0 {
			if err := w.sleep(ctx, webhookBackoff(w.initialBackoff, attempt-1, w.jitter())); err != nil {
				return fmt.Errorf("webhook call failed: %w (last error: %w)", err, last)
			}
		}
		if last = w.postOnce(ctx, body); last == nil {
			return nil
		}
	}
	return last
}

// webhookRetryAfterResends is how many times client-go's REST client
// (Request's maxRetries) sends a request again after a 429 or 5xx answer
// with a Retry-After of whole seconds, waiting those seconds, before the
// answer counts.
const webhookRetryAfterResends = 10

// postOnce is one attempt of the backoff: a request, sent again while it
// is answered 429 or 5xx with a Retry-After (at most
// webhookRetryAfterResends times).
func (w *WebhookBackend) postOnce(ctx context.Context, body []byte) error {
	for resends := 0; ; resends++ {
		wait, err := w.request(ctx, body)
		if err == nil || wait < 0 || resends == webhookRetryAfterResends {
			return err
		}
		if serr := w.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w (last error: %w)", serr, err)
		}
	}
}

// request posts body once. A 429 or 5xx answer with a Retry-After of
// whole seconds also returns that wait; it is -1 otherwise.
func (w *WebhookBackend) request(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("calling audit webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	resp, err := w.client.Do(req)
	if err != nil {
		return -1, fmt.Errorf("calling audit webhook: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	// client-go's REST client, which kube-apiserver's webhook uses, takes
	// only 200-206 as success.
	if resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent {
		return -1, nil
	}
	err = fmt.Errorf("audit webhook %s answered %d: %s", w.url, resp.StatusCode, strings.TrimSpace(string(answer)))
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < http.StatusInternalServerError {
		return -1, err
	}
	seconds, perr := strconv.Atoi(resp.Header.Get("Retry-After"))
	if perr != nil {
		return -1, err
	}
	// A negative Retry-After is resent at once, as client-go's.
	return time.Duration(max(seconds, 0)) * time.Second, err
}
