package volumerestrictions

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func withVolumes(name string, vs ...v1.VolumeSource) *v1.Pod {
	p := testutil.Pod(name).Obj()
	for _, v := range vs {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "v", VolumeSource: v})
	}
	return p
}

func gce(pd string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pd, ReadOnly: ro}}
}

func ebs(id string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: id, ReadOnly: ro}}
}

func iscsi(iqn string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{IQN: iqn, ReadOnly: ro}}
}

func rbd(mons []string, pool, image string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{RBD: &v1.RBDVolumeSource{CephMonitors: mons, RBDPool: pool, RBDImage: image, ReadOnly: ro}}
}

func TestFilter(t *testing.T) {
	emptyDir := v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		fits     bool
	}{
		{"no volumes", withVolumes("p"), []*v1.Pod{withVolumes("e", gce("a", false))}, true},
		{"other volume kinds never conflict", withVolumes("p", emptyDir), []*v1.Pod{withVolumes("e", emptyDir)}, true},
		{"GCE PD in use read-write", withVolumes("p", gce("a", false)), []*v1.Pod{withVolumes("e", gce("a", false))}, false},
		{"GCE PD read-only by both", withVolumes("p", gce("a", true)), []*v1.Pod{withVolumes("e", gce("a", true))}, true},
		{"GCE PD read-only by one", withVolumes("p", gce("a", true)), []*v1.Pod{withVolumes("e", gce("a", false))}, false},
		{"another GCE PD", withVolumes("p", gce("a", false)), []*v1.Pod{withVolumes("e", gce("b", false))}, true},
		{"EBS in use, even read-only", withVolumes("p", ebs("vol-1", true)), []*v1.Pod{withVolumes("e", ebs("vol-1", true))}, false},
		{"another EBS volume", withVolumes("p", ebs("vol-1", false)), []*v1.Pod{withVolumes("e", ebs("vol-2", false))}, true},
		{"iSCSI IQN in use", withVolumes("p", iscsi("iqn.a", false)), []*v1.Pod{withVolumes("e", iscsi("iqn.a", true))}, false},
		{"iSCSI read-only by both", withVolumes("p", iscsi("iqn.a", true)), []*v1.Pod{withVolumes("e", iscsi("iqn.a", true))}, true},
		{"RBD image with a common monitor", withVolumes("p", rbd([]string{"m1", "m2"}, "pool", "img", false)),
			[]*v1.Pod{withVolumes("e", rbd([]string{"m2", "m3"}, "pool", "img", false))}, false},
		{"RBD image without a common monitor", withVolumes("p", rbd([]string{"m1"}, "pool", "img", false)),
			[]*v1.Pod{withVolumes("e", rbd([]string{"m3"}, "pool", "img", false))}, true},
		{"RBD other pool", withVolumes("p", rbd([]string{"m1"}, "pool", "img", false)),
			[]*v1.Pod{withVolumes("e", rbd([]string{"m1"}, "other", "img", false))}, true},
		{"RBD read-only by both", withVolumes("p", rbd([]string{"m1"}, "pool", "img", true)),
			[]*v1.Pod{withVolumes("e", rbd([]string{"m1"}, "pool", "img", true))}, true},
		{"conflict with the second pod", withVolumes("p", emptyDir, ebs("vol-1", false)),
			[]*v1.Pod{withVolumes("e1", ebs("vol-2", false)), withVolumes("e2", emptyDir, ebs("vol-1", false))}, false},
	}
	pl := &VolumeRestrictions{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := fw.NewNodeInfo(tt.existing...)
			state := fw.NewCycleState()
			if s := pl.PreFilter(context.Background(), state, tt.pod); s.IsSkip() {
				if !tt.fits {
					t.Fatal("PreFilter skipped a pod with a conflicting volume")
				}
				return
			}
			s := pl.Filter(context.Background(), state, tt.pod, ni)
			if s.IsSuccess() != tt.fits {
				t.Errorf("fits = %v (%v), want %v", s.IsSuccess(), s.Message(), tt.fits)
			}
			if !tt.fits && (s.Code() != fw.Unschedulable || s.Message() != ErrReasonDiskConflict) {
				t.Errorf("status %v %q, want Unschedulable %q", s.Code(), s.Message(), ErrReasonDiskConflict)
			}
		})
	}
}

func TestPreFilterSkipsPodsWithoutConflictingVolumes(t *testing.T) {
	pl := &VolumeRestrictions{}
	if s := pl.PreFilter(context.Background(), fw.NewCycleState(), withVolumes("p", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}})); !s.IsSkip() {
		t.Errorf("PreFilter = %v, want Skip", s)
	}
	if s := pl.PreFilter(context.Background(), fw.NewCycleState(), withVolumes("p", gce("a", false))); !s.IsSuccess() {
		t.Errorf("PreFilter = %v, want Success", s)
	}
}
