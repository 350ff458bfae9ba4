package registry

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// services serves core/v1 Services. Defaulting and validation are here;
// ClusterIPs and NodePorts are allocated by the storage in front of the
// services store (ipallocator.ServiceStorage), which the API server puts
// there, so this file needs no knowledge of the configured ranges. What
// depends on the cluster's IP families (ipFamilyPolicy and ipFamilies
// defaults, families the cluster does not serve) is decided by
// InitServiceIPFamilies (service_ipfamilies.go), which that storage runs
// with the configured families once the request is prepared and before
// it is validated, as kube-apiserver's BeginCreate/BeginUpdate hooks do;
// validation then sees the families filled and checks upgrades and
// downgrades between single- and dual-stack with the rest of the update.
func services(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Service]{
		namespaced: true,
		nameFn:     apivalidation.NameIsDNS1035Label,
		defaults:   defaultService,
		prepareForCreate: func(s *corev1.Service) {
			s.Status = corev1.ServiceStatus{}
			normalizeClusterIPs(s, nil)
		},
		prepareForUpdate: func(s, old *corev1.Service) {
			s.Status = old.Status
			KeepAllocatedValues(s, old)
			normalizeClusterIPs(s, old)
			dropTypeDependentFields(s, old)
		},
		validateCreate: func(s *corev1.Service) field.ErrorList { return validateService(s, nil) },
		validateUpdate: func(s, old *corev1.Service) field.ErrorList {
			return append(validateService(s, old), validateServiceUpdate(s, old)...)
		},
		warnings: serviceWarnings,
		fields: func(s *corev1.Service) fields.Set {
			return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
		},
		table: &tableSpec[*corev1.Service]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Type", "string", serviceSpecDoc["type"]),
				column("Cluster-IP", "string", serviceSpecDoc["clusterIP"]),
				column("External-IP", "string", serviceSpecDoc["externalIPs"]),
				column("Port(s)", "string", serviceSpecDoc["ports"]),
				ageColumn(),
				wideColumn("Selector", "string", serviceSpecDoc["selector"]),
			},
			cells: func(s *corev1.Service, now time.Time) []any {
				// kubectl's CLUSTER-IP: every clusterIPs entry.
				clusterIP := strings.Join(s.Spec.ClusterIPs, ",")
				if clusterIP == "" {
					clusterIP = s.Spec.ClusterIP
				}
				if clusterIP == "" {
					clusterIP = "<none>"
				}
				return []any{s.Name, string(s.Spec.Type), clusterIP, serviceExternalIP(s),
					servicePorts(s.Spec.Ports), age(s.CreationTimestamp, now), selectorCell(s.Spec.Selector)}
			},
		},
	}
	st := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "services", SingularName: "service", Kind: "Service",
		Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"},
		// Kubernetes does not serve deletecollection on services.
		Verbs:    verbsNoDeleteCollection,
		New:      func() runtime.Object { return &corev1.Service{} },
		NewList:  func() runtime.Object { return &corev1.ServiceList{} },
		Strategy: st,

		// kube-apiserver's store answers a delete with the deleted object.
		ReturnDeletedObject: true,

		Status: statusStrategy[*corev1.Service]{s: st, k: statusKind[*corev1.Service]{
			keep: func(s, old *corev1.Service) { s.Spec = old.Spec },
			validate: func(s, old *corev1.Service) field.ErrorList {
				return validateServiceStatus(&s.Status, &old.Status, field.NewPath("status"))
			},
			warnings: serviceStatusWarnings,
		}},
	}
}

var serviceSpecDoc = corev1.ServiceSpec{}.SwaggerDoc()

