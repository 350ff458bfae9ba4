package registry

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// This file holds what a service's clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy mean on a cluster of one or two IP families (single-stack
// IPv4, single-stack IPv6, or dual-stack with either family primary):
//
//   - validateServiceClusterIPsRelatedFields checks them on their own,
//     whatever the cluster (part of every create and update's validation);
//   - InitServiceIPFamilies fills ipFamilyPolicy and ipFamilies from the
//     request, the stored service and the cluster's families, and refuses
//     what the cluster cannot serve (kube-apiserver's allocator does this
//     before the request is validated; here ipallocator.ServiceStorage
//     runs it for the API handler at that point, and again before it
//     allocates);
//   - ValidateServiceIPFamiliesUpdate checks an upgrade (a second family
//     added) or downgrade (the second family dropped) once initialized
//     (part of every update's validation).

func ipFamilyPolicy(s *corev1.Service) corev1.IPFamilyPolicy {
	if s.Spec.IPFamilyPolicy == nil {
		return ""
	}
	return *s.Spec.IPFamilyPolicy
}

// isHeadless: clusterIPs is exactly ["None"].
func isHeadless(s *corev1.Service) bool {
	return s != nil && len(s.Spec.ClusterIPs) == 1 && s.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

var supportedServiceIPFamilies = []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}

