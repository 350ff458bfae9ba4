// Package volumerestrictions is the VolumeRestrictions filter plugin for
// inline volumes, as kube-scheduler's: a pod may not join a node where
// another pod already uses the same
//
//   - GCE persistent disk (same pdName), unless both mount it read-only;
//   - AWS EBS volume (same volumeID), whatever the mode;
//   - iSCSI volume (same IQN), unless both mount it read-only;
//   - RBD image (a common Ceph monitor, same pool and image), unless both
//     mount it read-only.
//
// Not implemented: upstream's ReadWriteOncePod check of PersistentVolumeClaims
// (kubeproof's API server does not serve PVCs yet), so pods with only PVC
// volumes are not restricted.
package volumerestrictions

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "VolumeRestrictions"

// ErrReasonDiskConflict is upstream's reason.
const ErrReasonDiskConflict = "node(s) had no available disk"

// VolumeRestrictions is the plugin.
type VolumeRestrictions struct{}

// New is the plugin factory; the plugin takes no arguments.
func New(raw json.RawMessage, _ fw.Handle) (fw.Plugin, error) {
	var args struct{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding VolumeRestrictions args: %w", err)
	}
	return &VolumeRestrictions{}, nil
}

// Name implements fw.Plugin.
func (*VolumeRestrictions) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions: a conflicting pod
// leaving, or a new node, may make room.
func (*VolumeRestrictions) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{
		{Resource: fw.AssignedPod, ActionType: fw.Delete},
		{Resource: fw.Node, ActionType: fw.Add},
	}
}

// PreFilter implements fw.PreFilterPlugin: pods without such volumes skip
// the filter.
func (*VolumeRestrictions) PreFilter(_ context.Context, _ *fw.CycleState, pod *v1.Pod) *fw.Status {
	for i := range pod.Spec.Volumes {
		if needsConflictCheck(&pod.Spec.Volumes[i]) {
			return nil
		}
	}
	return fw.NewStatus(fw.Skip)
}

// PreFilterExtensions implements fw.PreFilterPlugin: the filter reads the
// node's pods directly, so there is no state to update.
func (*VolumeRestrictions) PreFilterExtensions() fw.PreFilterExtensions { return nil }

// Filter implements fw.FilterPlugin.
func (*VolumeRestrictions) Filter(_ context.Context, _ *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !needsConflictCheck(v) {
			continue
		}
		for _, pi := range nodeInfo.Pods {
			if isVolumeConflict(v, pi.Pod) {
				return fw.NewStatus(fw.Unschedulable, ErrReasonDiskConflict)
			}
		}
	}
	return nil
}

func needsConflictCheck(v *v1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// isVolumeConflict reports whether volume conflicts with one of pod's.
func isVolumeConflict(volume *v1.Volume, pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		existing := &pod.Spec.Volumes[i]
		if d, e := volume.GCEPersistentDisk, existing.GCEPersistentDisk; d != nil && e != nil {
			if d.PDName == e.PDName && !(d.ReadOnly && e.ReadOnly) {
				return true
			}
		}
		if d, e := volume.AWSElasticBlockStore, existing.AWSElasticBlockStore; d != nil && e != nil {
			if d.VolumeID == e.VolumeID {
				return true
			}
		}
		if d, e := volume.ISCSI, existing.ISCSI; d != nil && e != nil {
			if d.IQN == e.IQN && !(d.ReadOnly && e.ReadOnly) {
				return true
			}
		}
		if d, e := volume.RBD, existing.RBD; d != nil && e != nil {
			if haveOverlap(d.CephMonitors, e.CephMonitors) && d.RBDPool == e.RBDPool && d.RBDImage == e.RBDImage && !(d.ReadOnly && e.ReadOnly) {
				return true
			}
		}
	}
	return false
}

func haveOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
