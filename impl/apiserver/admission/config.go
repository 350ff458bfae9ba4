package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The AdmissionConfiguration kinds kube-apiserver's
// --admission-control-config-file accepts: apiserver.config.k8s.io/v1
// and the older apiserver.k8s.io/v1alpha1.
var admissionConfigVersions = []string{"apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1"}

// The PodSecurityConfiguration versions kube-apiserver decodes.
var podSecurityConfigVersions = []string{
	"pod-security.admission.config.k8s.io/v1",
	"pod-security.admission.config.k8s.io/v1beta1",
	"pod-security.admission.config.k8s.io/v1alpha1",
}

// AdmissionConfig is a parsed --admission-control-config-file: each
// plugin's configuration, inline or in a file of its own.
type AdmissionConfig struct {
	plugins []pluginConfig
}

type pluginConfig struct {
	name string
	// path is absolute (relative paths are the configuration file's
	// directory's); configuration, when set, wins over it.
	path          string
	configuration json.RawMessage
}

// admissionConfigFile is an AdmissionConfiguration's fields but its type
// (checkTypeMeta reads that).
type admissionConfigFile struct {
	Plugins []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path"`
		Configuration json.RawMessage `json:"configuration"`
	} `json:"plugins"`
}

// ReadAdmissionConfiguration reads an AdmissionConfiguration (YAML or
// JSON) as kube-apiserver's --admission-control-config-file: an empty path
// is no configuration; unknown fields are ignored; a file that is not an
// AdmissionConfiguration is an error, unless it is one of the two legacy
// unversioned files (imagePolicy, podNodeSelectorPluginConfig), which
// configure plugins kubeproof does not have and so configure nothing.
func ReadAdmissionConfiguration(path string) (*AdmissionConfig, error) {
	if path == "" {
		return &AdmissionConfig{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read admission control configuration from %q [%v]", path, err)
	}
	var f admissionConfigFile
	if err := decodeTyped(data, &f, false); err != nil {
		return nil, fmt.Errorf("decoding admission control configuration %q: %w", path, err)
	}
	if err := checkTypeMeta(data, "AdmissionConfiguration", admissionConfigVersions); err != nil {
		if !errors.Is(err, errTypeMeta) || !legacyAdmissionFile(data) {
			return nil, err
		}
		return &AdmissionConfig{}, nil
	}
	base := filepath.Dir(path)
	c := &AdmissionConfig{}
	for _, p := range f.Plugins {
		pc := pluginConfig{name: p.Name, path: p.Path}
		if len(p.Configuration) > 0 && string(p.Configuration) != "null" {
			pc.configuration = p.Configuration
		}
		if pc.path != "" && !filepath.IsAbs(pc.path) {
			if base == "." || base == "" {
				wd, err := os.Getwd()
				if err != nil {
					return nil, fmt.Errorf("resolving plugin %s's configuration path: %w", p.Name, err)
				}
				base = wd
			}
			pc.path = filepath.Join(base, pc.path)
		}
		c.plugins = append(c.plugins, pc)
	}
	return c, nil
}

// legacyAdmissionFile: an unversioned file kube-apiserver still takes as
// ImagePolicyWebhook's or PodNodeSelector's configuration.
func legacyAdmissionFile(data []byte) bool {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return false
	}
	_, image := m["imagePolicy"]
	_, nodeSelector := m["podNodeSelectorPluginConfig"]
	return image || nodeSelector
}

// ConfigFor is the named plugin's configuration, JSON (nil: none): the
// first entry of that name, its inline configuration, else its path's
// file.
func (c *AdmissionConfig) ConfigFor(name string) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	for _, p := range c.plugins {
		if p.name != name {
			continue
		}
		if p.configuration != nil {
			return p.configuration, nil
		}
		if p.path == "" {
			return nil, nil
		}
		data, err := os.ReadFile(p.path)
		if err != nil {
			return nil, fmt.Errorf("Couldn't open admission plugin configuration %s: %w", p.path, err)
		}
		return data, nil
	}
	return nil, nil
}

