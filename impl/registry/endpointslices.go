package registry

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Limits of one EndpointSlice, as Kubernetes validates them.
const (
	maxSliceEndpoints      = 1000
	maxEndpointAddresses   = 100
	maxSlicePorts          = 20000
	maxEndpointZoneHints   = 8
	maxEndpointNodeHints   = 8
	maxDeprecatedTopology  = 16
	endpointSliceColumnMax = 3
)

var supportedAddressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}

// endpointSlices serves discovery.k8s.io/v1 EndpointSlices: plain CRUD
// with Kubernetes' defaults (port name "", protocol TCP) and validation;
// metadata.generation moves when anything but metadata, or the labels,
// change. The v1 API never stores deprecatedTopology (as upstream, whose
// v1 requests drop it).
func endpointSlices(now func() time.Time) *resource.Resource {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	k := kind[*discoveryv1.EndpointSlice]{
		namespaced: true,
		defaults:   defaultEndpointSlice,
		spec: func(s *discoveryv1.EndpointSlice) any {
			// Everything but metadata, and the labels.
			return []any{s.AddressType, s.Endpoints, s.Ports, s.Labels}
		},
		prepareForCreate: dropDeprecatedTopology,
		prepareForUpdate: func(s, _ *discoveryv1.EndpointSlice) { dropDeprecatedTopology(s) },
		validate:         validateEndpointSlice,
		validateUpdate: func(s, old *discoveryv1.EndpointSlice) field.ErrorList {
			return apivalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))
		},
		warnings: endpointSliceWarnings,
		table: &tableSpec[*discoveryv1.EndpointSlice]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("AddressType", "string", doc["addressType"]),
				column("Ports", "string", doc["ports"]),
				column("Endpoints", "string", doc["endpoints"]),
				ageColumn(),
			},
			cells: func(s *discoveryv1.EndpointSlice, now time.Time) []any {
				return []any{s.Name, string(s.AddressType), slicePortsCell(s.Ports), sliceEndpointsCell(s.Endpoints), age(s.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: discoveryv1.SchemeGroupVersion,
		Name:         "endpointslices", SingularName: "endpointslice", Kind: "EndpointSlice",
		Namespaced: true, Verbs: allVerbs,
		New:      func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:  func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy: newStrategy(k, now),
	}
}

// defaultEndpointSlice gives unnamed ports the name "" and unset
// protocols TCP (upstream's SetDefaults_EndpointPort).
func defaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			p.Name = new(string)
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

// dropDeprecatedTopology clears deprecatedTopology, which the v1 API does
// not write (the only API served).
func dropDeprecatedTopology(s *discoveryv1.EndpointSlice) {
	for i := range s.Endpoints {
		s.Endpoints[i].DeprecatedTopology = nil
	}
}

// Managed-by values of the controllers whose slices get no IP warnings
// (they write canonical addresses), as upstream.
const (
	endpointSliceControllerName          = "endpointslice-controller.k8s.io"
	endpointSliceMirroringControllerName = "endpointslicemirroring-controller.k8s.io"
)

// endpointSliceWarnings are upstream's: FQDN slices are deprecated (on
// create), and addresses not in canonical form are named, unless one of
// the two slice controllers wrote the slice.
func endpointSliceWarnings(s, old *discoveryv1.EndpointSlice) []string {
	var out []string
	if old == nil && s.AddressType == discoveryv1.AddressTypeFQDN {
		out = append(out, fmt.Sprintf("%s: FQDN endpoints are deprecated", field.NewPath("spec").Child("addressType")))
	}
	if m := s.Labels[discoveryv1.LabelManagedBy]; m == endpointSliceControllerName || m == endpointSliceMirroringControllerName ||
		(s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6) {
		return out
	}
	for i := range s.Endpoints {
		for j, a := range s.Endpoints[i].Addresses {
			out = append(out, validation.GetWarningsForIP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), a)...)
		}
	}
	return out
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	typePath := field.NewPath("addressType")
	switch s.AddressType {
	case "":
		errs = append(errs, field.Required(typePath, ""))
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(typePath, s.AddressType, supportedAddressTypes))
	}
	errs = append(errs, validateSliceEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	errs = append(errs, validateSlicePorts(s.Ports, field.NewPath("ports"))...)
	return errs
}