// serviceExternalIP is kubectl's EXTERNAL-IP cell.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(s.Spec.ExternalIPs) > 0 {
		return strings.Join(s.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

// servicePorts is kubectl's PORT(S) cell: "80/TCP", "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.NodePort > 0 {
			out = append(out, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(out, ",")
}

func selectorCell(sel map[string]string) string {
	if len(sel) == 0 {
		return "<none>"
	}
	return labels.FormatLabels(sel)
}

// ServiceNeedsClusterIP reports whether a service of this spec gets a
// ClusterIP allocated (everything but ExternalName and headless).
func ServiceNeedsClusterIP(s *corev1.Service) bool {
	return s.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.Type != "" && s.Spec.ClusterIP != corev1.ClusterIPNone
}

// ServiceNeedsNodePorts reports whether the service's ports get NodePorts
// (NodePort, and LoadBalancer unless allocateLoadBalancerNodePorts is false).
func ServiceNeedsNodePorts(s *corev1.Service) bool {
	switch s.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// externallyAccessible: NodePort and LoadBalancer services, and
// ClusterIP services with externalIPs, are reached from outside the
// cluster; they have an externalTrafficPolicy (defaulted to Cluster).
func externallyAccessible(s *corev1.Service) bool {
	return hasNodePortType(s) || (s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

// dropTypeDependentFields clears, when an update changes a service's type,
// the fields the new type has no use for that the client left as stored
// (the server filled or allocated them; what was allocated is released
// once written), as kube-apiserver does: the IP fields moving to
// ExternalName, NodePorts (when the new spec adds none) leaving NodePort
// and LoadBalancer, the health check NodePort, allocateLoadBalancerNodePorts
// and loadBalancerClass leaving LoadBalancer, externalTrafficPolicy when
// no longer reached from outside. Fields the client changed stay, for
// validation to refuse.
func dropTypeDependentFields(s, old *corev1.Service) {
	dropTypeDependentIPFields(s, old)
	if hasNodePortType(old) && !hasNodePortType(s) && nodePortsWithin(s, old) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
	}
	if ServiceNeedsHealthCheckNodePort(old) && !ServiceNeedsHealthCheckNodePort(s) && s.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		s.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if a, b := s.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			s.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if equalStringPtr(s.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			s.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(s) && s.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		s.Spec.ExternalTrafficPolicy = ""
	}
	// kube-apiserver also clears the load balancer status of a service
	// that stops being a LoadBalancer; here the main endpoint never
	// changes status (the registry's property test): a controller or
	// client clears it through /status.
}

// nodePortsWithin: every NodePort s gives a port old held too.
func nodePortsWithin(s, old *corev1.Service) bool {
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 && !slices.ContainsFunc(old.Spec.Ports, func(op corev1.ServicePort) bool { return op.NodePort == p.NodePort }) {
			return false
		}
	}
	return true
}

// hasNodePortType: NodePort and LoadBalancer services may hold NodePorts
// (a LoadBalancer with allocateLoadBalancerNodePorts false those asked for).
func hasNodePortType(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// ServiceNeedsHealthCheckNodePort: LoadBalancer services with
// externalTrafficPolicy Local get one.
func ServiceNeedsHealthCheckNodePort(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// defaultService is SetDefaults_Service. ipFamilyPolicy and ipFamilies
// depend on the cluster's families: InitServiceIPFamilies fills them.
func defaultService(s *corev1.Service) {
	spec := &s.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		timeout := corev1.DefaultClientIPServiceAffinitySeconds
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(s) {
		if spec.ExternalTrafficPolicy == "" {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.InternalTrafficPolicy == nil {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
	// clusterIP and clusterIPs[0] are the same field.
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
}

// KeepAllocatedValues carries over on update what the server allocated and
// the client left out (kube-apiserver's patchAllocatedValues): clusterIP
// and clusterIPs while the service keeps a type with one, NodePorts of
// ports of the same name while it stays a NodePort or LoadBalancer, the
// health check NodePort.
func KeepAllocatedValues(s, old *corev1.Service) {
	if old.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.Type != corev1.ServiceTypeExternalName {
		if s.Spec.ClusterIP == "" {
			s.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(s.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			s.Spec.ClusterIPs = slices.Clone(old.Spec.ClusterIPs)
		}
	}
	if hasNodePortType(old) && hasNodePortType(s) {
		// By port name, as kube-apiserver: a port whose number or
		// protocol changed keeps its NodePort, unless the new spec gives
		// that NodePort to a port already.
		taken := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			taken[p.NodePort] = true
		}
		byName := make(map[string]int32, len(old.Spec.Ports))
		for _, op := range old.Spec.Ports {
			byName[op.Name] = op.NodePort
		}
		for i := range s.Spec.Ports {
			if p := &s.Spec.Ports[i]; p.NodePort == 0 && !taken[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if ServiceNeedsHealthCheckNodePort(old) && ServiceNeedsHealthCheckNodePort(s) && s.Spec.HealthCheckNodePort == 0 {
		s.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

var (
	supportedServiceTypes = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName),
		string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	supportedServiceProtocols  = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	supportedSessionAffinities = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	supportedIPFamilyPolicies  = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack),
		string(corev1.IPFamilyPolicySingleStack)}
	supportedTrafficPolicies = []string{"Cluster", "Local"}
)

// validateService checks a service on create (old nil) and update. The IP
// and CIDR fields are legacy fields as upstream 1.37's ValidateService with
// StrictIPCIDRValidation on (KEP-4858, beta and on since 1.36): no leading
// zeros, no IPv4-mapped IPv6, loadBalancerSourceRanges (and the
// service.beta.kubernetes.io/load-balancer-source-ranges annotation when
// the field is empty) with no bits set beyond the prefix length; on update
// a value the stored service already had in that field may stay (the
// annotation: when it is unchanged). spec.loadBalancerIP is not validated,
// as upstream; it only gets warnings (serviceWarnings).
func validateService(s, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	headless := s.Spec.ClusterIP == corev1.ClusterIPNone

	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		if s.Spec.ClusterIP != "" {
			errs = append(errs, field.Forbidden(spec.Child("clusterIP"), "may not be set for ExternalName services"))
		}
		name := strings.TrimSuffix(s.Spec.ExternalName, ".")
		if name == "" {
			errs = append(errs, field.Required(spec.Child("externalName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(spec.Child("externalName"), s.Spec.ExternalName, msg))
			}
		}
		if len(s.Spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if s.Spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(spec.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Spec.Type, supportedServiceTypes))
	}

	if len(s.Spec.Ports) == 0 && !headless && s.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	names := sets.New[string]()
	type portKey struct {
		port     int32
		protocol corev1.Protocol
	}
	seenPorts := map[portKey]bool{}
	seenNodePorts := map[portKey]bool{}
	for i, p := range s.Spec.Ports {
		path := spec.Child("ports").Index(i)
		errs = append(errs, validateServicePort(&p, len(s.Spec.Ports) > 1, names, path)...)
		key := portKey{p.Port, p.Protocol}
		if seenPorts[key] {
			errs = append(errs, field.Duplicate(path, key))
		}
		seenPorts[key] = true
		if p.NodePort != 0 {
			if s.Spec.Type == corev1.ServiceTypeClusterIP || s.Spec.Type == corev1.ServiceTypeExternalName {
				errs = append(errs, field.Forbidden(path.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", s.Spec.Type)))
			}
			for _, msg := range validation.IsValidPortNum(int(p.NodePort)) {
				errs = append(errs, field.Invalid(path.Child("nodePort"), p.NodePort, msg))
			}
			nk := portKey{p.NodePort, p.Protocol}
			if seenNodePorts[nk] {
				errs = append(errs, field.Duplicate(path.Child("nodePort"), p.NodePort))
			}
			seenNodePorts[nk] = true
		}
	}

	if s.Spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Spec.Selector, spec.Child("selector"))...)
	}
	switch s.Spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
	case corev1.ServiceAffinityClientIP:
		if c := s.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPServiceAffinitySeconds {
				errs = append(errs, field.Invalid(spec.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t,
					fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds)))
			}
		}
	case "":
		errs = append(errs, field.Required(spec.Child("sessionAffinity"), ""))
	default:
		errs = append(errs, field.NotSupported(spec.Child("sessionAffinity"), s.Spec.SessionAffinity, supportedSessionAffinities))
	}
	if s.Spec.SessionAffinity != corev1.ServiceAffinityClientIP && s.Spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Invalid(spec.Child("sessionAffinityConfig"), s.Spec.SessionAffinityConfig,
			fmt.Sprintf("must not be set when session affinity is %s", s.Spec.SessionAffinity)))
	}

	errs = append(errs, validateServiceClusterIPs(s, old, spec)...)
	var oldExternalIPs []string
	if old != nil {
		oldExternalIPs = old.Spec.ExternalIPs
	}
	for i, ip := range s.Spec.ExternalIPs {
		path := spec.Child("externalIPs").Index(i)
		if ipErrs := validation.IsValidIPForLegacyField(path, ip, true, oldExternalIPs); len(ipErrs) > 0 {
			errs = append(errs, ipErrs...)
		} else if addr, ok := sloppyAddr(ip); ok {
			// As upstream, the checks of an endpoint address.
			errs = append(errs, specialEndpointIPErrors(addr, ip, path)...)
		}
	}

	external := externallyAccessible(s)
	etp := s.Spec.ExternalTrafficPolicy
	switch {
	case !external && etp != "":
		errs = append(errs, field.Invalid(spec.Child("externalTrafficPolicy"), etp, "may only be set for externally-accessible services"))
	case external && etp == "":
		errs = append(errs, field.Required(spec.Child("externalTrafficPolicy"), ""))
	case external && etp != corev1.ServiceExternalTrafficPolicyCluster && etp != corev1.ServiceExternalTrafficPolicyLocal:
		errs = append(errs, field.NotSupported(spec.Child("externalTrafficPolicy"), etp, supportedTrafficPolicies))
	}
	if s.Spec.HealthCheckNodePort != 0 && !ServiceNeedsHealthCheckNodePort(s) {
		errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), s.Spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	} else if s.Spec.HealthCheckNodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(s.Spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), s.Spec.HealthCheckNodePort, msg))
		}
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName {
		switch itp := s.Spec.InternalTrafficPolicy; {
		case itp == nil:
			errs = append(errs, field.Required(spec.Child("internalTrafficPolicy"), ""))
		case *itp != corev1.ServiceInternalTrafficPolicyCluster && *itp != corev1.ServiceInternalTrafficPolicyLocal:
			errs = append(errs, field.NotSupported(spec.Child("internalTrafficPolicy"), *itp, supportedTrafficPolicies))
		}
	}
	if s.Spec.AllocateLoadBalancerNodePorts != nil && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(spec.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	errs = append(errs, validateLoadBalancerSourceRanges(s, old)...)
	if s.Spec.LoadBalancerClass != nil {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(spec.Child("loadBalancerClass"), "may only be used when service type is 'LoadBalancer'"))
		} else {
			for _, msg := range validation.IsQualifiedName(*s.Spec.LoadBalancerClass) {
				errs = append(errs, field.Invalid(spec.Child("loadBalancerClass"), *s.Spec.LoadBalancerClass, msg))
			}
		}
	}
	if td := s.Spec.TrafficDistribution; td != nil && !slices.Contains(supportedTrafficDistributions, *td) {
		errs = append(errs, field.NotSupported(spec.Child("trafficDistribution"), *td, supportedTrafficDistributions))
	}
	return errs
}