// Apply configures the enabled plugins in opts from c, as kube-apiserver
// initialises them: a plugin that is not enabled is not configured (its
// configuration is not even read); PodSecurity reads its
// PodSecurityConfiguration, ResourceQuota its limitedResources, the
// webhook plugins their kubeConfigFile's users (webhook_auth.go); the other
// plugins that have a configuration are returned in ignored (kubeproof
// reads none of theirs).
func (c *AdmissionConfig) Apply(enabled []string, opts *Options) (ignored []string, err error) {
	for _, p := range plugins {
		if !slices.Contains(enabled, p.name) {
			continue
		}
		data, err := c.ConfigFor(p.name)
		if err != nil {
			return nil, err
		}
		switch {
		case p.name == "PodSecurity":
			psc, err := decodePodSecurityConfiguration(data)
			if err != nil {
				return nil, fmt.Errorf("couldn't init admission plugin %q: %w", p.name, err)
			}
			if err := psc.validate(); err != nil {
				return nil, fmt.Errorf("failed to initialize admission plugin %q: %w", p.name, err)
			}
			d, e := psc.Defaults, psc.Exemptions
			opts.PodSecurityDefaultEnforce, opts.PodSecurityDefaultEnforceVersion = d.Enforce, d.EnforceVersion
			opts.PodSecurityDefaultWarn, opts.PodSecurityDefaultWarnVersion = d.Warn, d.WarnVersion
			opts.PodSecurityDefaultAudit, opts.PodSecurityDefaultAuditVersion = d.Audit, d.AuditVersion
			opts.PodSecurityExemptUsers, opts.PodSecurityExemptNamespaces = e.Usernames, e.Namespaces
			opts.PodSecurityExemptRuntimeClasses = e.RuntimeClasses
		case p.name == "ResourceQuota" && data != nil:
			limited, err := decodeResourceQuotaConfiguration(data)
			if err != nil {
				return nil, fmt.Errorf("couldn't init admission plugin %q: %w", p.name, err)
			}
			opts.QuotaLimitedResources = limited
		case (p.name == "MutatingAdmissionWebhook" || p.name == "ValidatingAdmissionWebhook") && data != nil:
			creds, err := decodeWebhookAdmission(data)
			if err != nil {
				return nil, fmt.Errorf("couldn't init admission plugin %q: %w", p.name, err)
			}
			if p.name == "MutatingAdmissionWebhook" {
				opts.MutatingWebhookCredentials = creds
			} else {
				opts.ValidatingWebhookCredentials = creds
			}
		case data != nil:
			ignored = append(ignored, p.name)
		}
	}
	return ignored, nil
}

