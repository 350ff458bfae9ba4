package registry

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// endpoints serves core/v1 Endpoints: plain CRUD with Kubernetes'
// validation. The API server keeps the `kubernetes` service's endpoints
// current, the endpoints controller those of selector-based services.
func endpoints(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Endpoints]{
		namespaced: true,
		defaults: func(e *corev1.Endpoints) {
			for i := range e.Subsets {
				for j := range e.Subsets[i].Ports {
					if e.Subsets[i].Ports[j].Protocol == "" {
						e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
					}
				}
			}
		},
		validateCreate: func(e *corev1.Endpoints) field.ErrorList { return validateEndpoints(e, nil) },
		validateUpdate: validateEndpoints,
		warnings:       endpointsWarnings,
		table: &tableSpec[*corev1.Endpoints]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
				ageColumn(),
			},
			cells: func(e *corev1.Endpoints, now time.Time) []any {
				return []any{e.Name, endpointsCell(e.Subsets, 3), age(e.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "endpoints", SingularName: "endpoints", Kind: "Endpoints",
		Namespaced: true, ShortNames: []string{"ep"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.Endpoints{} },
		NewList:  func() runtime.Object { return &corev1.EndpointsList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

// endpointsCell is kubectl's ENDPOINTS cell: up to max "ip:port" pairs,
// then " + N more...".
func endpointsCell(subsets []corev1.EndpointSubset, max int) string {
	var list []string
	total := 0
	more := false
	for _, ss := range subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, a.IP)
				} else {
					more = true
				}
				total++
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, fmt.Sprintf("%s:%d", a.IP, p.Port))
				} else {
					more = true
				}
				total++
			}
		}
	}
	if len(list) == 0 {
		return "<none>"
	}
	out := strings.Join(list, ",")
	if more {
		out += fmt.Sprintf(" + %d more...", total-max)
	}
	return out
}

// validateEndpoints checks an Endpoints on create (old nil) and update as
// upstream 1.37's validateEndpoints: each address ip is a legacy IP field
// with StrictIPCIDRValidation on (KEP-4858, beta and on since 1.36: no
// leading zeros, no IPv4-mapped IPv6, a non-canonical IPv6 address
// accepted with a warning). Unlike other kinds, an update may keep bad
// addresses only by leaving subsets entirely unchanged (KEP-4858: no
// per-address old-value exemption for Endpoints): the subset errors are
// dropped then, as upstream, which only compares after finding errors.
func validateEndpoints(e, old *corev1.Endpoints) field.ErrorList {
	errs := validateEndpointSubsets(e)
	if len(errs) > 0 && old != nil && apiequality.Semantic.DeepEqual(e.Subsets, old.Subsets) {
		return nil
	}
	return errs
}

func validateEndpointSubsets(e *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range e.Subsets {
		path := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(path, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], path.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], path.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, p := range ss.Ports {
			errs = append(errs, validatePortFields(p.Name, p.Port, p.Protocol, p.AppProtocol, len(ss.Ports) > 1, names, path.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ipErrs := validation.IsValidIPForLegacyField(path.Child("ip"), a.IP, true, nil); len(ipErrs) > 0 {
		errs = append(errs, ipErrs...)
	} else if ip, ok := sloppyAddr(a.IP); ok {
		errs = append(errs, specialEndpointIPErrors(ip, a.IP, path.Child("ip"))...)
	}
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(path.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*a.NodeName) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return errs
}

// specialEndpointIPErrors refuses the addresses no endpoint may have
// (Endpoints and EndpointSlices alike) nor a service's externalIPs, as
// upstream's ValidateNonSpecialIP: unspecified (named as given),
// loopback, link-local and link-local multicast (other multicast is
// allowed).
func specialEndpointIPErrors(ip netip.Addr, value string, path *field.Path) field.ErrorList {
	switch {
	case ip.IsUnspecified():
		return field.ErrorList{field.Invalid(path, value, fmt.Sprintf("may not be unspecified (%v)", value))}
	case ip.IsLoopback():
		return field.ErrorList{field.Invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case ip.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case ip.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

// sloppyAddr is a legacy IP field's value as upstream's
// netutils.ParseIPSloppy reads it (so also an address an update kept that
// net/netip refuses), IPv4 as IPv4.
func sloppyAddr(value string) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(netutils.ParseIPSloppy(value))
	return a.Unmap(), ok
}

// endpointsControllerManagedBy is the endpoints.kubernetes.io/managed-by
// value of the endpoints controller's Endpoints, which get no IP warnings
// (the controller writes canonical addresses), as upstream.
const endpointsControllerManagedBy = "endpoint-controller"

// endpointsWarnings are the Warning headers of a valid Endpoints create or
// update, as upstream's endpointsWarnings: each non-standard address ip
// (KEP-4858), unless the endpoints controller wrote the object.
func endpointsWarnings(e, _ *corev1.Endpoints) []string {
	if e.Labels["endpoints.kubernetes.io/managed-by"] == endpointsControllerManagedBy {
		return nil
	}
	var warnings []string
	for i, ss := range e.Subsets {
		path := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			warnings = append(warnings, validation.GetWarningsForIP(path.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			warnings = append(warnings, validation.GetWarningsForIP(path.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return warnings
}
