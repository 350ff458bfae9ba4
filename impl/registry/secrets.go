package registry

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func secrets(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Secret]{
		namespaced:     true,
		defaults:       defaultSecret,
		validate:       validateSecret,
		validateUpdate: validateSecretUpdate,
		fields: func(s *corev1.Secret) fields.Set {
			return fields.Set{"type": string(s.Type)}
		},
		table: &tableSpec[*corev1.Secret]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
				column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
				ageColumn(),
			},
			cells: func(s *corev1.Secret, now time.Time) []any {
				return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "secrets", SingularName: "secret", Kind: "Secret",
		Namespaced: true, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.Secret{} },
		NewList:  func() runtime.Object { return &corev1.SecretList{} },
		Strategy: newStrategy(k, now),
	}
}

// defaultSecret sets type Opaque and folds stringData into data (stringData
// is write-only: upstream merges it during conversion, so it is never
// stored or returned).
func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		for _, msg := range configMapKeyErrors(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	requireKey := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	default:
		// Any other type is allowed when it is a qualified name.
		for _, msg := range validation.IsQualifiedName(string(s.Type)) {
			errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, msg))
		}
	}
	return errs
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := apivalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))
	if isTrue(old.Immutable) {
		if !isTrue(s.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableSetMessage))
		}
		if !apiequality.Semantic.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableSetMessage))
		}
	}
	return errs
}
