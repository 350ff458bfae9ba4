// Package kubeversion is the one source of the Kubernetes version
// kubeproof's components report: the API server's /version (and the
// release its kinds' deprecations are compared with), the kubelet's node
// status, and the user agents of the probes the API server and the
// kubelet send. It imports nothing of kubeproof's, so every component can
// use it.
package kubeversion

import (
	"strconv"
	"strings"
)

// Default is the version kubeproof reports unless configured otherwise,
// as a binary's git version.
const Default = "v1.37.2-kubeproof"

// MajorMinor is the major and minor number of a version such as
// "v1.37.2-kubeproof"; 0, 0 when it has none (a missing, non-numeric or
// negative part).
func MajorMinor(gitVersion string) [2]int {
	f := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	if len(f) < 2 {
		return [2]int{}
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return [2]int{}
	}
	return [2]int{major, minor}
}

// UserAgentVersion is "<major>.<minor>" of gitVersion, as a probe's or a
// lifecycle hook's user agent carries it after "kube-probe/" or
// "kube-lifecycle/" (upstream formats its version info's Major and Minor,
// k8s.io/kubernetes pkg/probe/http request.go userAgent); "." for a
// version without them, whose Major and Minor are empty.
func UserAgentVersion(gitVersion string) string {
	mm := MajorMinor(gitVersion)
	if mm == ([2]int{}) {
		return "."
	}
	return strconv.Itoa(mm[0]) + "." + strconv.Itoa(mm[1])
}
