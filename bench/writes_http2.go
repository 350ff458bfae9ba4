package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// The lean HTTP/2 client of the writes workload. client-go's typed clients
// are what users run, but in this benchmark the clients share the process
// and its two cores with the API server and etcd, and client-go's own work
// per create (building the request through the rest client, encoding the
// object through the scheme, decoding the answer through the scheme into a
// typed object) is several times what etcd's clientv3 does per raw Txn
// (encode one small protobuf request, decode one small response). The lean
// client does the HTTP side of a create with about clientv3's work, so that
// the API rate it measures is the server's, not client-go's:
//
//   - one shared HTTP/2 transport (net/http's, as client-go shares one
//     connection per host), TLS with the rest.Config's client certificate
//     (or its bearer token);
//   - each create POSTs a ConfigMap encoded once as a protobuf template
//     whose name is then patched in place: names are fixed width, so every
//     length prefix of the encoding stays valid (the raw Txn side likewise
//     encodes its value once, see configMapValue);
//   - the headers client-go sends with a protobuf client (Content-Type,
//     Accept, User-Agent);
//   - the whole response is read; a 201 body is decoded into a ConfigMap
//     with the protobuf message's own Unmarshal (as clientv3 decodes its
//     TxnResponse) and its name checked; a 429 (or 5xx) with Retry-After
//     is waited out and retried as client-go does; anything else is an
//     error.

// clientHTTP2 is the lean client's name in WriteResult.Client.
const clientHTTP2 = "http2"

// clientGo and clientV3 name the other clients of the writes workload.
const (
	clientGo = "client-go"
	clientV3 = "clientv3"
)

// targetAPIProtobufHTTP2 is the lean client's target.
const targetAPIProtobufHTTP2 = "apiserver (protobuf, http2)"

// protobufMagic starts every Kubernetes protobuf body (the envelope's
// prefix, "k8s" and a zero byte).
var protobufMagic = []byte("k8s\x00")

// leanCreator creates ConfigMaps in one namespace through one shared
// HTTP/2 transport.
type leanCreator struct {
	client    *http.Client
	transport *http.Transport
	url       string // the namespace's configmaps collection
	userAgent string
	bearer    string // "Bearer <token>", or "" with a client certificate

	// template is the protobuf body; nameAt is where the name's
	// numberWidth digits start in it, after prefix.
	template []byte
	nameAt   int
	prefix   string
}

// numberWidth is the number of decimal digits a lean client's object name
// ends with (a sequence number across all clients of one run).
const numberWidth = 10

// newLeanCreator prepares a lean client for namespace at cfg's API server;
// names are prefix-<10 digits>. Close releases its connections.
func newLeanCreator(cfg *rest.Config, namespace, prefix string) (*leanCreator, error) {
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Username != "" {
		return nil, fmt.Errorf("the lean HTTP/2 client authenticates with client certificates or bearer tokens only")
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building TLS config: %w", err)
	}
	base, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing host %q: %w", cfg.Host, err)
	}
	if base.Scheme == "" {
		if base, err = url.Parse("https://" + cfg.Host); err != nil {
			return nil, fmt.Errorf("parsing host %q: %w", cfg.Host, err)
		}
	}
	if base.Scheme != "https" {
		return nil, fmt.Errorf("the lean HTTP/2 client needs an https server, got %q", cfg.Host)
	}
	bearer := cfg.BearerToken
	if bearer == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading bearer token: %w", err)
		}
		bearer = strings.TrimSpace(string(b))
	}
	if bearer != "" {
		bearer = "Bearer " + bearer
	}
	userAgent := cfg.UserAgent
	if userAgent == "" {
		userAgent = rest.DefaultKubernetesUserAgent()
	}
	l := &leanCreator{
		url:       strings.TrimSuffix(base.String(), "/") + "/api/v1/namespaces/" + namespace + "/configmaps",
		userAgent: userAgent,
		bearer:    bearer,
		prefix:    prefix + "-",
	}
	l.transport = &http.Transport{
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
	}
	l.client = &http.Client{Transport: l.transport}
	// The template: the object client-go would send, with a placeholder
	// number that is then located in the encoding.
	placeholder := l.prefix + strings.Repeat("9", numberWidth)
	body, err := encodeProtobuf(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: placeholder},
		Data:       map[string]string{"payload": payload1KiB},
	})
	if err != nil {
		return nil, err
	}
	l.template = []byte(body)
	at := bytes.Index(l.template, []byte(placeholder))
	if at < 0 || bytes.Count(l.template, []byte(placeholder)) != 1 {
		return nil, fmt.Errorf("locating the name in the encoded ConfigMap")
	}
	l.nameAt = at + len(l.prefix)
	return l, nil
}

// Close releases the transport's connections.
func (l *leanCreator) Close() { l.transport.CloseIdleConnections() }

// name is the object name with number n.
func (l *leanCreator) name(n int64) string {
	var digits [numberWidth]byte
	putDigits(digits[:], n)
	return l.prefix + string(digits[:])
}