// decodeResourceQuotaConfiguration decodes ResourceQuota's configuration
// (apiserver.config.k8s.io/v1 ResourceQuotaConfiguration, or
// resourcequota.admission.k8s.io/v1beta1 or v1alpha1 Configuration) and
// validates it as kube-apiserver (every limited resource names its
// resource).
func decodeResourceQuotaConfiguration(data []byte) ([]LimitedResource, error) {
	var c struct {
		LimitedResources []LimitedResource `json:"limitedResources"`
	}
	if err := decodeTyped(data, &c, false); err != nil {
		return nil, err
	}
	want := "Configuration"
	if apiVersion, _ := typeMeta(data); apiVersion == "apiserver.config.k8s.io/v1" {
		want = "ResourceQuotaConfiguration"
	}
	if err := checkTypeMeta(data, want, []string{"apiserver.config.k8s.io/v1",
		"resourcequota.admission.k8s.io/v1beta1", "resourcequota.admission.k8s.io/v1alpha1"}); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	path := field.NewPath("limitedResources")
	for i, l := range c.LimitedResources {
		if l.Resource == "" {
			errs = append(errs, field.Required(path.Index(i).Child("resource"), ""))
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return c.LimitedResources, nil
}

// PodSecurityConfiguration is PodSecurity's configuration
// (pod-security.admission.config.k8s.io/v1, v1beta1, v1alpha1: the same
// fields).
type PodSecurityConfiguration struct {
	APIVersion string                `json:"apiVersion,omitempty"`
	Kind       string                `json:"kind,omitempty"`
	Defaults   PodSecurityDefaults   `json:"defaults"`
	Exemptions PodSecurityExemptions `json:"exemptions"`
}

// PodSecurityDefaults are the policies of namespaces without labels.
type PodSecurityDefaults struct {
	Enforce        string `json:"enforce,omitempty"`
	EnforceVersion string `json:"enforce-version,omitempty"`
	Audit          string `json:"audit,omitempty"`
	AuditVersion   string `json:"audit-version,omitempty"`
	Warn           string `json:"warn,omitempty"`
	WarnVersion    string `json:"warn-version,omitempty"`
}

// PodSecurityExemptions are the users, namespaces and runtime classes
// PodSecurity does not check.
type PodSecurityExemptions struct {
	Usernames      []string `json:"usernames,omitempty"`
	Namespaces     []string `json:"namespaces,omitempty"`
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
}

// decodePodSecurityConfiguration decodes PodSecurity's configuration
// strictly (unknown and duplicate fields are errors) and defaults it
// (levels privileged, versions latest); no data is the default
// configuration.
func decodePodSecurityConfiguration(data []byte) (*PodSecurityConfiguration, error) {
	c := &PodSecurityConfiguration{}
	if len(data) > 0 {
		if err := decodeTyped(data, c, true); err != nil {
			return nil, err
		}
		if err := checkTypeMeta(data, "PodSecurityConfiguration", podSecurityConfigVersions); err != nil {
			return nil, err
		}
	}
	d := &c.Defaults
	for _, f := range []*string{&d.Enforce, &d.Warn, &d.Audit} {
		if *f == "" {
			*f = levelPrivileged
		}
	}
	for _, f := range []*string{&d.EnforceVersion, &d.WarnVersion, &d.AuditVersion} {
		if *f == "" {
			*f = "latest"
		}
	}
	return c, nil
}

// validate checks a defaulted configuration as kube-apiserver's
// PodSecurity initialisation: first the defaults' levels and versions
// ("PodSecurity configuration error: Enforce.Level: ..."), then the
// exemptions (namespaces DNS labels, runtime classes DNS subdomains,
// usernames non-empty, none twice: "PodSecurity invalid: ...").
func (c *PodSecurityConfiguration) validate() error {
	d := c.Defaults
	var errs []error
	for _, m := range []struct{ name, level, version string }{
		{"Enforce", d.Enforce, d.EnforceVersion}, {"Audit", d.Audit, d.AuditVersion}, {"Warn", d.Warn, d.WarnVersion},
	} {
		if !validLevel(m.level) {
			errs = append(errs, fmt.Errorf("%s.Level: must be one of privileged, baseline, restricted", m.name))
		}
		if _, ok := parsePolicyVersion(m.version); !ok {
			errs = append(errs, fmt.Errorf(`%s.Version: must be "latest" or "v1.x"`, m.name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("PodSecurity configuration error: %w", utilerrors.NewAggregate(errs))
	}
	var ferrs field.ErrorList
	exemptions := field.NewPath("exemptions")
	check := func(p *field.Path, names []string, invalid func(string) []string) {
		seen := map[string]bool{}
		for i, n := range names {
			if msgs := invalid(n); len(msgs) > 0 {
				ferrs = append(ferrs, field.Invalid(p.Index(i), n, strings.Join(msgs, ", ")))
				continue
			}
			if seen[n] {
				ferrs = append(ferrs, field.Duplicate(p.Index(i), n))
				continue
			}
			seen[n] = true
		}
	}
	check(exemptions.Child("namespaces"), c.Exemptions.Namespaces, func(n string) []string { return apivalidation.ValidateNamespaceName(n, false) })
	check(exemptions.Child("runtimeClasses"), c.Exemptions.RuntimeClasses, func(n string) []string { return apivalidation.NameIsDNSSubdomain(n, false) })
	users := exemptions.Child("usernames")
	seen := map[string]bool{}
	for i, u := range c.Exemptions.Usernames {
		switch {
		case u == "":
			ferrs = append(ferrs, field.Required(users.Index(i), ""))
		case seen[u]:
			ferrs = append(ferrs, field.Duplicate(users.Index(i), u))
		default:
			seen[u] = true
		}
	}
	if len(ferrs) > 0 {
		return fmt.Errorf("PodSecurity invalid: %w", ferrs.ToAggregate())
	}
	return nil
}

// errTypeMeta marks a missing or unknown apiVersion or kind.
var errTypeMeta = errors.New("type")

type typeMetaError struct{ msg string }

func (e *typeMetaError) Error() string        { return e.msg }
func (e *typeMetaError) Is(target error) bool { return target == errTypeMeta }

// typeMeta is a configuration's apiVersion and kind, their keys in any
// case, as apimachinery's meta factory finds them (encoding/json); ""
// where data is no YAML or JSON object (the typed decode says why).
func typeMeta(data []byte) (apiVersion, kind string) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return "", ""
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if json.Unmarshal(js, &tm) != nil {
		return "", ""
	}
	return tm.APIVersion, tm.Kind
}

// checkTypeMeta checks a configuration's kind and apiVersion (typeMeta)
// as apimachinery's decoder reports them (kind first).
func checkTypeMeta(data []byte, wantKind string, versions []string) error {
	apiVersion, kind := typeMeta(data)
	switch {
	case kind == "":
		return &typeMetaError{fmt.Sprintf("Object 'Kind' is missing in '%s'", data)}
	case apiVersion == "":
		return &typeMetaError{fmt.Sprintf("Object 'apiVersion' is missing in '%s'", data)}
	case kind != wantKind || !slices.Contains(versions, apiVersion):
		return &typeMetaError{fmt.Sprintf("no kind %q is registered for version %q", kind, apiVersion)}
	}
	return nil
}

// decodeTyped decodes YAML or JSON into v, field names case-sensitive;
// strict makes unknown and duplicate fields (YAML keys set twice too)
// errors, worded as apimachinery's strict decoder.
func decodeTyped(data []byte, v any, strict bool) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	if !strict {
		// Case-sensitive, as apimachinery's decoder.
		return kjson.UnmarshalCaseSensitivePreserveInts(js, v)
	}
	strictErrs, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	// YAML (not JSON) goes through the strict converter as well, as
	// apimachinery's strict YAML decoder: the plain one keeps the last of
	// a key set twice, which the JSON it made no longer shows.
	if !utilyaml.IsJSONBuffer(data) {
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			strictErrs = append([]error{err}, strictErrs...)
		}
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("strict decoding error: %s", strings.Join(msgs, ", "))
	}
	return nil
}
