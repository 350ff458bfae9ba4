package registry

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func configMaps(now func() time.Time) *resource.Resource {
	k := kind[*corev1.ConfigMap]{
		namespaced: true,
		defaults: func(cm *corev1.ConfigMap) {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
		},
		validate:       validateConfigMap,
		validateUpdate: validateConfigMapUpdate,
		table: &tableSpec[*corev1.ConfigMap]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
				ageColumn(),
			},
			cells: func(cm *corev1.ConfigMap, now time.Time) []any {
				return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "configmaps", SingularName: "configmap", Kind: "ConfigMap",
		Namespaced: true, ShortNames: []string{"cm"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: newStrategy(k, now),
	}
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for key, value := range cm.Data {
		for _, msg := range configMapKeyErrors(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range configMapKeyErrors(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, "duplicate of key present in data"))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	if !isTrue(old.Immutable) {
		return nil
	}
	var errs field.ErrorList
	if !isTrue(cm.Immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableSetMessage))
	}
	if !apiequality.Semantic.DeepEqual(cm.Data, old.Data) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableSetMessage))
	}
	if !apiequality.Semantic.DeepEqual(cm.BinaryData, old.BinaryData) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableSetMessage))
	}
	return errs
}

// immutableSetMessage is Kubernetes' message for changes to configmaps and
// secrets marked immutable.
const immutableSetMessage = "field is immutable when `immutable` is set"

func isTrue(b *bool) bool { return b != nil && *b }
