package admission

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// forbidden is admission's 403: `<resource> "<name>" is forbidden: <err>`.
// Before a create's name is generated the name is the generateName prefix
// ("Unknown" when neither is set), as kube-apiserver reports it.
func forbidden(a *Attributes, err error) *apierrors.StatusError {
	name := a.Name
	if name == "" {
		name = "Unknown"
		if m, merr := meta.Accessor(a.Object); merr == nil && a.Object != nil {
			switch {
			case m.GetName() != "":
				name = m.GetName()
			case m.GetGenerateName() != "":
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}