// validateServiceClusterIPsRelatedFields checks clusterIP, clusterIPs,
// ipFamilies and ipFamilyPolicy without knowing the cluster: clusterIPs
// starts with clusterIP, holds at most one address per family (or only
// "None"), families are known and not repeated, and each address is of
// the family at its index. An unset policy or families is fine: they are
// filled before allocation (InitServiceIPFamilies). Each address is a
// legacy IP field as upstream 1.37's ValidateServiceClusterIPsRelatedFields
// with StrictIPCIDRValidation on (KEP-4858, beta and on since 1.36): no
// leading zeros, no IPv4-mapped IPv6, a non-canonical IPv6 address accepted
// (with a warning, serviceWarnings); on update (old not nil) an address the
// stored service already had in clusterIPs may stay.
func validateServiceClusterIPsRelatedFields(s, old *corev1.Service) field.ErrorList {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ipsPath, famPath, policyPath := spec.Child("clusterIPs"), spec.Child("ipFamilies"), spec.Child("ipFamilyPolicy")
	if s.Spec.ClusterIP != "" {
		if len(s.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(ipsPath, ""))
		} else if s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
			errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(s.Spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, f := range s.Spec.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(famPath.Index(i), f, supportedServiceIPFamilies))
		}
		if seen[f] {
			errs = append(errs, field.Duplicate(famPath.Index(i), f))
		}
		seen[f] = true
	}
	if p := s.Spec.IPFamilyPolicy; p != nil && !slices.Contains(supportedIPFamilyPolicies, string(*p)) {
		errs = append(errs, field.NotSupported(policyPath, *p, supportedIPFamilyPolicies))
	}
	var oldClusterIPs []string
	if old != nil {
		oldClusterIPs = old.Spec.ClusterIPs
	}
	badIPs := false
	for i, ip := range s.Spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(s.Spec.ClusterIPs) > 1 {
				badIPs = true
				errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		if ipErrs := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, true, oldClusterIPs); len(ipErrs) > 0 {
			badIPs = true
			errs = append(errs, ipErrs...)
		}
	}
	if len(s.Spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if badIPs {
		// Family checks of bad addresses would only add noise.
		return errs
	}
	if len(s.Spec.ClusterIPs) == 2 && legacyIPFamily(s.Spec.ClusterIPs[0]) == legacyIPFamily(s.Spec.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadless(s) {
		for i, ip := range s.Spec.ClusterIPs {
			if i >= len(s.Spec.IPFamilies) {
				break
			}
			if f := legacyIPFamily(ip); f != s.Spec.IPFamilies[i] && (s.Spec.IPFamilies[i] == corev1.IPv4Protocol || s.Spec.IPFamilies[i] == corev1.IPv6Protocol) {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip,
					fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", s.Spec.IPFamilies[i], i)))
			}
		}
	}
	return errs
}

// InitServiceIPFamilies fills svc's ipFamilyPolicy and ipFamilies (svc is
// changed in place) for a cluster serving the families in cluster
// (primary first: --service-cluster-ip-range's order), as kube-apiserver
// does before allocating; old is the stored service on update (nil on
// create). The errors are the request's 422:
//
//   - no policy: the stored one on update, else RequireDualStack for a
//     headless service without selector, else SingleStack;
//   - SingleStack with two clusterIPs or two families is refused; on
//     update, SingleStack with the stored clusterIPs/families unchanged
//     keeps only the first (a downgrade), and another policy that drops
//     the second one is refused;
//   - families follow the requested clusterIPs; an address of a family
//     the cluster does not serve is refused;
//   - headless without selector: the first family is the requested or
//     primary one, and any policy but SingleStack adds the other family
//     even on a single-stack cluster (its endpoints may have both);
//   - otherwise RequireDualStack on a single-stack cluster and any family
//     the cluster does not serve are refused; no family gets the primary
//     one, and PreferDualStack or RequireDualStack on a dual-stack
//     cluster adds the other family (an upgrade on update);
//   - a PreferDualStack service whose policy, clusterIPs and families the
//     update does not change is left as it is, so a cluster gaining or
//     losing a family never changes existing services.
func InitServiceIPFamilies(svc, old *corev1.Service, cluster []corev1.IPFamily) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || len(cluster) == 0 {
		return nil
	}
	if unchangedPreferDualStack(svc, old) {
		return nil
	}
	spec := field.NewPath("spec")
	policyPath := spec.Child("ipFamilyPolicy")
	if svc.Spec.IPFamilyPolicy == nil {
		var p corev1.IPFamilyPolicy
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			p = *old.Spec.IPFamilyPolicy
		case svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0:
			p = corev1.IPFamilyPolicyRequireDualStack
		default:
			p = corev1.IPFamilyPolicySingleStack
		}
		svc.Spec.IPFamilyPolicy = &p
	}
	if errs := validateServiceClusterIPsRelatedFields(svc, old); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	policy := ipFamilyPolicy(svc)
	if old != nil {
		if policy == corev1.IPFamilyPolicySingleStack {
			// Single-stack with the dual-stack fields untouched is a
			// downgrade: the first address and family stay.
			if slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) && len(svc.Spec.ClusterIPs) > 1 {
				svc.Spec.ClusterIPs = svc.Spec.ClusterIPs[:1]
			}
			if slices.Equal(old.Spec.IPFamilies, svc.Spec.IPFamilies) && len(svc.Spec.IPFamilies) > 1 {
				svc.Spec.IPFamilies = svc.Spec.IPFamilies[:1]
			}
		} else {
			if len(svc.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) < len(old.Spec.ClusterIPs) {
				errs = append(errs, field.Invalid(policyPath, policy, "must be 'SingleStack' to release the secondary cluster IP"))
			}
			if len(svc.Spec.IPFamilies) > 0 && len(svc.Spec.IPFamilies) < len(old.Spec.IPFamilies) {
				errs = append(errs, field.Invalid(policyPath, policy, "must be 'SingleStack' to release the secondary IP family"))
			}
		}
	}
	if policy == corev1.IPFamilyPolicySingleStack {
		if len(svc.Spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(svc.Spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i < len(svc.Spec.IPFamilies) {
			continue
		}
		f := legacyIPFamily(ip)
		if !slices.Contains(cluster, f) {
			errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
			continue
		}
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, f)
	}
	if len(errs) > 0 {
		return errs
	}

	if svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0 {
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{cluster[0]}
		}
		if len(svc.Spec.IPFamilies) == 1 && policy != corev1.IPFamilyPolicySingleStack {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, ipfamily.Other(svc.Spec.IPFamilies[0]))
		}
		return nil
	}

	if policy == corev1.IPFamilyPolicyRequireDualStack && len(cluster) < 2 {
		errs = append(errs, field.Invalid(policyPath, policy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range svc.Spec.IPFamilies {
		if !slices.Contains(cluster, f) {
			errs = append(errs, field.Invalid(spec.Child("ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{cluster[0]}
	}
	if policy != corev1.IPFamilyPolicySingleStack && len(svc.Spec.IPFamilies) == 1 && len(cluster) == 2 {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, ipfamily.Other(svc.Spec.IPFamilies[0]))
	}
	return nil
}

// unchangedPreferDualStack: an update of a PreferDualStack service with an
// IP that keeps its type, policy, clusterIPs and families.
func unchangedPreferDualStack(svc, old *corev1.Service) bool {
	if old == nil || svc.Spec.IPFamilyPolicy == nil || old.Spec.Type != svc.Spec.Type {
		return false
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return false
	}
	return ipFamilyPolicy(svc) == corev1.IPFamilyPolicyPreferDualStack &&
		(old.Spec.IPFamilyPolicy == nil || *old.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyPreferDualStack) &&
		slices.Equal(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) && slices.Equal(old.Spec.IPFamilies, svc.Spec.IPFamilies)
}

// ValidateServiceIPFamiliesUpdate checks an update's clusterIPs and
// ipFamilies against the stored ones once initialized: the first address
// and family never change (except to, from or on ExternalName, and on
// headless services, whose families may change), a second one may be
// added, and dropping it needs ipFamilyPolicy SingleStack.
func ValidateServiceIPFamiliesUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ipsPath, famPath, policyPath := spec.Child("clusterIPs"), spec.Child("ipFamilies"), spec.Child("ipFamilyPolicy")
	singleStack := ipFamilyPolicy(svc) == corev1.IPFamilyPolicySingleStack
	newHeadless, oldHeadless := isHeadless(svc), isHeadless(old)

	if !newHeadless || !oldHeadless {
		n, o := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
		switch {
		case len(o) == len(n):
			for i := range o {
				if o[i] != n[i] {
					errs = append(errs, field.Invalid(ipsPath.Index(i), n, "may not change once set"))
				}
			}
		case len(o) > len(n):
			if len(n) == 0 {
				errs = append(errs, field.Invalid(ipsPath.Index(0), n, "primary clusterIP can not be unset"))
			}
			if len(o) > 0 && len(n) > 0 && n[0] != o[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), n, "may not change once set"))
			}
			if len(n) == 1 && !singleStack {
				errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
			}
		default:
			if len(o) > 0 && n[0] != o[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), n, "may not change once set"))
			}
		}
	}

	if newHeadless || oldHeadless {
		return errs
	}
	n, o := svc.Spec.IPFamilies, old.Spec.IPFamilies
	switch {
	case len(o) == len(n):
		for i := range o {
			if o[i] != n[i] {
				errs = append(errs, field.Invalid(famPath.Index(0), n, "may not change once set"))
			}
		}
	case len(o) > len(n):
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(famPath.Index(0), n, "primary ipFamily can not be unset"))
		}
		if len(n) > 0 && n[0] != o[0] {
			errs = append(errs, field.Invalid(famPath.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(n) == 1 && !singleStack {
			errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(o) > 0 && len(n) > 0 && n[0] != o[0] {
			errs = append(errs, field.Invalid(famPath.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return errs
}

// dropTypeDependentIPFields clears, when an update moves a service to
// ExternalName, the clusterIPs, families and policy the client left as
// stored (the server filled them; the IPs are released once written), as
// kube-apiserver does (part of dropTypeDependentFields). Fields the client
// changed stay, for validation to refuse.
func dropTypeDependentIPFields(s, old *corev1.Service) {
	if old.Spec.Type == corev1.ServiceTypeExternalName || s.Spec.Type != corev1.ServiceTypeExternalName {
		return
	}
	if s.Spec.ClusterIP == old.Spec.ClusterIP && slices.Equal(s.Spec.ClusterIPs, old.Spec.ClusterIPs) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
	}
	if slices.Equal(s.Spec.IPFamilies, old.Spec.IPFamilies) {
		s.Spec.IPFamilies = nil
	}
	if ipFamilyPolicy(s) == ipFamilyPolicy(old) {
		s.Spec.IPFamilyPolicy = nil
	}
}

// normalizeClusterIPs keeps clusterIP and clusterIPs (whose first entry is
// the same field) in step before validation, as kube-apiserver: on
// create, a client that sets only clusterIP gets clusterIPs from it; on
// update, a client that left clusterIPs out but kept clusterIP keeps the
// stored clusterIPs, one that cleared clusterIP but kept clusterIPs gets
// both cleared, and one that changed clusterIP only gets clusterIPs from
// it (validation then refuses the change).
func normalizeClusterIPs(s, old *corev1.Service) {
	if old == nil {
		if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0 {
			s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(s.Spec.ClusterIPs) == 0 && s.Spec.ClusterIP == old.Spec.ClusterIP {
		s.Spec.ClusterIPs = slices.Clone(old.Spec.ClusterIPs)
	}
	if s.Spec.ClusterIP != old.Spec.ClusterIP {
		same := slices.Equal(s.Spec.ClusterIPs, old.Spec.ClusterIPs)
		if old.Spec.ClusterIP != "" && s.Spec.ClusterIP == "" && same {
			s.Spec.ClusterIPs = nil
		}
		if s.Spec.ClusterIP != "" && same {
			s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
		}
	}
}

// legacyIPFamily is the family of a clusterIPs entry that passed legacy IP
// validation, read as upstream's netutils.IsIPv6String does: a value an
// update kept from the stored service may be one that net/netip refuses
// (leading zeros), and it is still of its family.
func legacyIPFamily(ip string) corev1.IPFamily {
	a := netutils.ParseIPSloppy(ip)
	switch {
	case a == nil:
		return ""
	case a.To4() != nil:
		return corev1.IPv4Protocol
	default:
		return corev1.IPv6Protocol
	}
}
