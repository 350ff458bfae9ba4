package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A webhook addressed by clientConfig.service is called as kube-apiserver
// calls it: at https://<name>.<namespace>.svc:<port><path> (port 443 when
// unset), the TLS server name being <name>.<namespace>.svc (checked
// against clientConfig.caBundle), while each new connection dials the
// address the service resolves to:
//
//   - by default the Service's ClusterIP with the service port numbered
//     port (NodePort and LoadBalancer services too), or an ExternalName
//     service's externalName with port itself; a headless service is an
//     error (kube-aggregator's ClusterIP resolver);
//   - with --enable-aggregator-routing, the first address of one ready
//     endpoint (picked at random; those of the service's primary IP family
//     first) of the service's EndpointSlices, with the endpoint port named
//     as the service port (kube-aggregator's endpoint resolver); an
//     ExternalName service is an error there.
//
// A missing service, port or endpoint fails the call (the failurePolicy
// then decides).
//
// The service default/kubernetes on port 443 is the API server itself, as
// kube-apiserver's loopback resolver and webhook client configuration
// have it, when the server offers a loopback (LoopbackGetter): the call
// dials the server's own address and is made with its loopback client,
// which trusts the server's loopback certificate (under that certificate's
// server name, the webhook's caBundle trusted besides) and carries the
// server's own bearer token. Another port of that service is resolved as
// any service.
//
// A webhook given as clientConfig.url at the host kubernetes.default.svc
// (port 443, written or not; the host spelled exactly so) is called with
// that same loopback client (TLS settings, caBundle trusted besides, and
// token), as kube-apiserver's webhook authentication resolver answers
// "kubernetes.default.svc:443" with its loopback configuration; unlike
// the service, the connection goes to that name as DNS resolves it.

// defaultServicePort is a service reference's port when unset.
const defaultServicePort = 443

// LoopbackGetter is what an API server offers for calling itself
// (kube-apiserver's loopback client configuration). The admission plugins'
// StoreGetter may implement it.
type LoopbackGetter interface {
	// LoopbackClient is the TLS configuration (root CAs and server name)
	// and bearer token of the server's calls to itself.
	LoopbackClient() (tlsConfig *tls.Config, bearerToken string)
	// LoopbackAddress is the host:port the server is called at (an error
	// until it listens).
	LoopbackAddress() (string, error)
}

// isLoopbackService: the service reference kube-apiserver resolves to
// itself, default/kubernetes on port 443.
func isLoopbackService(namespace, name string, port int32) bool {
	return namespace == metav1.NamespaceDefault && name == "kubernetes" && port == 443
}

// serviceResolver finds the address a webhook's service is reached at.
type serviceResolver struct {
	// service reads a Service (a NotFound error when missing).
	service func(ctx context.Context, namespace, name string) (*corev1.Service, error)
	// endpointSlices, when set (endpoint routing), lists the service's
	// EndpointSlices; nil resolves to the ClusterIP.
	endpointSlices func(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error)
	// loopback, when set, is the API server default/kubernetes:443
	// resolves to.
	loopback LoopbackGetter
}

// resolve returns the host:port to dial for the service's port.
func (r *serviceResolver) resolve(ctx context.Context, namespace, name string, port int32) (string, error) {
	if r.loopback != nil && isLoopbackService(namespace, name, port) {
		return r.loopback.LoopbackAddress()
	}
	svc, err := r.service(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	if r.endpointSlices == nil {
		return resolveClusterIP(svc, port)
	}
	slices, err := r.endpointSlices(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	addrs, err := endpointAddresses(svc, slices, port)
	if err != nil {
		return "", err
	}
	return addrs[rand.IntN(len(addrs))], nil
}

// servicePort is the service's port numbered port.
func servicePort(svc *corev1.Service, port int32) (*corev1.ServicePort, error) {
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			return &svc.Spec.Ports[i], nil
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, svc.Name))
}

// resolveClusterIP is where a call to the service's port goes by its
// ClusterIP (or ExternalName).
func resolveClusterIP(svc *corev1.Service, port int32) (string, error) {
	switch t := svc.Spec.Type; {
	case (t == corev1.ServiceTypeClusterIP || t == "") && svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return "", errors.New(`cannot route to service with ClusterIP "None"`)
	case t == corev1.ServiceTypeClusterIP || t == "" || t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer:
		sp, err := servicePort(svc, port)
		if err != nil {
			return "", err
		}
		if svc.Spec.ClusterIP == "" {
			return "", apierrors.NewServiceUnavailable(fmt.Sprintf("service %q has no cluster IP", svc.Name))
		}
		return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(sp.Port))), nil
	case t == corev1.ServiceTypeExternalName:
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	default:
		return "", fmt.Errorf("unsupported service type %q", t)
	}
}

