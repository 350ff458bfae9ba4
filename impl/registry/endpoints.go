package registry

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/ipfamily"
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
		validate: validateEndpoints,
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

func validateEndpoints(e *corev1.Endpoints) field.ErrorList {
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
	if ip, err := ipfamily.Parse(a.IP); err != nil {
		errs = append(errs, field.Invalid(path.Child("ip"), a.IP, "must be a valid IP address"))
	} else {
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
// (Endpoints and EndpointSlices alike): unspecified, loopback, link-local
// and link-local multicast.
func specialEndpointIPErrors(ip netip.Addr, value string, path *field.Path) field.ErrorList {
	switch {
	case ip.IsUnspecified():
		return field.ErrorList{field.Invalid(path, value, "may not be unspecified (0.0.0.0)")}
	case ip.IsLoopback():
		return field.ErrorList{field.Invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case ip.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case ip.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}
