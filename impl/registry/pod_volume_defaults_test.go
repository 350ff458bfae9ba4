package registry

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumeSourceDefaultsAsUpstream: the in-tree sources with defaults
// get upstream's (SetDefaults_AzureDiskVolumeSource,
// SetDefaults_ScaleIOVolumeSource, the iSCSI and RBD +default markers,
// SetDefaults_PersistentVolumeClaimSpec on an ephemeral volume's claim
// template), in pods and workload templates alike; values given stay.
func TestVolumeSourceDefaultsAsUpstream(t *testing.T) {
	shared, managed := corev1.AzureSharedBlobDisk, corev1.AzureManagedDisk
	readWrite, none := corev1.AzureDataDiskCachingReadWrite, corev1.AzureDataDiskCachingNone
	fs, block := corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock
	claim := func(mode *corev1.PersistentVolumeMode) *corev1.EphemeralVolumeSource {
		return &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: mode}}}
	}
	given := []corev1.VolumeSource{
		{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://a.blob.core.windows.net/c/d.vhd"}},
		{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "/subscriptions/s", CachingMode: &none, Kind: &managed, FSType: ptr("xfs"), ReadOnly: ptr(true)}},
		{ISCSI: &corev1.ISCSIVolumeSource{}},
		{ISCSI: &corev1.ISCSIVolumeSource{ISCSIInterface: "iface0"}},
		{RBD: &corev1.RBDVolumeSource{}},
		{RBD: &corev1.RBDVolumeSource{RBDPool: "p", RadosUser: "u", Keyring: "/k"}},
		{ScaleIO: &corev1.ScaleIOVolumeSource{}},
		{ScaleIO: &corev1.ScaleIOVolumeSource{StorageMode: "ThickProvisioned", FSType: "ext4"}},
		{Ephemeral: claim(nil)},
		{Ephemeral: claim(&block)},
	}
	want := []corev1.VolumeSource{
		{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://a.blob.core.windows.net/c/d.vhd", CachingMode: &readWrite, Kind: &shared, FSType: ptr("ext4"), ReadOnly: ptr(false)}},
		{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "/subscriptions/s", CachingMode: &none, Kind: &managed, FSType: ptr("xfs"), ReadOnly: ptr(true)}},
		{ISCSI: &corev1.ISCSIVolumeSource{ISCSIInterface: "default"}},
		{ISCSI: &corev1.ISCSIVolumeSource{ISCSIInterface: "iface0"}},
		{RBD: &corev1.RBDVolumeSource{RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring"}},
		{RBD: &corev1.RBDVolumeSource{RBDPool: "p", RadosUser: "u", Keyring: "/k"}},
		{ScaleIO: &corev1.ScaleIOVolumeSource{StorageMode: "ThinProvisioned", FSType: "xfs"}},
		{ScaleIO: &corev1.ScaleIOVolumeSource{StorageMode: "ThickProvisioned", FSType: "ext4"}},
		{Ephemeral: claim(&fs)},
		{Ephemeral: claim(&block)},
	}
	volumes := func() []corev1.Volume {
		var vs []corev1.Volume
		for _, src := range given {
			vs = append(vs, corev1.Volume{Name: "v", VolumeSource: *src.DeepCopy()})
		}
		return vs
	}
	check := func(t *testing.T, what string, got []corev1.Volume) {
		t.Helper()
		for i := range want {
			if d := cmp.Diff(want[i], got[i].VolumeSource); d != "" {
				t.Errorf("%s volume %d defaulted (-want +got):\n%s", what, i, d)
			}
		}
	}

	p := newPod("p")
	p.Spec.Volumes = volumes()
	defaultPod(p)
	check(t, "pod", p.Spec.Volumes)

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: newPod("p").Spec}}}
	d.Spec.Template.Spec.Volumes = volumes()
	find(t, appsV1, "deployments").Strategy.Default(d)
	check(t, "template", d.Spec.Template.Spec.Volumes)

	// The defaulted kind is validated as given: a shared blob disk's URI
	// is an https one.
	p = newPod("p")
	p.Spec.Volumes = []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
		DiskName: "d", DataDiskURI: "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/disks/d"}}}}
	defaultPod(p)
	wantErrors(t, find(t, coreV1, "pods").Strategy.Validate(context.Background(), p), notSupported+" spec.volumes[0].azureDisk.diskURI")
}
