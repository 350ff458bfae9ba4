package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The runtime handler a pod's sandbox runs with, as upstream's RuntimeClass
// manager and kuberuntime find it: a pod without spec.runtimeClassName
// (or with an empty one) gets the runtime's default handler "" at no cost;
// one with a name gets its RuntimeClass's handler, read through the object
// manager (objectcache.go: the class is watched by name while a pod of the
// node names it). A class that does not exist, or a lookup that fails,
// creates no sandbox: the sync fails with a FailedCreatePodSandBox event
// carrying upstream's error and is retried (syncpod.go).

// runtimeHandler returns the CRI runtime handler for pod's sandbox.
func (k *Kubelet) runtimeHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil // the default RuntimeClass: the runtime's default handler
	}
	rc, err := k.objects.runtimeClass(ctx, *name)
	return runtimeHandlerOf(*name, rc, err)
}

// runtimeHandlerOf is the handler of RuntimeClass name given what reading
// it returned, or upstream's error: NotFound as a RuntimeClass lister's
// (`runtimeclass.node.k8s.io "<name>" not found`, whether the watch's
// store or a GET said so), any other failure as "failed to lookup
// RuntimeClass <name>: <error>".
func runtimeHandlerOf(name string, rc *nodev1.RuntimeClass, err error) (string, error) {
	switch {
	case apierrors.IsNotFound(err):
		return "", apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	case err != nil:
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	case rc == nil:
		return "", apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	}
	return rc.Handler, nil
}
