package endpoints

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// The lifecycle methods k8s.io/api generates for a kind it marks
// deprecated (core/v1 Endpoints since 1.33, for instance).
type (
	lifecycleDeprecated interface {
		APILifecycleDeprecated() (major, minor int)
	}
	lifecycleRemoved interface {
		APILifecycleRemoved() (major, minor int)
	}
	lifecycleReplacement interface {
		APILifecycleReplacement() schema.GroupVersionKind
	}
)

// deprecationWarning is the warning kube-apiserver sends with every
// request to a resource whose kind (gvk, obj its empty object) is
// deprecated at the served version (major.minor; 0.0, unknown, counts as
// past every deprecation): "<group/version> <Kind> is deprecated in
// vX.Y+", then the release it goes away in and its replacement when the
// kind names them. Empty when the kind is not deprecated.
func deprecationWarning(gvk schema.GroupVersionKind, obj runtime.Object, major, minor int) string {
	d, ok := obj.(lifecycleDeprecated)
	if !ok {
		return ""
	}
	depMajor, depMinor := d.APILifecycleDeprecated()
	if depMajor == 0 && depMinor == 0 {
		return ""
	}
	if (major != 0 || minor != 0) && (depMajor > major || depMajor == major && depMinor > minor) {
		return ""
	}
	msg := fmt.Sprintf("%s %s is deprecated in v%d.%d+", gvk.GroupVersion().String(), gvk.Kind, depMajor, depMinor)
	if r, ok := obj.(lifecycleRemoved); ok {
		if rMajor, rMinor := r.APILifecycleRemoved(); rMajor != 0 || rMinor != 0 {
			msg += fmt.Sprintf(", unavailable in v%d.%d+", rMajor, rMinor)
		}
	}
	if r, ok := obj.(lifecycleReplacement); ok {
		if repl := r.APILifecycleReplacement(); !repl.Empty() {
			msg += fmt.Sprintf("; use %s %s", repl.GroupVersion().String(), repl.Kind)
		}
	}
	return msg
}

// deprecationHeader is deprecationWarning as a Warning header's value
// (code 299, no agent); empty for no warning.
func deprecationHeader(gvk schema.GroupVersionKind, obj runtime.Object, major, minor int) string {
	msg := deprecationWarning(gvk, obj, major, minor)
	if msg == "" {
		return ""
	}
	h, err := utilnet.NewWarningHeader(299, "", msg)
	if err != nil {
		return ""
	}
	return h
}

// The audit annotations kube-apiserver puts on a request a deprecated
// kind's route serves: auditDeprecatedKey "true", and auditRemovedReleaseKey
// the release it goes away in when the kind names one.
const (
	auditDeprecatedKey     = "k8s.io/deprecated"
	auditRemovedReleaseKey = "k8s.io/removed-release"
)

// deprecatedRemovedRelease is the "<major>.<minor>" release the kind of
// obj is unavailable from, empty when it names none.
func deprecatedRemovedRelease(obj runtime.Object) string {
	r, ok := obj.(lifecycleRemoved)
	if !ok {
		return ""
	}
	major, minor := r.APILifecycleRemoved()
	if major == 0 && minor == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", major, minor)
}