// supportedTrafficDistributions are spec.trafficDistribution's values
// (PreferClose is PreferSameZone's older name); the EndpointSlice
// controller turns them into endpoint hints.
var supportedTrafficDistributions = []string{corev1.ServiceTrafficDistributionPreferClose,
	corev1.ServiceTrafficDistributionPreferSameNode, corev1.ServiceTrafficDistributionPreferSameZone}

func validateServicePort(p *corev1.ServicePort, requireName bool, names sets.Set[string], path *field.Path) field.ErrorList {
	errs := validatePortFields(p.Name, p.Port, p.Protocol, p.AppProtocol, requireName, names, path)
	if p.TargetPort.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(p.TargetPort.IntValue()) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort, msg))
		}
	} else {
		for _, msg := range validation.IsValidPortName(p.TargetPort.StrVal) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort, msg))
		}
	}
	return errs
}

// validatePortFields checks what service ports and endpoint ports share:
// the name (required when requireName; a DNS label, unique in names), the
// port number, the protocol and the appProtocol.
func validatePortFields(name string, port int32, protocol corev1.Protocol, appProtocol *string, requireName bool, names sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if name != "" {
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(path.Child("name"), name, msg))
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(path.Child("name"), name))
		}
		names.Insert(name)
	}
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(path.Child("port"), port, msg))
	}
	switch protocol {
	case "":
		errs = append(errs, field.Required(path.Child("protocol"), ""))
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		errs = append(errs, field.NotSupported(path.Child("protocol"), protocol, supportedServiceProtocols))
	}
	if appProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*appProtocol) {
			errs = append(errs, field.Invalid(path.Child("appProtocol"), *appProtocol, msg))
		}
	}
	return errs
}

