// Package apiproxy is the API server's side of the kubelet API: the
// pods/log, pods/exec, pods/attach, pods/portforward and nodes/proxy
// subresources, which find the pod's
// node, its InternalIP and kubelet port (status.daemonEndpoints), and
// proxy the request to that kubelet (impl/kubelet/server) over HTTPS with
// the API server's kubelet client certificate.
//
// Validation and errors follow kube-apiserver's pod log and exec REST
// (pkg/registry/core/pod): a container name is required when the pod has
// several, a pod without a node has no log (204 No Content) and refuses exec,
// errors from the kubelet come back with the kubelet's message and code.
// An exec or attach by a WebSocket v5 client is translated to SPDY toward
// the kubelet, as kube-apiserver's StreamTranslator (translate.go); other
// upgrades are proxied as they are.
package apiproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultKubeletPort is used when a node reports no kubelet port.
const DefaultKubeletPort = 10250

// Lookup reads the objects a proxied request needs; errors are API status
// errors (NotFound).
type Lookup interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// Proxy serves the kubelet-backed subresources.
type Proxy struct {
	lookup    Lookup
	transport *http.Transport
}

// New returns a Proxy that reaches kubelets with tlsConfig (the kubelet
// client certificate, and the CA the kubelets' serving certificates are
// verified with; InsecureSkipVerify when kubelets have self-signed ones,
// as kube-apiserver does without --kubelet-certificate-authority).
func New(lookup Lookup, tlsConfig *tls.Config) *Proxy {
	tlsConfig = tlsConfig.Clone()
	tlsConfig.NextProtos = []string{"http/1.1"} // upgrades need HTTP/1.1
	return &Proxy{lookup: lookup, transport: &http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// Close drops idle connections to kubelets.
func (p *Proxy) Close() { p.transport.CloseIdleConnections() }

var (
	podsLog   = schema.GroupResource{Resource: "pods/log"}
	podsExec  = schema.GroupResource{Resource: "pods/exec"}
	podsAtt   = schema.GroupResource{Resource: "pods/attach"}
	podsPF    = schema.GroupResource{Resource: "pods/portforward"}
	nodesRes  = schema.GroupResource{Resource: "nodes"}
	logOptsGK = schema.GroupKind{Kind: "PodLogOptions"}
)

// kubeletURL is https://<node InternalIP>:<kubelet port><path>.
func (p *Proxy) kubeletURL(ctx context.Context, nodeName, path string, query url.Values) (*url.URL, error) {
	node, err := p.lookup.GetNode(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	host := ""
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == want && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("no preferred addresses found; known addresses: %v", node.Status.Addresses))
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: path, RawQuery: query.Encode()}, nil
}

// containerFor resolves the container a log or exec request targets.
func containerFor(pod *corev1.Pod, container string) (string, error) {
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		var names []string
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return container, nil
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			return container, nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// logQuery decodes and validates the PodLogOptions of a pods/log request
// for pod name as kube-apiserver does, and returns the kubelet's query.
// Decoding is its query conversion's: the first value of each parameter;
// a boolean is true for any value but "0" and "false" (any case), an empty
// one too; an integer or a time (RFC 3339; empty or "null" is the zero
// time, still set) that does not parse is a 400 with the parser's message,
// the first in the conversion's field order. Validation is
// ValidatePodLogOptions', a 422 naming the pod.
func logQuery(q url.Values, name string) (url.Values, error) {
	flag := func(param string) bool {
		v, ok := q[param]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	ints := map[string]*int64{}
	var sinceTime *time.Time
	for _, param := range []string{"sinceSeconds", "sinceTime", "tailLines", "limitBytes"} {
		v, ok := q[param]
		if !ok || len(v) == 0 {
			continue
		}
		if param == "sinceTime" {
			t := time.Time{}
			if v[0] != "" && v[0] != "null" {
				parsed, err := time.Parse(time.RFC3339, v[0])
				if err != nil {
					return nil, apierrors.NewBadRequest(err.Error())
				}
				t = parsed
			}
			sinceTime = &t
			continue
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		ints[param] = &n
	}
	var errs field.ErrorList
	if n := ints["tailLines"]; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *n, "must be greater than or equal to 0"))
	}
	if n := ints["limitBytes"]; n != nil && *n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *n, "must be greater than 0"))
	}
	switch since := ints["sinceSeconds"]; {
	case since != nil && sinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case since != nil && *since < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *since, "must be greater than 0"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(logOptsGK, name, errs)
	}
	// The kubelet's query, as kube-apiserver's LogLocation writes it.
	out := url.Values{}
	for _, param := range []string{"follow", "previous", "timestamps"} {
		if flag(param) {
			out.Set(param, "true")
		}
	}
	for _, param := range []string{"sinceSeconds", "tailLines", "limitBytes"} {
		if n := ints[param]; n != nil {
			out.Set(param, strconv.FormatInt(*n, 10))
		}
	}
	if sinceTime != nil {
		out.Set("sinceTime", sinceTime.Format(time.RFC3339))
	}
	return out, nil
}

