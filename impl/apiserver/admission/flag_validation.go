package admission

import (
	"fmt"
	"slices"
)

// ValidatePluginFlags returns every error kube-apiserver's admission
// options validation finds in --enable-admission-plugins (enable) and
// --disable-admission-plugins (disable), in its order and words: each
// unknown enabled plugin, each unknown disabled plugin, then the plugins
// named in both, sorted, as one error. A plugin kube-apiserver has but
// kubeproof does not is unknown here.
func ValidatePluginFlags(enable, disable []string) []error {
	var errs []error
	for _, n := range enable {
		if !isPlugin(n) {
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is unknown", n))
		}
	}
	for _, n := range disable {
		if !isPlugin(n) {
			errs = append(errs, fmt.Errorf("disable-admission-plugins plugin %q is unknown", n))
		}
	}
	var both []string
	for _, n := range enable {
		if slices.Contains(disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	return errs
}

// isPlugin says whether name is one of the plugins.
func isPlugin(name string) bool {
	return slices.ContainsFunc(plugins, func(p registered) bool { return p.name == name })
}