// validateServiceClusterIPs checks clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy as far as they do not depend on the cluster (those rules
// are InitServiceIPFamilies'). Whether an address is in a service range
// and free is the allocator's to say.
func validateServiceClusterIPs(s, old *corev1.Service, spec *field.Path) field.ErrorList {
	ips := spec.Child("clusterIPs")
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		var errs field.ErrorList
		if len(s.Spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(ips, "may not be set for ExternalName services"))
		}
		return errs
	}
	errs := validateServiceClusterIPsRelatedFields(s, old)
	if isHeadless(s) && hasNodePortType(s) {
		errs = append(errs, field.Invalid(ips.Index(0), corev1.ClusterIPNone, fmt.Sprintf("may not be set to 'None' for %s services", s.Spec.Type)))
	}
	return errs
}

// validateServiceUpdate adds to validateService what kube-apiserver's
// update validation checks: the rules for changing clusterIPs and
// ipFamilies (an upgrade to dual-stack, a downgrade, the primary ones
// immutable; the families are filled by then: the API handler has the
// allocating storage initialize them before it validates), a
// LoadBalancer's loadBalancerClass and a kept health check NodePort
// immutable.
func validateServiceUpdate(s, old *corev1.Service) field.ErrorList {
	errs := ValidateServiceIPFamiliesUpdate(s, old)
	spec := field.NewPath("spec")
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && old.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		!equalStringPtr(s.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(spec.Child("loadBalancerClass"), s.Spec.LoadBalancerClass, "may not change once set"))
	}
	if ServiceNeedsHealthCheckNodePort(s) && ServiceNeedsHealthCheckNodePort(old) && s.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(spec.Child("healthCheckNodePort"), "field is immutable"))
	}
	return errs
}

func equalStringPtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// validateServiceStatus checks a status write. An ingress ip is a legacy
// IP field as upstream 1.37's ValidateLoadBalancerStatus with
// StrictIPCIDRValidation on: an ip any of the stored status's ingress
// entries had may stay.
func validateServiceStatus(st, old *corev1.ServiceStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var oldIPs []string
	for _, in := range old.LoadBalancer.Ingress {
		if in.IP != "" {
			oldIPs = append(oldIPs, in.IP)
		}
	}
	for i, in := range st.LoadBalancer.Ingress {
		p := path.Child("loadBalancer", "ingress").Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(p.Child("ip"), in.IP, true, oldIPs)...)
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, msg))
			}
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(st.Conditions, path.Child("conditions"))...)
	return errs
}

// maxClientIPServiceAffinitySeconds is the longest ClientIP affinity (a day).
const maxClientIPServiceAffinitySeconds = 86400

// validateLoadBalancerSourceRanges checks spec.loadBalancerSourceRanges
// as upstream 1.37's ValidateService, at upstream's path
// (spec.LoadBalancerSourceRanges, capitalized): each value, space-padding
// trimmed, a legacy CIDR field with StrictIPCIDRValidation on, the stored
// service's values (trimmed) exempt. With the field empty, the legacy
// service.beta.kubernetes.io/load-balancer-source-ranges annotation is
// checked the same way when it changed (a comma-separated list).
func validateLoadBalancerSourceRanges(s, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	if len(s.Spec.LoadBalancerSourceRanges) > 0 {
		path := field.NewPath("spec", "LoadBalancerSourceRanges")
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
		}
		var oldCIDRs []string
		if old != nil {
			for _, r := range old.Spec.LoadBalancerSourceRanges {
				oldCIDRs = append(oldCIDRs, strings.TrimSpace(r))
			}
		}
		for i, r := range s.Spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(path.Index(i), strings.TrimSpace(r), true, oldCIDRs)...)
		}
		return errs
	}
	val, ok := s.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
	if !ok {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
	}
	if old != nil {
		if oldVal, had := old.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; had && oldVal == val {
			return errs
		}
	}
	if val = strings.TrimSpace(val); val != "" {
		for _, r := range strings.Split(val, ",") {
			errs = append(errs, validation.IsValidCIDRForLegacyField(path, strings.TrimSpace(r), true, nil)...)
		}
	}
	return errs
}

