package credentialprovider

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	kubeletconfigv1alpha1 "k8s.io/kubelet/config/v1alpha1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	credentialproviderv1alpha1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1alpha1"
	credentialproviderv1beta1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1beta1"
)

// configCodecs decodes CredentialProviderConfig files strictly (unknown
// and duplicate fields are errors, as upstream's codec with EnableStrict),
// JSON or YAML, in any of the three versions upstream's kubelet reads.
var configCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		kubeletconfigv1.AddToScheme, kubeletconfigv1beta1.AddToScheme, kubeletconfigv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// pluginAPIVersions are the exec protocol's versions a provider may name,
// as upstream's apiVersions.
var pluginAPIVersions = sets.New(
	credentialproviderv1alpha1.SchemeGroupVersion.String(),
	credentialproviderv1beta1.SchemeGroupVersion.String(),
	credentialproviderv1.SchemeGroupVersion.String(),
)

// validCacheTypes are tokenAttributes.cacheType's values.
var validCacheTypes = sets.New(
	string(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType),
	string(kubeletconfigv1.TokenServiceAccountTokenCacheType),
)

// ReadConfig reads --image-credential-provider-config as upstream's
// readCredentialProviderConfig: a file, or a directory whose *.json,
// *.yaml and *.yml files are read in lexical order and their providers
// concatenated (a name twice is an error).
func ReadConfig(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	if path == "" {
		return nil, fmt.Errorf("credential provider config path is empty")
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("unable to access path %q: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("unable to read directory %q: %w", path, err)
		}
		files = nil
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".json", ".yaml", ".yml":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("no configuration files found in directory %q", path)
		}
	}
	merged := &kubeletconfigv1.CredentialProviderConfig{}
	seen := sets.New[string]()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("unable to read file %q: %w", f, err)
		}
		cfg, err := decodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("error decoding config %q: %w", f, err)
		}
		for _, p := range cfg.Providers {
			if seen.Has(p.Name) {
				return nil, fmt.Errorf("duplicate provider name %q found in configuration file(s)", p.Name)
			}
			seen.Insert(p.Name)
			merged.Providers = append(merged.Providers, p)
		}
	}
	return merged, nil
}

// decodeConfig decodes one CredentialProviderConfig document. Versions
// other than v1 are carried over field by field (their JSON is v1's, less
// v1alpha1's tokenAttributes), as upstream converts them to its internal
// type.
func decodeConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	obj, gvk, err := configCodecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	if gvk.Kind != "CredentialProviderConfig" {
		return nil, fmt.Errorf("failed to decode %q (wrong Kind)", gvk.Kind)
	}
	if gvk.Group != kubeletconfigv1.GroupName {
		return nil, fmt.Errorf("failed to decode CredentialProviderConfig, unexpected Group: %s", gvk.Group)
	}
	switch c := obj.(type) {
	case *kubeletconfigv1.CredentialProviderConfig:
		return c, nil
	case *kubeletconfigv1beta1.CredentialProviderConfig, *kubeletconfigv1alpha1.CredentialProviderConfig:
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("converting %s: %w", gvk.GroupVersion(), err)
		}
		out := &kubeletconfigv1.CredentialProviderConfig{}
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("converting %s: %w", gvk.GroupVersion(), err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unable to convert %T to *CredentialProviderConfig", obj)
}

