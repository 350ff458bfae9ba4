package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/apiproxy"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// The pods/proxy and services/proxy subresources: kube-apiserver's pod and
// service ProxyREST. The name segment is "name", "name:port" or
// "scheme:name:port" (scheme http or https); the rest of the path after
// …/proxy is the path on the pod or endpoint. Each request is sent by
// apimachinery's UpgradeAwareHandler with its proxy transport wrapping
// (X-Forwarded-* headers, HTML links and redirects rewritten under the
// proxy path), to a pod IP or to a ready endpoint of the Service sought
// from a random start, as upstream does. The location decisions are the
// pure functions podProxyLocation and serviceProxyLocation; the I/O
// (reading the pod, service and EndpointSlices) is in the Server methods.

// proxyMethods are the HTTP methods the proxy subresources connect, as
// kube-apiserver's pod and service ProxyREST list them; another method is
// the router's 405.
var proxyMethods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodHead: true, http.MethodOptions: true,
}

// newProxyTransport is the transport to pods and endpoints: as
// kube-apiserver's proxy transport, it does not verify the HTTPS backends'
// certificates (it reaches them by IP) and presents no client certificate.
// dial, when set, replaces the direct connection (kube-apiserver's
// egress selector for the cluster network).
func newProxyTransport(dial func(ctx context.Context, network, address string) (net.Conn, error)) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return utilnet.SetTransportDefaults(&http.Transport{
		DialContext:     dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream's: backends are reached by IP
	})
}

// podProxyLocation is where a pods/proxy request for id goes: the pod's
// first IP, the port given in id or else the first port of the first
// container declaring one (none: the scheme's default port). As upstream,
// the IP must be a global unicast address: a pod without one (not yet
// given an IP, or a loopback or link-local one) is a 400 "address not
// allowed". A port is not checked: a name is resolved by the dialer as
// upstream's is.
func podProxyLocation(pod *corev1.Pod, scheme, port string) (*url.URL, error) {
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if ip := net.ParseIP(podIP); ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: scheme, Host: podIP}
	switch {
	case port != "":
		loc.Host = net.JoinHostPort(podIP, port)
	case strings.Contains(podIP, ":"):
		loc.Host = "[" + podIP + "]"
	}
	return loc, nil
}

// servicePortName is the port name a services/proxy request selects: a
// number names the Service's port with that number (none: 503 "no service
// port N found for service"), anything else is the name itself ("" the
// unnamed port).
func servicePortName(svc *corev1.Service, name, port string) (string, error) {
	n, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		return port, nil
	}
	for _, p := range svc.Spec.Ports {
		if int64(p.Port) == n {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
}

// serviceProxyLocation picks the endpoint a services/proxy request goes
// to among the Service's EndpointSlices, as kube-apiserver's service REST
// has since kubernetes PR 134860 (1.37), which ported to it the
// aggregator's EndpointSlice resolver (apiserver's util/proxy
// ResolveEndpoint): the slices in random order; in each, a port named
// portName with a number (a port without a name matches no name, not even
// ""); from a random endpoint on, the first not marked unready (no
// condition counts as ready); its first address, whatever the slice's
// address type. pick(n) returns a random index below n (upstream: at
// random). No slice, or no endpoint found, is upstream's 503 "no
// endpoints available for service" (the first names the Service, the
// second the request's id).
func serviceProxyLocation(slices []discoveryv1.EndpointSlice, name, id, scheme, portName string, pick func(n int) int) (*url.URL, error) {
	if len(slices) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	left := make([]int, len(slices))
	for i := range left {
		left[i] = i
	}
	for len(left) > 0 {
		k := pick(len(left))
		sl := &slices[left[k]]
		left = append(left[:k], left[k+1:]...)
		if host, ok := readyEndpoint(sl, portName, pick); ok {
			return &url.URL{Scheme: scheme, Host: host}, nil
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
}

// readyEndpoint is the host:port serviceProxyLocation finds in one slice,
// if any.
func readyEndpoint(sl *discoveryv1.EndpointSlice, portName string, pick func(n int) int) (string, bool) {
	for _, p := range sl.Ports {
		if p.Name == nil || *p.Name != portName || p.Port == nil || len(sl.Endpoints) == 0 {
			continue
		}
		from := pick(len(sl.Endpoints))
		for i := range sl.Endpoints {
			ep := &sl.Endpoints[(from+i)%len(sl.Endpoints)]
			if len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
				continue
			}
			return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))), true
		}
	}
	return "", false
}