// endpointAddresses are the host:port of the endpoints the service's
// port numbered port may be called at, as kube-aggregator's endpoint
// resolver picks one: each endpoint ready or of unknown readiness, by its
// first address, on its slice's port named as the service port (a port
// with no name matches none), whatever the slice's address type; when
// the service lists IP families, the slices of the first family are tried
// first, so the others' endpoints count only when those have none.
func endpointAddresses(svc *corev1.Service, slices []*discoveryv1.EndpointSlice, port int32) ([]string, error) {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, "", corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return nil, fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	sp, err := servicePort(svc, port)
	if err != nil {
		return nil, err
	}
	var primary discoveryv1.AddressType
	if len(svc.Spec.IPFamilies) > 0 {
		primary = discoveryv1.AddressType(svc.Spec.IPFamilies[0])
	}
	var preferred, others []string
	for _, s := range slices {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != sp.Name || p.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				if (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || len(ep.Addresses) == 0 {
					continue
				}
				a := net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port)))
				if primary == "" || s.AddressType == primary {
					preferred = append(preferred, a)
				} else {
					others = append(others, a)
				}
			}
		}
	}
	if len(preferred) == 0 {
		preferred = others
	}
	if len(preferred) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", svc.Name))
	}
	return preferred, nil
}

// serviceHost is the host:port a service reference is called at, and its
// TLS server name.
func serviceHost(s *admissionregistrationv1.ServiceReference) (hostPort, serverName string, port int32) {
	port = defaultServicePort
	if s.Port != nil {
		port = *s.Port
	}
	serverName = s.Name + "." + s.Namespace + ".svc"
	return net.JoinHostPort(serverName, strconv.Itoa(int(port))), serverName, port
}

// serviceURL is the URL a service reference is called at.
func serviceURL(s *admissionregistrationv1.ServiceReference) string {
	host, _, _ := serviceHost(s)
	u := "https://" + host
	if s.Path != nil {
		u += *s.Path
	}
	return u
}

var endpointSliceResource = schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}

// newServiceResolver reads services (and, with endpoint routing,
// EndpointSlices) from the plugins' shared caches; nil when the server
// serves no services.
func newServiceResolver(d *deps) (*serviceResolver, error) {
	if _, ok := d.stores.Store(serviceResource); !ok {
		return nil, nil
	}
	svcs, err := d.cache(serviceResource, func() runtime.Object { return &corev1.ServiceList{} })
	if err != nil {
		return nil, err
	}
	r := &serviceResolver{service: func(ctx context.Context, namespace, name string) (*corev1.Service, error) {
		o, err := svcs.lookup(ctx, namespace, name, false, func() runtime.Object { return &corev1.Service{} })
		if apierrors.IsNotFound(err) {
			// As kube-apiserver's service lister says it.
			return nil, apierrors.NewNotFound(corev1.Resource("service"), name)
		}
		if err != nil {
			return nil, err
		}
		svc, ok := o.(*corev1.Service)
		if !ok {
			return nil, fmt.Errorf("reading service %s/%s: got %T", namespace, name, o)
		}
		return svc, nil
	}}
	r.loopback, _ = d.stores.(LoopbackGetter)
	if !d.opts.EnableAggregatorRouting {
		return r, nil
	}
	if _, ok := d.stores.Store(endpointSliceResource); !ok {
		return nil, errors.New("--enable-aggregator-routing needs the endpointslices resource, which is not served")
	}
	eps, err := d.cache(endpointSliceResource, func() runtime.Object { return &discoveryv1.EndpointSliceList{} })
	if err != nil {
		return nil, err
	}
	r.endpointSlices = func(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
		objs, err := eps.list(ctx, namespace)
		if err != nil {
			return nil, fmt.Errorf("listing the endpoint slices of service %s/%s: %w", namespace, service, err)
		}
		var out []*discoveryv1.EndpointSlice
		for _, o := range objs {
			if s, ok := o.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelServiceName] == service {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return r, nil
}
