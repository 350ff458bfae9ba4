package registry

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func limitRanges(now func() time.Time) *resource.Resource {
	k := kind[*corev1.LimitRange]{
		namespaced: true,
		defaults:   defaultLimitRange,
		validate:   validateLimitRange,
		// Upstream has no printer for LimitRange: NAME CREATED AT.
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "limitranges", SingularName: "limitrange", Kind: "LimitRange",
		Namespaced: true, ShortNames: []string{"limits"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.LimitRange{} },
		NewList:  func() runtime.Object { return &corev1.LimitRangeList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

// defaultLimitRange fills container defaults: a missing default limit is
// the max, a missing default request the default limit, else the min.
func defaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for name, q := range item.Max {
			if _, ok := item.Default[name]; !ok {
				item.Default[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Default {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Min {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
	}
}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		switch item.Type {
		case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, []string{
				string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim)}))
		}
		if seen[item.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen[item.Type] = true
		errs = append(errs, validateResourceList(item.Max, p.Child("max"), validateResourceName)...)
		errs = append(errs, validateResourceList(item.Min, p.Child("min"), validateResourceName)...)
		errs = append(errs, validateResourceList(item.Default, p.Child("default"), validateResourceName)...)
		errs = append(errs, validateResourceList(item.DefaultRequest, p.Child("defaultRequest"), validateResourceName)...)
		errs = append(errs, validateResourceList(item.MaxLimitRequestRatio, p.Child("maxLimitRequestRatio"), validateResourceName)...)
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		for name, minQ := range item.Min {
			if maxQ, ok := item.Max[name]; ok && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(string(name)), minQ.String(),
					fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
		}
		for name, def := range item.Default {
			if minQ, ok := item.Min[name]; ok && minQ.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(string(name)), def.String(),
					fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
			}
			if maxQ, ok := item.Max[name]; ok && def.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(string(name)), def.String(),
					fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
			}
		}
		for name, req := range item.DefaultRequest {
			if minQ, ok := item.Min[name]; ok && minQ.Cmp(req) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(name)), req.String(),
					fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), req.String())))
			}
			if def, ok := item.Default[name]; ok && req.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(name)), req.String(),
					fmt.Sprintf("default request value %s is greater than default limit value %s", req.String(), def.String())))
			}
			if maxQ, ok := item.Max[name]; ok && req.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(name)), req.String(),
					fmt.Sprintf("default request value %s is greater than max value %s", req.String(), maxQ.String())))
			}
		}
		for name, ratio := range item.MaxLimitRequestRatio {
			if ratio.CmpInt64(1) < 0 {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(string(name)), ratio.String(),
					fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
		}
	}
	return errs
}
