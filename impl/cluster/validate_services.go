package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"

	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
)

// This file holds kube-apiserver's checks of its secure serving and
// Services flags. kube-apiserver looks at --service-cluster-ip-range
// twice: while completing its options (each entry parsed, the primary
// range's size), where the first problem stops it alone, and then in
// validation (number of entries, sizes, families, the advertised
// address's family), whose errors join the others' after the request
// chain's (authentication, authorization, audit, admission).

// minServiceRangeAddresses is the fewest addresses kube-apiserver
// accepts in the primary service range (counted up to 2^16).
const minServiceRangeAddresses = 8

// maxServiceRangeBits bounds a service range at 2^20 addresses, as
// kube-apiserver's bitmap allocator did; kube-apiserver 1.37's
// IPAddress allocator no longer checks it, kubeproof's allocator (a
// bitmap per range, stored in etcd) still needs it.
const maxServiceRangeBits = 20

// serviceRanges splits a --service-cluster-ip-range value as
// kube-apiserver does: on commas, untrimmed; empty is the default
// range.
func serviceRanges(flag string) []string {
	if flag == "" {
		flag = ipallocator.DefaultServiceClusterIPRange
	}
	return strings.Split(flag, ",")
}

// Complete returns the error kube-apiserver's option completion finds in
// --service-cluster-ip-range, which stops it before validation: the
// first entry no CIDR, the primary range with fewer than 8 addresses, or
// the second entry no CIDR (nil: none). Entries are parsed as
// kube-apiserver parses them (IPv4 with leading zeros accepted, no
// spaces around them).
func (o ServiceOptions) Complete() error {
	ranges := serviceRanges(o.ClusterIPRange)
	_, primary, err := netutils.ParseCIDRSloppy(ranges[0])
	if err != nil {
		return errors.New("service-cluster-ip-range[0] is not a valid cidr")
	}
	if min(netutils.RangeSize(primary), 1<<16) < minServiceRangeAddresses {
		return fmt.Errorf("error determining service IP ranges for primary service cidr: the service cluster IP range must be at least %d IP addresses", minServiceRangeAddresses)
	}
	if len(ranges) > 1 {
		if _, _, err := netutils.ParseCIDRSloppy(ranges[1]); err != nil {
			return errors.New("service-cluster-ip-range[1] is not an ip net")
		}
	}
	return nil
}

// Validate returns kube-apiserver's validation errors for the Services
// flags of a completed ServiceOptions (Complete returned nil), in its
// order and words: more than two ranges, the primary range too large,
// two ranges of one family, the secondary too large, then (unless the
// none endpoint reconciler is used) an --advertise-address of another
// family than the primary range. kube-apiserver always has an advertised
// address: an unspecified one (0.0.0.0, ::) counts as none given, and it
// then takes a specific --bind-address (see WithBindAddress) or the
// host's; kubeproof checks the family of the first two only (the host's
// address is picked when the server starts).
func (o ServiceOptions) Validate() []error {
	ranges := serviceRanges(o.ClusterIPRange)
	_, primary, err := netutils.ParseCIDRSloppy(ranges[0])
	if err != nil {
		return nil // Complete's error
	}
	var errs []error
	if len(ranges) > 2 {
		errs = append(errs, errors.New("--service-cluster-ip-range must not contain more than two entries"))
	}
	if err := checkServiceRangeSize(primary, "--service-cluster-ip-range"); err != nil {
		errs = append(errs, err)
	}
	if len(ranges) > 1 {
		if _, secondary, err := netutils.ParseCIDRSloppy(ranges[1]); err == nil {
			if netutils.IsIPv4CIDR(primary) == netutils.IsIPv4CIDR(secondary) {
				errs = append(errs, errors.New("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"))
			}
			if err := checkServiceRangeSize(secondary, "--service-cluster-ip-range[1]"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if o.EndpointReconcilerType != apiserver.EndpointReconcilerNone && specificAddress(o.AdvertiseAddress) &&
		netutils.IsIPv4CIDR(primary) != netutils.IsIPv4(o.AdvertiseAddress) {
		errs = append(errs, fmt.Errorf("service IP family %q must match public address family %q", primary.String(), o.AdvertiseAddress.String()))
	}
	return errs
}

// WithBindAddress returns o as validated for a server listening on bind
// (--bind-address): without a specific --advertise-address, kube-apiserver
// advertises a bind address that is neither unspecified nor loopback (so
// its family must match the primary range's), else the host's address,
// which kubeproof does not check before it starts (o unchanged).
func (o ServiceOptions) WithBindAddress(bind net.IP) ServiceOptions {
	if !specificAddress(o.AdvertiseAddress) && specificAddress(bind) && !bind.IsLoopback() {
		o.AdvertiseAddress = bind
	}
	return o
}

// specificAddress reports whether ip is given and not 0.0.0.0 or ::.
func specificAddress(ip net.IP) bool { return ip != nil && !ip.IsUnspecified() }

// checkServiceRangeSize refuses a range of more than 2^20 addresses, in
// the words kube-apiserver used while it checked that.
func checkServiceRangeSize(cidr *net.IPNet, flag string) error {
	ones, bits := cidr.Mask.Size()
	if bits-ones > maxServiceRangeBits {
		return fmt.Errorf("specified %s is too large; for %d-bit addresses, the mask must be >= %d", flag, bits, bits-maxServiceRangeBits)
	}
	return nil
}

// CheckEndpointReconcilerType refuses an --endpoint-reconciler-type
// kubeproof does not have. kube-apiserver does not validate the flag: an
// unknown type stops it while its configuration is built, after
// validation, with this message; master-count, which kube-apiserver
// still has (deprecated), kubeproof refuses in its own words.
func (o ServiceOptions) CheckEndpointReconcilerType() error {
	switch t := o.EndpointReconcilerType; t {
	case "", apiserver.EndpointReconcilerLease, apiserver.EndpointReconcilerNone:
		return nil
	case "master-count":
		return errors.New(`--endpoint-reconciler-type=master-count (deprecated in Kubernetes) is not supported; use "lease" or "none"`)
	default:
		return errors.New("Reconciler not implemented: " + t)
	}
}

// ValidateSecurePort returns kube-apiserver's secure serving error for
// --secure-port: outside 1-65535 (its secure port is required, so it
// cannot be turned off). 0 is kubeproof's own: it picks a free port.
func ValidateSecurePort(port int) []error {
	if port < 0 || port > 65535 {
		return []error{fmt.Errorf("--secure-port %v must be between 1 and 65535, inclusive. It cannot be turned off with 0", port)}
	}
	return nil
}
