package kubelet

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// nodeStatusPatch is the strategic merge patch the kubelet sends to
// nodes/NAME/status to turn old (the Node as read) into cur (old with the
// kubelet's new status), as upstream's kubelet does through
// k8s.io/component-helpers/node/util.PatchNodeStatus. Pure.
//
// The patch is the two-way difference of the two objects' JSON, so it
// carries only what changed: for the conditions, each changed condition's
// changed fields under its type, and a $setElementOrder/conditions
// directive giving the list's order. Both sides have the same
// resourceVersion, so the patch has none and the API server applies it to
// the Node as it then is, without a precondition: a status write that
// raced another writer's does not fail with a conflict, and what the other
// writer set that the kubelet does not change is kept.
//
// Spec is never part of it (the status subresource ignores spec anyway).
// The addresses are the exception to the merge: their merge key is the
// type, which two addresses share on a dual-stack node (an IPv4 and an
// IPv6 InternalIP), so when they changed the patch replaces the whole list
// ($patch: replace) instead of merging it entry by entry.
func nodeStatusPatch(old, cur *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q as read: %w", old.Name, err)
	}
	replaceAddresses := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, cur.Status.Addresses)
	target := cur.DeepCopy()
	target.Spec = old.Spec
	if replaceAddresses {
		target.Status.Addresses = old.Status.Addresses
	}
	curJSON, err := json.Marshal(target)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q with its new status: %w", cur.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, curJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of node %q: %w", cur.Name, err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	return withReplacedAddresses(patch, cur.Status.Addresses)
}

// withReplacedAddresses sets status.addresses in a strategic merge patch
// to addrs followed by the $patch: replace directive.
func withReplacedAddresses(patch []byte, addrs []v1.NodeAddress) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, fmt.Errorf("decoding the node status patch: %w", err)
	}
	list := make([]any, 0, len(addrs)+1)
	for _, a := range addrs {
		list = append(list, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	list = append(list, map[string]any{"$patch": "replace"})
	status, _ := doc["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		doc["status"] = status
	}
	status["addresses"] = list
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the node status patch: %w", err)
	}
	return out, nil
}
