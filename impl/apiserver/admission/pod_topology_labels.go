package admission

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeGetter reads one Node, possibly from a cache. A missing node is a
// NotFound error. The node returned may be shared: callers must not modify
// it.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// PodTopologyLabels copies the bound node's topology labels onto the pod,
// as kube-apiserver's plugin of that name (KEP-4742, feature
// PodTopologyLabelsAdmission: beta and on by default since 1.35, the
// plugin in kube-apiserver's default set), so the downward API can expose
// a pod's zone and region:
//   - a pods/binding create to a target of kind Node gets the node's
//     topology labels in the Binding's labels, which the binding then
//     writes onto the pod in the same write as spec.nodeName
//     (endpoints.bind copies every label of the Binding);
//   - a pod created with spec.nodeName already set gets them in its own
//     labels.
//
// The labels copied are exactly topologyLabelKeys, and they overwrite a
// value already there. A binding whose target kind is not "Node" (also an
// empty kind, which the binding itself accepts), a node that does not
// exist, or a node without those labels changes nothing. Only creates are
// looked at (upstream's handler admits Create alone); other subresources
// and other resources pass. Mutating only.
type PodTopologyLabels struct {
	GetNode NodeGetter
}

// topologyLabelKeys are the node labels PodTopologyLabels copies
// (upstream's default configuration, topology.kubernetes.io/zone and
// /region since 1.34; 1.33's alpha used topology.k8s.io by mistake).
var topologyLabelKeys = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

func newPodTopologyLabels(d *deps) (any, error) {
	get, err := cachedNodeGetter(d)
	if err != nil {
		return nil, err
	}
	return &PodTopologyLabels{GetNode: get}, nil
}

// cachedNodeGetter reads nodes from the plugins' shared node cache (a
// shared object: callers only read it).
func cachedNodeGetter(d *deps) (NodeGetter, error) {
	c, err := d.cache(nodeResource, func() runtime.Object { return &corev1.NodeList{} })
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string) (*corev1.Node, error) {
		o, err := c.lookup(ctx, "", name, false, func() runtime.Object { return &corev1.Node{} })
		if err != nil {
			return nil, err
		}
		return o.(*corev1.Node), nil
	}, nil
}

// Admit implements Mutator.
func (p *PodTopologyLabels) Admit(ctx context.Context, a *Attributes) error {
	labels, nodeName, err := topologyLabelsTarget(a)
	if err != nil || labels == nil {
		return err
	}
	node, err := p.GetNode(ctx, nodeName)
	if apierrors.IsNotFound(err) {
		// As upstream: a missing node is not an error and adds nothing.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading node %q for its topology labels: %w", nodeName, err)
	}
	*labels = withTopologyLabels(*labels, node.Labels)
	return nil
}

// topologyLabelsTarget is the plugin's choice of request: the labels to add
// to (the Binding's or the new pod's) and the node whose labels go there,
// or nil when the request is left alone. An object of the wrong type for
// its resource is an error, as upstream's.
func topologyLabelsTarget(a *Attributes) (labels *map[string]string, nodeName string, err error) {
	if a.Operation != Create || a.Resource.GroupResource() != podResource {
		return nil, "", nil
	}
	switch a.Subresource {
	case "":
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return nil, "", fmt.Errorf("expected Pod but got %T", a.Object)
		}
		if pod.Spec.NodeName == "" {
			return nil, "", nil
		}
		return &pod.Labels, pod.Spec.NodeName, nil
	case "binding":
		b, ok := a.Object.(*corev1.Binding)
		if !ok {
			return nil, "", fmt.Errorf("expected Binding but got %s", a.Kind.Kind)
		}
		if b.Target.Kind != "Node" {
			return nil, "", nil
		}
		return &b.Labels, b.Target.Name, nil
	default:
		return nil, "", nil
	}
}

// withTopologyLabels is the mutating decision: labels with the node's
// topology labels (topologyLabelKeys) set, overwriting values already
// there. It returns labels itself when the node has none of them, else a
// new map; it modifies neither map.
func withTopologyLabels(labels, nodeLabels map[string]string) map[string]string {
	var out map[string]string
	for _, k := range topologyLabelKeys {
		v, ok := nodeLabels[k]
		if !ok {
			continue
		}
		if out == nil {
			out = maps.Clone(labels)
			if out == nil {
				out = make(map[string]string, len(topologyLabelKeys))
			}
		}
		out[k] = v
	}
	if out == nil {
		return labels
	}
	return out
}