// serviceWarnings are the Warning headers of a valid service create or
// update, as upstream's GetWarningsForService: non-standard clusterIPs,
// externalIPs, loadBalancerIP and loadBalancerSourceRanges values (KEP-4858)
// and fields a service of its type ignores.
func serviceWarnings(s, _ *corev1.Service) []string {
	var warnings []string
	spec := field.NewPath("spec")
	if _, ok := s.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		warnings = append(warnings, fmt.Sprintf("annotation %s is deprecated, please use %s instead", corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}
	if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range s.Spec.ClusterIPs {
			warnings = append(warnings, validation.GetWarningsForIP(spec.Child("clusterIPs").Index(i), ip)...)
		}
	}
	if s.Spec.Type == corev1.ServiceTypeClusterIP && s.Spec.ClusterIP == corev1.ClusterIPNone {
		if s.Spec.LoadBalancerIP != "" {
			warnings = append(warnings, "spec.loadBalancerIP is ignored for headless services")
		}
		if len(s.Spec.ExternalIPs) > 0 {
			warnings = append(warnings, "spec.externalIPs is ignored for headless services")
		}
		if s.Spec.SessionAffinity != corev1.ServiceAffinityNone {
			warnings = append(warnings, "spec.SessionAffinity is ignored for headless services")
		}
	}
	for i, ip := range s.Spec.ExternalIPs {
		warnings = append(warnings, validation.GetWarningsForIP(spec.Child("externalIPs").Index(i), ip)...)
	}
	if s.Spec.LoadBalancerIP != "" && netutils.ParseIPSloppy(s.Spec.LoadBalancerIP) != nil {
		warnings = append(warnings, validation.GetWarningsForIP(spec.Child("loadBalancerIP"), s.Spec.LoadBalancerIP)...)
	}
	for i, r := range s.Spec.LoadBalancerSourceRanges {
		warnings = append(warnings, validation.GetWarningsForCIDR(spec.Child("loadBalancerSourceRanges").Index(i), r)...)
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName && len(s.Spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.ExternalName != "" {
		warnings = append(warnings, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}
	if td := s.Spec.TrafficDistribution; td != nil && *td == corev1.ServiceTrafficDistributionPreferClose {
		warnings = append(warnings, fmt.Sprintf("spec.trafficDistribution: %q is deprecated; use %q", corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone))
	}
	return warnings
}

// serviceStatusWarnings are the Warning headers of a valid services/status
// write, as upstream's serviceStatusStrategy.WarningsOnUpdate: a
// non-standard ingress ip, named at status.loadBalancer.ingress[i] (not
// .ip, as upstream).
func serviceStatusWarnings(s, _ *corev1.Service) []string {
	var warnings []string
	for i, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("status", "loadBalancer", "ingress").Index(i), in.IP)...)
		}
	}
	return warnings
}
