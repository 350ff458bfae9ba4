package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceGetter reads a namespace; a missing one is a NotFound API error.
// fresh asks for a quorum read rather than a possibly cached one.
type NamespaceGetter func(ctx context.Context, name string, fresh bool) (*corev1.Namespace, error)

// NamespaceLifecycle rejects creating objects in a namespace that does not
// exist (404 NotFound for the namespace) or is being terminated (403
// Forbidden), and deleting the namespaces the system needs, as
// kube-apiserver's plugin of the same name does. Like that plugin it is a
// mutating plugin only (it changes nothing), the first of the chain: a
// create is refused before ServiceAccount waits for the "default" account
// of a namespace that does not exist or a mutating webhook is called, and
// so is the delete of an immortal namespace (DELETE runs the mutating
// plugins too).
type NamespaceLifecycle struct {
	Get NamespaceGetter
	// Immortal namespaces may not be deleted.
	Immortal map[string]bool
}

// Admit implements Mutator: an immortal namespace may not be deleted, and
// nothing may be created in a namespace that is missing or being
// terminated.
func (p *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	if a.Operation == Delete && isNamespace && a.Subresource == "" && p.Immortal[a.Name] {
		return forbidden(a, fmt.Errorf("this namespace may not be deleted"))
	}
	if a.Operation != Create || a.Namespace == "" || isNamespace {
		return nil
	}
	ns, err := p.Get(ctx, a.Namespace, false)
	// (err != nil first: IsNotFound allocates even for nil.)
	if err != nil && apierrors.IsNotFound(err) {
		// The cached view may lag a namespace just created: look again.
		ns, err = p.Get(ctx, a.Namespace, true)
	}
	if err != nil && apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		e := forbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
		return e
	}
	return nil
}