// proxySubpath is the path a proxy request names past …/proxy: "" for
// none, with a leading "/" otherwise and the request's trailing "/" kept,
// as kube-apiserver's connect handler sets the options' path.
func proxySubpath(info *request.Info, r *http.Request) string {
	p := strings.Join(info.Parts[3:], "/")
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasSuffix(r.URL.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// connectDryRunRefused is the 400 kube-apiserver's connect handler
// answers, before anything else, to a connect request (pods/proxy,
// services/proxy, nodes/proxy, pods/exec, pods/attach, pods/portforward)
// naming dryRun with any value, even empty: a connection cannot be a dry
// run. It is nil for any other request. pods/log is a get, not a connect,
// and is not refused.
func connectDryRunRefused(r *http.Request) error {
	if _, dry := request.Query(r)["dryRun"]; dry {
		return apierrors.NewBadRequest("dryRun is not supported")
	}
	return nil
}

// serveProxySubresource serves pods/proxy and services/proxy requests and
// reports whether r was one.
func (s *Server) serveProxySubresource(w http.ResponseWriter, r *http.Request, info *request.Info) bool {
	if info.Subresource != "proxy" || !info.UnderNamespace || (info.Resource != "pods" && info.Resource != "services") {
		return false
	}
	gr := schema.GroupResource{Resource: info.Resource + "/proxy"}
	if !proxyMethods[r.Method] {
		endpoints.WriteError(w, r, s.codecs, endpoints.MethodNotAllowed(), gr, info.Name)
		return true
	}
	if err := connectDryRunRefused(r); err != nil {
		endpoints.WriteError(w, r, s.codecs, err, gr, info.Name)
		return true
	}
	if info.Name == "" {
		endpoints.WriteError(w, r, s.codecs, endpoints.NameRequired(), gr, info.Name)
		return true
	}
	defer s.requestMetrics.ConnectStarted(r, info)()
	var loc *url.URL
	var err error
	if info.Resource == "pods" {
		loc, err = s.podProxyURL(r.Context(), info.Namespace, info.Name)
	} else {
		loc, err = s.serviceProxyURL(r.Context(), info.Namespace, info.Name)
	}
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, gr, info.Name)
		return true
	}
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, proxySubpath(info, r))
	h := proxy.NewUpgradeAwareHandler(loc, s.proxyTransport, true, false, proxyResponder{s: s})
	h.ServeHTTP(apiproxy.Hijackable{ResponseWriter: w}, r)
	return true
}

// podProxyURL reads the pod id names and returns its proxy location.
func (s *Server) podProxyURL(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pod, err := storeLookup{s}.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return podProxyLocation(pod, scheme, port)
}

// serviceProxyURL reads the Service (when a port number must be mapped to
// its name) and its EndpointSlices, and returns the proxy location.
func (s *Server) serviceProxyURL(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	if namespace == "" {
		// An empty namespace segment (/namespaces//services/x/proxy),
		// refused before any read (a list of EndpointSlices without one
		// would find another namespace's Service of that name): by the
		// Service read's key function when a port number is to be mapped
		// to its name, else by the service REST's own check before the
		// slices are read (kubernetes PR 134860, storage.go
		// ResourceLocation as approved in review).
		if _, err := strconv.ParseInt(port, 10, 64); err == nil {
			return nil, apierrors.NewBadRequest("Namespace parameter required.")
		}
		return nil, apierrors.NewBadRequest("missing required namespace")
	}
	if _, err := strconv.ParseInt(port, 10, 64); err == nil {
		obj, err := storeLookup{s}.get(ctx, servicesGVR, namespace, name)
		if err != nil {
			return nil, err
		}
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("services store returned %T", obj))
		}
		if port, err = servicePortName(svc, name, port); err != nil {
			return nil, err
		}
	}
	slices, err := s.serviceSlices(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return serviceProxyLocation(slices, name, id, scheme, port, rand.IntN)
}

// serviceSlices lists (a quorum read) the EndpointSlices labelled for the
// Service.
func (s *Server) serviceSlices(ctx context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error) {
	gr := endpointSlicesGVR.GroupResource()
	store, ok := s.Store(gr)
	if !ok {
		return nil, nil
	}
	pred := storage.Everything()
	pred.Label = labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	var list discoveryv1.EndpointSliceList
	if err := store.GetList(ctx, s.ListKey(gr, namespace), storage.ListOptions{Predicate: pred, Recursive: true}, &list); err != nil {
		return nil, endpoints.ToStatusError(err, endpoints.VerbList, gr, "")
	}
	return list.Items, nil
}

// proxyResponder writes the proxy's failures (a backend not reached: 503
// "error trying to reach service: …") as a Status in the negotiated
// encoding; an error that is not a Status is a 500 with its text, as
// kube-apiserver's connect responder writes it.
type proxyResponder struct{ s *Server }

func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := err.(apierrors.APIStatus); !ok {
		err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	endpoints.WriteError(w, r, p.s.codecs, err, schema.GroupResource{}, "")
}