func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, addressType discoveryv1.AddressType, path *field.Path) field.ErrorList {
	if len(endpoints) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(path, len(endpoints), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i := range endpoints {
		ep := &endpoints[i]
		p := path.Index(i)
		addrs := p.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(addrs, "must contain at least 1 address"))
		case len(ep.Addresses) > maxEndpointAddresses:
			errs = append(errs, field.TooMany(addrs, len(ep.Addresses), maxEndpointAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateSliceAddress(a, addressType, addrs.Index(j))...)
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		topology := p.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxDeprecatedTopology {
			errs = append(errs, field.TooMany(topology, len(ep.DeprecatedTopology), maxDeprecatedTopology))
		}
		errs = append(errs, metavalidation.ValidateLabels(ep.DeprecatedTopology, topology)...)
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.Hints != nil {
			errs = append(errs, validateEndpointHints(ep.Hints, p.Child("hints"))...)
		}
	}
	return errs
}

// validateSliceAddress checks one address against the slice's type: IPs
// strictly (no leading zeros, no IPv4-mapped IPv6) of the right family
// and outside the special ranges an endpoint may not use; FQDNs as fully
// qualified domain names.
func validateSliceAddress(a string, addressType discoveryv1.AddressType, path *field.Path) field.ErrorList {
	switch addressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIPForLegacyField(path, a, true, nil); len(errs) > 0 {
			return errs
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return field.ErrorList{field.Invalid(path, a, "must be a valid IP address")}
		}
		if addressType == discoveryv1.AddressTypeIPv4 && !ip.Is4() {
			return field.ErrorList{field.Invalid(path, a, "must be an IPv4 address")}
		}
		if addressType == discoveryv1.AddressTypeIPv6 && !ip.Is6() {
			return field.ErrorList{field.Invalid(path, a, "must be an IPv6 address")}
		}
		return specialEndpointIPErrors(ip, a, path)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(path, a)
	}
	// An unknown address type is refused on its own; its addresses are not
	// checked.
	return nil
}

func validateEndpointHints(h *discoveryv1.EndpointHints, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	zones := path.Child("forZones")
	if len(h.ForZones) > maxEndpointZoneHints {
		errs = append(errs, field.TooMany(zones, len(h.ForZones), maxEndpointZoneHints))
	} else {
		seen := sets.New[string]()
		for i, z := range h.ForZones {
			p := zones.Index(i).Child("name")
			if seen.Has(z.Name) {
				errs = append(errs, field.Duplicate(p, z.Name))
			}
			seen.Insert(z.Name)
			for _, msg := range validation.IsValidLabelValue(z.Name) {
				errs = append(errs, field.Invalid(p, z.Name, msg))
			}
		}
	}
	nodes := path.Child("forNodes")
	if len(h.ForNodes) > maxEndpointNodeHints {
		errs = append(errs, field.TooMany(nodes, len(h.ForNodes), maxEndpointNodeHints))
	} else {
		seen := sets.New[string]()
		for i, n := range h.ForNodes {
			p := nodes.Index(i).Child("name")
			if seen.Has(n.Name) {
				errs = append(errs, field.Duplicate(p, n.Name))
			}
			seen.Insert(n.Name)
			for _, msg := range validation.IsDNS1123Subdomain(n.Name) {
				errs = append(errs, field.Invalid(p, n.Name, msg))
			}
		}
	}
	return errs
}

// validateSlicePorts checks ports as Kubernetes does: unique names, each
// "" or a DNS label, a supported protocol, a qualified-name appProtocol.
// The port number is not checked (upstream does not either; a nil port
// means "all ports").
func validateSlicePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(p.Child("name"), name, msg))
			}
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names.Insert(name)
		switch {
		case port.Protocol == nil:
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		case *port.Protocol == corev1.ProtocolTCP, *port.Protocol == corev1.ProtocolUDP, *port.Protocol == corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, supportedServiceProtocols))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(p.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return errs
}

// slicePortsCell is kubectl's PORTS cell of an EndpointSlice: up to three
// port numbers (a port's name when it has no number, "*" when neither),
// then " + N more...", or "<unset>" for no ports.
func slicePortsCell(ports []discoveryv1.EndpointPort) string {
	list := make([]string, 0, endpointSliceColumnMax)
	for _, p := range ports {
		if len(list) == endpointSliceColumnMax {
			break
		}
		switch {
		case p.Port != nil:
			list = append(list, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			list = append(list, *p.Name)
		default:
			list = append(list, "*")
		}
	}
	return listWithMore(list, len(ports))
}

// sliceEndpointsCell is kubectl's ENDPOINTS cell of an EndpointSlice: up
// to three addresses, then " + N more...", or "<unset>" for none.
func sliceEndpointsCell(endpoints []discoveryv1.Endpoint) string {
	list := make([]string, 0, endpointSliceColumnMax)
	total := 0
	for _, ep := range endpoints {
		for _, a := range ep.Addresses {
			if len(list) < endpointSliceColumnMax {
				list = append(list, a)
			}
			total++
		}
	}
	return listWithMore(list, total)
}

func listWithMore(list []string, total int) string {
	out := strings.Join(list, ",")
	if total > len(list) {
		return fmt.Sprintf("%s + %d more...", out, total-len(list))
	}
	if out == "" {
		return "<unset>"
	}
	return out
}
