package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/pki"
)

func ptrTo[T any](v T) *T { return &v }

// As kube-aggregator's ClusterIP resolver (kube-apiserver's default): the
// ClusterIP with the service port numbered as asked, for ClusterIP,
// NodePort and LoadBalancer services; an ExternalName service's host with
// the asked port; headless services and unknown ports are errors.
func TestResolveClusterIP(t *testing.T) {
	svc := func(typ corev1.ServiceType, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "https", Port: 443}, {Name: "alt", Port: 8443}}}}
	}
	ext := svc(corev1.ServiceTypeExternalName, "")
	ext.Spec.ExternalName, ext.Spec.Ports = "hooks.example.com", nil
	tests := []struct {
		name    string
		svc     *corev1.Service
		port    int32
		want    string
		wantErr string
	}{
		{"ClusterIP", svc(corev1.ServiceTypeClusterIP, "10.96.0.10"), 443, "10.96.0.10:443", ""},
		{"another port", svc(corev1.ServiceTypeClusterIP, "10.96.0.10"), 8443, "10.96.0.10:8443", ""},
		{"NodePort", svc(corev1.ServiceTypeNodePort, "10.96.0.11"), 443, "10.96.0.11:443", ""},
		{"LoadBalancer", svc(corev1.ServiceTypeLoadBalancer, "fd00::11"), 443, "[fd00::11]:443", ""},
		{"ExternalName", ext, 9443, "hooks.example.com:9443", ""},
		{"no such port", svc(corev1.ServiceTypeClusterIP, "10.96.0.10"), 80, "", `no service port 80 found for service "hook"`},
		{"headless", svc(corev1.ServiceTypeClusterIP, corev1.ClusterIPNone), 443, "", `cannot route to service with ClusterIP "None"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveClusterIP(tt.svc, tt.port)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	u := serviceURL(&admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Path: ptrTo("/validate")})
	if u != "https://hook.ns.svc:443/validate" {
		t.Fatalf("service URL %q", u)
	}
	u = serviceURL(&admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Port: ptrTo(int32(8443))})
	if u != "https://hook.ns.svc:8443" {
		t.Fatalf("service URL %q", u)
	}
}

// With --enable-aggregator-routing (kube-aggregator's endpoint resolver,
// proxy.ResolveEndpoint over EndpointSlices): an endpoint ready or of
// unknown readiness, its first address only, on the slice port named as
// the service port (a port with no name matches none), whatever the
// slice's address type, those of the service's primary IP family first;
// none is ServiceUnavailable, and an ExternalName service is refused
// before its ports are looked at.
func TestEndpointAddresses(t *testing.T) {
	svc := func(families ...corev1.IPFamily) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", IPFamilies: families,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	}
	slice := func(addrType discoveryv1.AddressType, port *string, ready *bool, addrs ...string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{AddressType: addrType,
			Ports:     []discoveryv1.EndpointPort{{Name: port, Port: ptrTo(int32(9443))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
	}
	https := ptrTo("https")
	v4, v6, fqdn := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN
	tests := []struct {
		name    string
		svc     *corev1.Service
		slices  []*discoveryv1.EndpointSlice
		want    string
		wantErr string
	}{
		{"ready or unknown, any address type", svc(), []*discoveryv1.EndpointSlice{
			slice(v4, https, nil, "10.0.0.1"),
			slice(v4, https, ptrTo(true), "10.0.0.2"),
			slice(v4, https, ptrTo(false), "10.0.0.3"),
			slice(v4, ptrTo("metrics"), nil, "10.0.0.4"),
			slice(fqdn, https, nil, "hook.example.com"),
			slice(v6, https, nil, "fd00::5"),
		}, "10.0.0.1:9443,10.0.0.2:9443,hook.example.com:9443,[fd00::5]:9443", ""},
		{"first address only", svc(), []*discoveryv1.EndpointSlice{slice(v4, https, nil, "10.0.0.1", "10.0.0.9")}, "10.0.0.1:9443", ""},
		{"primary family first", svc(corev1.IPv6Protocol, corev1.IPv4Protocol), []*discoveryv1.EndpointSlice{
			slice(v4, https, nil, "10.0.0.1"), slice(v6, https, nil, "fd00::5"), slice(v6, https, ptrTo(false), "fd00::6"),
		}, "[fd00::5]:9443", ""},
		{"other families when the primary has none ready", svc(corev1.IPv6Protocol, corev1.IPv4Protocol), []*discoveryv1.EndpointSlice{
			slice(v4, https, nil, "10.0.0.1"), slice(v6, https, ptrTo(false), "fd00::6"),
		}, "10.0.0.1:9443", ""},
		{"unnamed slice port", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Port: 443}}}},
			[]*discoveryv1.EndpointSlice{slice(v4, nil, nil, "10.0.0.1"), slice(v4, ptrTo(""), nil, "10.0.0.2")}, "10.0.0.2:9443", ""},
		{"none ready", svc(), []*discoveryv1.EndpointSlice{slice(v4, https, ptrTo(false), "10.0.0.3")}, "", `no endpoints available for service "hook"`},
		{"no slices", svc(), nil, "", `no endpoints available for service "hook"`},
		{"ExternalName", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "hooks.example.com"}}, nil, "", `unsupported service type "ExternalName"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := endpointAddresses(tt.svc, tt.slices, 443)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error %q", got, err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "no endpoints") && !apierrors.IsServiceUnavailable(err) {
					t.Fatalf("%v: not ServiceUnavailable", err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// serviceHookServer is an HTTPS webhook whose certificate names only
// dnsName (as a webhook behind a service names <svc>.<ns>.svc); it denies
// every request, saying the path it was called at.
func serviceHookServer(t *testing.T, dnsName string) (srv *httptest.Server, caBundle []byte, port int32, paths func() []string) {
	ca, err := pki.NewCA("webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServing("webhook", []string{dnsName}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Result: &metav1.Status{Message: "called at " + r.URL.Path}}
		rev.Request = nil
		_ = json.NewEncoder(w).Encode(rev)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(p)
	return srv, ca.CertPEM, int32(n), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// A webhook addressed by clientConfig.service is called at
// https://<svc>.<ns>.svc:<port><path>: the TLS server name is
// <svc>.<ns>.svc, checked against caBundle, and the connection goes to
// the service's ClusterIP or (endpoint routing) a ready endpoint. A
// missing service, an unready one or a certificate for another name fail
// the call.
func TestWebhookByService(t *testing.T) {
	_, caBundle, port, paths := serviceHookServer(t, "hook.ns.svc")
	_, otherCA, otherPort, _ := serviceHookServer(t, "other.ns.svc")
	services := map[string]*corev1.Service{
		// A ClusterIP that reaches the test server, on the server's port.
		"hook": {ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			ClusterIP: "127.0.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: port}}}},
		"unready": {ObjectMeta: metav1.ObjectMeta{Name: "unready", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			ClusterIP: "10.96.0.11", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
		// Its server's certificate names other.ns.svc, not wrong.ns.svc.
		"wrong": {ObjectMeta: metav1.ObjectMeta{Name: "wrong", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			ClusterIP: "127.0.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: otherPort}}}},
	}
	// With endpoint routing, hook is served on 443 (the default port) at a
	// ClusterIP nothing listens on: its endpoint is the test server.
	routedServices := map[string]*corev1.Service{"hook": {ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
		"unready": services["unready"]}
	slices := map[string][]*discoveryv1.EndpointSlice{
		"hook": {{AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{{Name: ptrTo("https"), Port: ptrTo(port)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}}}},
		"unready": {{AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{{Name: ptrTo("https"), Port: ptrTo(port)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(false)}}}}},
	}
	getService := func(services map[string]*corev1.Service) func(_ context.Context, namespace, name string) (*corev1.Service, error) {
		return func(_ context.Context, namespace, name string) (*corev1.Service, error) {
			if s, ok := services[name]; ok && namespace == "ns" {
				return s, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("service"), name)
		}
	}
	getSlices := func(_ context.Context, _, service string) ([]*discoveryv1.EndpointSlice, error) {
		return slices[service], nil
	}
	clusterIP := &serviceResolver{service: getService(services)}
	endpoints := &serviceResolver{service: getService(routedServices), endpointSlices: getSlices}
	tests := []struct {
		name     string
		resolver *serviceResolver
		ref      admissionregistrationv1.ServiceReference
		ca       []byte
		wantCode int32
		wantMsg  string
	}{
		{"ClusterIP", clusterIP, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Path: ptrTo("/validate"), Port: ptrTo(port)}, caBundle,
			400, `admission webhook "svc.example.com" denied the request: called at /validate`},
		{"endpoint routing", endpoints, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Path: ptrTo("/routed")}, caBundle,
			400, `admission webhook "svc.example.com" denied the request: called at /routed`},
		{"missing service", clusterIP, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "gone"}, caBundle,
			500, `service "gone" not found`},
		{"no ready endpoint", endpoints, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "unready"}, caBundle,
			500, `no endpoints available for service "unready"`},
		{"certificate for another service", clusterIP, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "wrong", Port: ptrTo(otherPort)}, otherCA,
			500, "certificate is valid for other.ns.svc, not wrong.ns.svc"},
		{"unknown CA", clusterIP, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Port: ptrTo(port)}, otherCA,
			500, "certificate signed by unknown authority"},
		{"no services served", nil, admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Port: ptrTo(port)}, caBundle,
			500, "need the services resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fail := admissionregistrationv1.Fail
			none := admissionregistrationv1.SideEffectClassNone
			ref := tt.ref
			hooks := validatingWebhooks([]admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "svc.example.com", FailurePolicy: &fail, SideEffects: &none, Rules: podRules, AdmissionReviewVersions: []string{"v1"},
					ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &ref, CABundle: tt.ca}}}}})
			d := testDispatcher(hooks)
			d.services = tt.resolver
			err := (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p")))
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("got %v, want %d containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
	if got := strings.Join(paths(), ","); got != "/validate,/routed" {
		t.Fatalf("paths called %q", got)
	}
}

// newServiceResolver reads the server's services and, with
// EnableAggregatorRouting, the EndpointSlices labelled with the service's
// name (kubernetes.io/service-name), ignoring other services' slices.
func TestNewServiceResolverReadsTheStores(t *testing.T) {
	ctx := context.Background()
	stores := newMemStores(serviceResource, endpointSliceResource)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	slice := func(name, service, ip string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptrTo("https"), Port: ptrTo(int32(9443))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}}}}
	}
	for _, add := range []struct {
		gr  schema.GroupResource
		obj runtime.Object
	}{{serviceResource, svc}, {endpointSliceResource, slice("hook-abc", "hook", "127.0.0.1")}, {endpointSliceResource, slice("other-abc", "other", "10.0.0.9")}} {
		if err := stores.add(add.gr, add.obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		routing bool
		want    string
	}{{false, "10.96.0.10:443"}, {true, "127.0.0.1:9443"}} {
		r, err := newServiceResolver(&deps{stores: stores, opts: Options{EnableAggregatorRouting: tc.routing}})
		if err != nil || r == nil {
			t.Fatalf("routing %v: %v, %v", tc.routing, r, err)
		}
		for range 10 { // the pick is random: only hook's slice may come up
			if got, err := r.resolve(ctx, "ns", "hook", 443); err != nil || got != tc.want {
				t.Fatalf("routing %v: %q, %v; want %q", tc.routing, got, err, tc.want)
			}
		}
		if _, err := r.resolve(ctx, "ns", "gone", 443); !apierrors.IsNotFound(err) || err.Error() != `service "gone" not found` {
			t.Fatalf("routing %v, missing service: %v", tc.routing, err)
		}
	}
	if r, err := newServiceResolver(&deps{stores: newMemStores()}); r != nil || err != nil {
		t.Fatalf("no services served: %v, %v", r, err)
	}
	if _, err := newServiceResolver(&deps{stores: newMemStores(serviceResource), opts: Options{EnableAggregatorRouting: true}}); err == nil {
		t.Fatal("endpoint routing without endpointslices served was accepted")
	}
}