// ValidateConfig is upstream's validateCredentialProviderConfig (1.37's
// wording) with its KubeletServiceAccountTokenForCredentialProviders gate
// on, as by default: the same checks, paths and messages.
func ValidateConfig(cfg *kubeletconfigv1.CredentialProviderConfig) field.ErrorList {
	var errs field.ErrorList
	providers := field.NewPath("providers")
	if len(cfg.Providers) == 0 {
		errs = append(errs, field.Required(providers, "at least 1 item in plugins is required"))
	}
	seen := sets.New[string]()
	for _, p := range cfg.Providers {
		name := providers.Child("name")
		if strings.Contains(p.Name, "/") {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot contain '/'"))
		}
		if strings.Contains(p.Name, " ") {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot contain spaces"))
		}
		if p.Name == "." {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot be '.'"))
		}
		if p.Name == ".." {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot be '..'"))
		}
		if seen.Has(p.Name) {
			errs = append(errs, field.Duplicate(name, p.Name))
		}
		seen.Insert(p.Name)

		if p.APIVersion == "" {
			errs = append(errs, field.Required(providers.Child("apiVersion"), ""))
		} else if !pluginAPIVersions.Has(p.APIVersion) {
			errs = append(errs, field.NotSupported(providers.Child("apiVersion"), p.APIVersion, sets.List(pluginAPIVersions)))
		}
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(providers.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for _, m := range p.MatchImages {
			if _, err := url.Parse("https://" + m); err != nil {
				errs = append(errs, field.Invalid(providers.Child("matchImages"), m, fmt.Sprintf("match image is invalid: %s", err.Error())))
			}
		}
		if p.DefaultCacheDuration == nil {
			errs = append(errs, field.Required(providers.Child("defaultCacheDuration"), ""))
		}
		if p.DefaultCacheDuration != nil && p.DefaultCacheDuration.Duration < 0 {
			errs = append(errs, field.Invalid(providers.Child("defaultCacheDuration"), p.DefaultCacheDuration, "must be greater than or equal to 0"))
		}
		if p.TokenAttributes != nil {
			errs = append(errs, validateTokenAttributes(providers.Child("tokenAttributes"), p)...)
		}
	}
	return errs
}

// validateTokenAttributes is the tokenAttributes part of upstream's
// validateCredentialProviderConfig.
func validateTokenAttributes(path *field.Path, p kubeletconfigv1.CredentialProvider) field.ErrorList {
	var errs field.ErrorList
	ta := p.TokenAttributes
	if len(ta.ServiceAccountTokenAudience) == 0 {
		errs = append(errs, field.Required(path.Child("serviceAccountTokenAudience"), ""))
	}
	if ta.RequireServiceAccount == nil {
		errs = append(errs, field.Required(path.Child("requireServiceAccount"), ""))
	}
	if v1 := credentialproviderv1.SchemeGroupVersion.String(); p.APIVersion != v1 {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("tokenAttributes is only supported for %s API version", v1)))
	}
	if ta.RequireServiceAccount != nil && !*ta.RequireServiceAccount && len(ta.RequiredServiceAccountAnnotationKeys) > 0 {
		errs = append(errs, field.Forbidden(path.Child("requiredServiceAccountAnnotationKeys"), "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"))
	}
	errs = append(errs, validateAnnotationKeys(path.Child("requiredServiceAccountAnnotationKeys"), ta.RequiredServiceAccountAnnotationKeys)...)
	errs = append(errs, validateAnnotationKeys(path.Child("optionalServiceAccountAnnotationKeys"), ta.OptionalServiceAccountAnnotationKeys)...)
	both := sets.New(ta.RequiredServiceAccountAnnotationKeys...).Intersection(sets.New(ta.OptionalServiceAccountAnnotationKeys...))
	if both.Len() > 0 {
		errs = append(errs, field.Invalid(path, sets.List(both), "annotation keys cannot be both required and optional"))
	}
	switch {
	case len(ta.CacheType) == 0:
		errs = append(errs, field.Required(path.Child("cacheType"), fmt.Sprintf("cacheType is required to be set when tokenAttributes is specified. Supported values are: %s", strings.Join(sets.List(validCacheTypes), ", "))))
	case validCacheTypes.Has(string(ta.CacheType)):
	default:
		errs = append(errs, field.NotSupported(path.Child("cacheType"), ta.CacheType, sets.List(validCacheTypes)))
	}
	return errs
}

// validateAnnotationKeys checks annotation keys as object metadata's
// (qualified names, case aside) and refuses a key twice.
func validateAnnotationKeys(path *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(path, k))
		}
		seen.Insert(k)
	}
	return errs
}