// PodLog serves GET …/pods/{name}/log: it streams the container's log from
// its kubelet. Errors are returned for the caller to write before anything
// was written.
func (p *Proxy) PodLog(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	q := r.URL.Query()
	kq, err := logQuery(q, name)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pod, err := p.lookup.GetPod(ctx, namespace, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, q.Get("container"))
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		// As kube-apiserver: a pod not yet on a node has no log location,
		// and a stream without one is answered 204 No Content.
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	u, err := p.kubeletURL(ctx, pod.Spec.NodeName, "/containerLogs/"+namespace+"/"+name+"/"+container, kq)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("unable to reach the kubelet of node %s: %v", pod.Spec.NodeName, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return kubeletError(resp, podsLog, name)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flushingCopy(w, resp.Body)
	return nil
}

// kubeletError turns a kubelet's non-200 answer into a status error with
// the kubelet's message.
func kubeletError(resp *http.Response, gr schema.GroupResource, name string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	msg := strings.TrimSpace(string(body))
	se := apierrors.NewGenericServerResponse(resp.StatusCode, "", gr, name, msg, 0, false)
	if msg != "" {
		se.ErrStatus.Message = msg
	}
	se.ErrStatus.Details = nil
	return se
}

// flushingCopy copies a (possibly followed) log, flushing after each read.
func flushingCopy(w http.ResponseWriter, r io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// PodExec serves …/pods/{name}/exec: it validates the request and proxies
// the upgraded connection (WebSocket or SPDY) to the kubelet's /exec.
func (p *Proxy) PodExec(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	q := r.URL.Query()
	ctx := r.Context()
	pod, err := p.lookup.GetPod(ctx, namespace, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, q.Get("container"))
	if err != nil {
		return err
	}
	if len(q["command"]) == 0 {
		return apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	kq, err := streamQuery(q, pod, "exec into")
	if err != nil {
		return err
	}
	kq["command"] = q["command"]
	u, err := p.kubeletURL(ctx, pod.Spec.NodeName, "/exec/"+namespace+"/"+name+"/"+container, kq)
	if err != nil {
		return err
	}
	if wantsTranslation(r) {
		return p.translate(w, r, u, streamOptions(kq), q["command"])
	}
	return p.upgrade(w, r, u, podsExec, name)
}

// streamQuery decodes the stream flags of an exec or attach request as
// kube-apiserver's query conversion of PodExecOptions and PodAttachOptions
// does (apimachinery's Convert_Slice_string_To_bool: the first value; true
// for anything but "0" and "false" in any case, an empty value too; never
// an error), checks them against the pod (bound to a node, not completed)
// and returns the kubelet's query as kube-apiserver's streamParams writes
// it: each flag that is set as "1", the others left out.
func streamQuery(q url.Values, pod *corev1.Pod, doing string) (url.Values, error) {
	kq := url.Values{}
	set := map[string]bool{}
	for _, n := range []string{"stdin", "stdout", "stderr", "tty"} {
		v := q[n]
		var b bool
		if err := runtime.Convert_Slice_string_To_bool(&v, &b, nil); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if set[n] = b; b {
			kq.Set(n, "1")
		}
	}
	if !set["stdin"] && !set["stdout"] && !set["stderr"] {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot %s a container in a completed pod; current phase is %s", doing, pod.Status.Phase))
	}
	return kq, nil
}

// PodAttach serves …/pods/{name}/attach: it validates the PodAttachOptions
// (container defaulted as for exec, at least one of stdin, stdout and
// stderr, the pod bound and not completed) and proxies the upgraded
// connection (WebSocket or SPDY) to the kubelet's /attach.
func (p *Proxy) PodAttach(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	q := r.URL.Query()
	ctx := r.Context()
	pod, err := p.lookup.GetPod(ctx, namespace, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, q.Get("container"))
	if err != nil {
		return err
	}
	kq, err := streamQuery(q, pod, "attach")
	if err != nil {
		return err
	}
	u, err := p.kubeletURL(ctx, pod.Spec.NodeName, "/attach/"+namespace+"/"+name+"/"+container, kq)
	if err != nil {
		return err
	}
	if wantsTranslation(r) {
		return p.translate(w, r, u, streamOptions(kq), nil)
	}
	return p.upgrade(w, r, u, podsAtt, name)
}

// portForwardQuery decodes the ports of a pods/portforward request as
// kube-apiserver's query conversion of PodPortForwardOptions does
// (apimachinery's Convert_Slice_string_To_Slice_int32: every value of
// "ports", each split at commas, an unsigned 16-bit integer; the first
// that is not is a 400 with the parser's message; there is no other
// validation, port 0 included), and returns the kubelet's query as
// kube-apiserver's streamParams writes it: one "port" of the ports joined
// by commas.
func portForwardQuery(q url.Values) (url.Values, error) {
	kq := url.Values{}
	v := q["ports"]
	var ports []int32
	if err := metav1.Convert_Slice_string_To_Slice_int32(&v, &ports, nil); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ports) > 0 {
		s := make([]string, len(ports))
		for i, p := range ports {
			s[i] = strconv.FormatInt(int64(p), 10)
		}
		kq.Set(corev1.PortHeader, strings.Join(s, ","))
	}
	return kq, nil
}

// PodPortForward serves …/pods/{name}/portforward: it validates the ports
// and proxies the SPDY upgrade to the kubelet's /portForward, where each
// forwarded connection is a stream pair naming its port in a header.
func (p *Proxy) PodPortForward(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	kq, err := portForwardQuery(r.URL.Query())
	if err != nil {
		return err
	}
	ctx := r.Context()
	pod, err := p.lookup.GetPod(ctx, namespace, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	u, err := p.kubeletURL(ctx, pod.Spec.NodeName, "/portForward/"+namespace+"/"+name, kq)
	if err != nil {
		return err
	}
	return p.upgrade(w, r, u, podsPF, name)
}

// NodeProxy serves …/nodes/{name}/proxy/{path}: any request to the node's
// kubelet API (e.g. /healthz, /metrics), proxied as is.
func (p *Proxy) NodeProxy(w http.ResponseWriter, r *http.Request, name, path string) error {
	u, err := p.kubeletURL(r.Context(), name, "/"+strings.TrimPrefix(path, "/"), r.URL.Query())
	if err != nil {
		return err
	}
	h := proxy.NewUpgradeAwareHandler(u, p.transport, false, false, responder{w: w, gr: nodesRes, name: name})
	h.UseLocationHost = true
	h.ServeHTTP(Hijackable{w}, r)
	return nil
}

func (p *Proxy) upgrade(w http.ResponseWriter, r *http.Request, u *url.URL, gr schema.GroupResource, name string) error {
	h := proxy.NewUpgradeAwareHandler(u, p.transport, false, true, responder{w: w, gr: gr, name: name})
	h.UseLocationHost = true
	h.ServeHTTP(Hijackable{w}, r)
	return nil
}

// Hijackable exposes the Hijacker and Flusher of a wrapped ResponseWriter
// (the API server's filters wrap it and implement Unwrap), which the
// upgrade-aware proxy needs for upgrades and streamed answers. The API
// server's pods/proxy and services/proxy use it too.
type Hijackable struct{ http.ResponseWriter }

func (h Hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

func (h Hijackable) Flush() { _ = http.NewResponseController(h.ResponseWriter).Flush() }

func (h Hijackable) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// responder writes proxy failures (kubelet unreachable, no upgrade) as a
// Status.
type responder struct {
	w    http.ResponseWriter
	gr   schema.GroupResource
	name string
}

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	st := apierrors.NewServiceUnavailable(fmt.Sprintf("error proxying to the kubelet for %s %q: %v", r.gr.Resource, r.name, err)).ErrStatus
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	}
	writeStatus(w, st)
}

// writeStatus writes a Status as JSON (the proxy's own errors only; the
// caller writes validation errors with its negotiated codec).
func writeStatus(w http.ResponseWriter, st metav1.Status) {
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Status = metav1.StatusFailure
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}