// putDigits writes n into b as len(b) decimal digits, zero-padded.
func putDigits(b []byte, n int64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

// maxRetries is how often a create answered with a Retry-After is retried,
// as client-go's rest client does (its default, 10).
const maxRetries = 10

// create creates the ConfigMap with number n and checks the answer: a 201
// over HTTP/2 whose body decodes into that ConfigMap. A 429 or 5xx answer
// with Retry-After (the API server's max-in-flight limit says 429, retry
// after 1 s) is waited out and retried up to maxRetries times, as
// client-go does.
func (l *leanCreator) create(ctx context.Context, n int64) error {
	body := make([]byte, len(l.template))
	copy(body, l.template)
	putDigits(body[l.nameAt:l.nameAt+numberWidth], n)
	for retries := 0; ; retries++ {
		resp, data, err := l.post(ctx, body)
		if err != nil {
			return err
		}
		if wait, ok := retryAfter(resp); ok && retries < maxRetries {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("create: %s: %s", resp.Status, statusMessage(data))
		}
		if resp.ProtoMajor != 2 {
			return fmt.Errorf("create: answered over %s, not HTTP/2", resp.Proto)
		}
		var cm corev1.ConfigMap
		if err := decodeProtobuf(data, "ConfigMap", &cm); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if got := cm.Name; len(got) != len(l.prefix)+numberWidth || got[len(l.prefix):] != string(body[l.nameAt:l.nameAt+numberWidth]) {
			return fmt.Errorf("create: answered with ConfigMap %q, want %q", got, l.name(n))
		}
		return nil
	}
}

// warm opens the transport's connection with a list of at most one
// ConfigMap of the namespace, which creates nothing.
func (l *leanCreator) warm(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url+"?limit=1", nil)
	if err != nil {
		return err
	}
	req.Header = http.Header{"Accept": {runtime.ContentTypeProtobuf}, "User-Agent": {l.userAgent}}
	if l.bearer != "" {
		req.Header["Authorization"] = []string{l.bearer}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return fmt.Errorf("warming the lean client's connection: %w", err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("warming the lean client's connection: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("warming the lean client's connection: %s: %s", resp.Status, statusMessage(data))
	}
	return nil
}

// post sends body and returns the response with its whole body read.
func (l *leanCreator) post(ctx context.Context, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = http.Header{
		"Content-Type": {runtime.ContentTypeProtobuf},
		"Accept":       {runtime.ContentTypeProtobuf},
		"User-Agent":   {l.userAgent},
	}
	if l.bearer != "" {
		req.Header["Authorization"] = []string{l.bearer}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp, data, nil
}

// retryAfter is how long to wait before retrying after resp, if it is an
// answer client-go retries: 429 or 5xx with Retry-After in whole seconds.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	secs, err := strconv.Atoi(v)
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// protoMessage is a generated Kubernetes protobuf message.
type protoMessage interface{ Unmarshal([]byte) error }

// decodeProtobuf decodes a Kubernetes protobuf body (magic, then a
// runtime.Unknown envelope) of the given kind into into.
func decodeProtobuf(data []byte, kind string, into protoMessage) error {
	if !bytes.HasPrefix(data, protobufMagic) {
		return fmt.Errorf("the body is not Kubernetes protobuf")
	}
	var env runtime.Unknown
	if err := env.Unmarshal(data[len(protobufMagic):]); err != nil {
		return fmt.Errorf("decoding the envelope: %w", err)
	}
	if env.Kind != kind {
		return fmt.Errorf("the body is a %q, want %q", env.Kind, kind)
	}
	if err := into.Unmarshal(env.Raw); err != nil {
		return fmt.Errorf("decoding the %s: %w", kind, err)
	}
	return nil
}

// statusMessage is the message of an error body (a protobuf metav1.Status),
// or the body itself, shortened, if it is not one.
func statusMessage(data []byte) string {
	var st metav1.Status
	if err := decodeProtobuf(data, "Status", &st); err == nil {
		return fmt.Sprintf("%s (reason %s)", st.Message, st.Reason)
	}
	if len(data) > 200 {
		data = data[:200]
	}
	return fmt.Sprintf("%q", data)
}

// APICreatesHTTP2 is APICreates with the lean HTTP/2 client instead of
// client-go (protobuf only): 1 KiB ConfigMaps named prefix-<number> in
// namespace, from clients goroutines for d, through one shared transport.
func APICreatesHTTP2(ctx context.Context, cfg *rest.Config, namespace, prefix string, clients int, d time.Duration) (WriteResult, error) {
	l, err := newLeanCreator(cfg, namespace, prefix)
	if err != nil {
		return WriteResult{}, err
	}
	defer l.Close()
	// The connection is made (TLS, HTTP/2 settings) before the clock
	// starts, as client-go's cached transport already has one.
	if err := l.warm(ctx); err != nil {
		return WriteResult{}, err
	}
	// Numbers are unique across the run's clients: client c uses
	// c, c+clients, c+2*clients, ...
	r := runClients(ctx, targetAPIProtobufHTTP2, clients, d, func(ctx context.Context, c, seq int) error {
		return l.create(ctx, int64(seq)*int64(clients)+int64(c))
	})
	r.Client = clientHTTP2
	return r, nil
}
