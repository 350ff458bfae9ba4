package registry

import (
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// metaSurelyValid reports whether apivalidation.ValidateObjectMetaAccessor
// (m, namespaced, nameFn, path) is certain to find nothing, for the
// metadata most creates carry: a name and namespace, labels, managed
// fields, and no generateName, annotations, owner references or
// finalizers. It checks names by hand instead of with upstream's regular
// expressions and builds no field paths, which a create otherwise pays for
// on every request (about ten allocations) although they are only read
// when there is an error. false means "not sure": the caller runs
// upstream's validation, which then decides and words the errors, so the
// result of validation is upstream's either way.
//
// dnsSubdomain says that nameFn is apivalidation.NameIsDNSSubdomain (a
// function value cannot be compared); otherwise nameFn is called.
func metaSurelyValid(m metav1.Object, namespaced bool, nameFn apivalidation.ValidateNameFunc, dnsSubdomain bool) bool {
	if m.GetGenerateName() != "" || len(m.GetAnnotations()) > 0 || len(m.GetOwnerReferences()) > 0 ||
		len(m.GetFinalizers()) > 0 || m.GetGeneration() < 0 {
		return false
	}
	name := m.GetName()
	if name == "" {
		return false
	}
	if dnsSubdomain {
		if !isDNS1123Subdomain(name) {
			return false
		}
	} else if len(nameFn(name, false)) > 0 {
		return false
	}
	if namespaced {
		if !isDNS1123Label(m.GetNamespace()) {
			return false
		}
	} else if m.GetNamespace() != "" {
		return false
	}
	for k, v := range m.GetLabels() {
		if !isQualifiedName(k) || !isLabelValue(v) {
			return false
		}
	}
	for _, f := range m.GetManagedFields() {
		if f.Operation != metav1.ManagedFieldsOperationApply && f.Operation != metav1.ManagedFieldsOperationUpdate {
			return false
		}
		if f.FieldsType != "" && f.FieldsType != "FieldsV1" {
			return false
		}
		if len(f.Manager) > 128 || !isPrintableASCII(f.Manager) || len(f.Subresource) > 256 {
			return false
		}
	}
	return true
}

// isDNS1123Label is validation.IsDNS1123Label finding nothing: 1-63
// characters of [a-z0-9-], starting and ending with [a-z0-9].
func isDNS1123Label(s string) bool {
	return len(s) <= validation.DNS1123LabelMaxLength && isLabelOf(s, false)
}

// isDNS1123Subdomain is validation.IsDNS1123Subdomain finding nothing: at
// most 253 characters, dot-separated labels as isLabelOf (without their
// length limit).
func isDNS1123Subdomain(s string) bool {
	if len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !isLabelOf(s[start:i], false) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// isLabelOf reports whether s is non-empty, starts and ends with a
// lower-case letter or digit (any letter or digit if upper), and has only
// those and '-' between (and '_' and '.' as well if upper: the name part of
// a qualified name).
func isLabelOf(s string, upper bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || upper && 'A' <= c && c <= 'Z'
		if alnum {
			continue
		}
		if i == 0 || i == len(s)-1 {
			return false
		}
		if c != '-' && !(upper && (c == '_' || c == '.')) {
			return false
		}
	}
	return true
}

// isQualifiedName is validation.IsQualifiedName finding nothing: an
// optional DNS-1123 subdomain prefix and '/', then a name part of 1-63
// characters of [A-Za-z0-9-_.] starting and ending with [A-Za-z0-9].
func isQualifiedName(s string) bool {
	name := s
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			prefix := s[:i]
			name = s[i+1:]
			if prefix == "" || !isDNS1123Subdomain(prefix) {
				return false
			}
			break
		}
	}
	return len(name) <= validation.LabelValueMaxLength && isLabelOf(name, true)
}

// isLabelValue is validation.IsValidLabelValue finding nothing: empty, or
// a qualified name's name part.
func isLabelValue(s string) bool {
	return s == "" || len(s) <= validation.LabelValueMaxLength && isLabelOf(s, true)
}

// isPrintableASCII reports whether every byte of s is a printable ASCII
// character (unicode.IsPrint of each rune holds for those).
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// configMapKeyErrors is validation.IsConfigMapKey, answering the common
// valid key (1-253 characters of [-._a-zA-Z0-9], not "." and not starting
// with "..") without its regular expression; any other key gets upstream's
// messages.
func configMapKeyErrors(key string) []string {
	if isConfigMapKey(key) {
		return nil
	}
	return validation.IsConfigMapKey(key)
}

func isConfigMapKey(s string) bool {
	if s == "" || len(s) > validation.DNS1123SubdomainMaxLength || s == "." || strings.HasPrefix(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}
