package registry

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestPodVolumeAndDNSValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	cmVolume := func(items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: items}}}
	}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"items inside the volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: "conf/a.yaml"})}
		}, nil},
		{"item escaping the volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: "../../etc/passwd"}, corev1.KeyToPath{Key: "b", Path: "/abs"},
				corev1.KeyToPath{Path: "..data"})}
		}, []string{invalid + " spec.volumes[0].configMap.items[0].path", invalid + " spec.volumes[0].configMap.items[1].path",
			required + " spec.volumes[0].configMap.items[2].key", invalid + " spec.volumes[0].configMap.items[2].path"}},
		{"item path \"..\": both upstream errors (contains and starts with \"..\")", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: ".."})}
		}, []string{invalid + " spec.volumes[0].configMap.items[0].path", invalid + " spec.volumes[0].configMap.items[0].path"}},
		{"two sources: the later one (in upstream's order) is refused", func(p *corev1.Pod) {
			v := cmVolume()
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
			p.Spec.Volumes = []corev1.Volume{v}
		}, []string{forbidden + " spec.volumes[0].configMap"}},
		{"subPath escaping", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume()}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", SubPath: "a/../../b"}}
		}, []string{invalid + " spec.containers[0].volumeMounts.subPath"}}, // upstream leaves the index out
		{"short token", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default"
			p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(60))}}}}}}}
		}, []string{invalid + " spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"}},
		{"token longer than 2^32 seconds", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default"
			p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(1<<32 + 1))}}}}}}}
		}, []string{invalid + " spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"}},
		{"token of 2^32 seconds", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default"
			p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(1 << 32))}}}}}}}
		}, nil},
		{"downward API item without source", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "labels"}}}}}}
		}, []string{required + " spec.volumes[0].downwardAPI"}},
		{"dns config", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "bogus"},
				Options: []corev1.PodDNSConfigOption{{Value: ptr("2")}}}
		}, []string{invalid + " spec.dnsConfig.nameservers", invalid + " spec.dnsConfig.nameservers[3]", required + " spec.dnsConfig.options[0]"}},
		{"host alias", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"ok.example", "Not_OK"}}, {IP: "x"}}
		}, []string{invalid + " spec.hostAliases[0].hostnames[1]", invalid + " spec.hostAliases[1].ip"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(p)
			defaultPod(p)
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}
}

// TestVolumeSourceValidationAsUpstream: volume sources are checked as
// upstream's validateVolumeSource and friends (pkg/apis/core/validation):
// each source after the first, in upstream's order, is Forbidden on its own
// path and not checked further; a volume with errors is not mountable; an
// emptyDir sizeLimit is not negative; a hostPath has no ".." and a known
// type; a gitRepo names its repository and a local directory; projected
// sources name their object, do not share paths and have one kind each;
// downward API files are reported on the downwardAPI path (not the item's)
// and their fieldRef is one of the volume's fields; an image volume of a
// pod names its reference; a token's expiration is at most 2^32 seconds.
func TestVolumeSourceValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	weird := corev1.HostPathType("Weird")
	neg := resource.MustParse("-1")
	cases := []struct {
		name    string
		mutate  func(*corev1.Pod)
		want    []string
		details []string
	}{
		{"secret then downwardAPI: upstream's misspelt path, the later source unchecked", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"},
				DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "/abs"}}}})}
		}, []string{forbidden + " spec.volumes[0].downwarAPI"},
			[]string{"spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type"}},
		{"an invalid volume is not mountable, nor a duplicate", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("cfg", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}),
				vol("cfg", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("bad", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}})}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/a"}, {Name: "bad", MountPath: "/b"}}
		}, []string{required + " spec.volumes[0].configMap.name", required + " spec.volumes[2].configMap.name",
			notFound + " spec.containers[0].volumeMounts[1].name"}, nil},
		{"negative emptyDir size limit", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &neg}})}
		}, []string{forbidden + " spec.volumes[0].emptyDir.sizeLimit"},
			[]string{"spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity"}},
		{"hostPath backsteps and type", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/../etc", Type: &weird}})}
		}, []string{invalid + " spec.volumes[0].hostPath.path", notSupported + " spec.volumes[0].hostPath.type"},
			[]string{`spec.volumes[0].hostPath.type: Unsupported value: "Weird": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`}},
		{"gitRepo", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Directory: "../up"}})}
		}, []string{required + " spec.volumes[0].gitRepo.repository", invalid + " spec.volumes[0].gitRepo.directory"}, nil},
		{"projected sources: names, duplicate paths, one kind each", func(p *corev1.Pod) {
			item := []corev1.KeyToPath{{Key: "k", Path: "same"}}
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{Items: item}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Items: item}},
				{ConfigMap: &corev1.ConfigMapProjection{}, DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}})}
		}, []string{required + " spec.volumes[0].projected.sources[0].secret.name", invalid + " spec.volumes[0].projected",
			required + " spec.volumes[0].projected.sources[2].configMap.name", forbidden + " spec.volumes[0].projected.sources[2]"},
			[]string{`spec.volumes[0].projected: Invalid value: "b": conflicting duplicate paths`,
				"spec.volumes[0].projected.sources[2]: Forbidden: may not specify more than 1 volume type per source"}},
		{"projected cluster trust bundles", func(p *corev1.Pod) {
			bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "ca.pem"}},
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr("a"), SignerName: ptr("example.com/s"), Path: "..ca"}},
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr("a"), LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem"}},
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/s"), LabelSelector: bad}},
			}}})}
		}, []string{
			required + " spec.volumes[0].projected.sources[0].clusterTrustBundle",
			invalid + " spec.volumes[0].projected.sources[1].clusterTrustBundle",
			invalid + " spec.volumes[0].projected.sources[1].clusterTrustBundle.path",
			invalid + " spec.volumes[0].projected.sources[2].clusterTrustBundle.labelSelector",
			invalid + " spec.volumes[0].projected",
			invalid + " spec.volumes[0].projected.sources[3].clusterTrustBundle.labelSelector.matchExpressions[0].operator",
			required + " spec.volumes[0].projected.sources[3].clusterTrustBundle.path",
		}, []string{
			"spec.volumes[0].projected.sources[0].clusterTrustBundle: Required value: either name or signerName must be specified",
			`spec.volumes[0].projected: Invalid value: "ca.pem": conflicting duplicate paths`,
		}},
		{"downward API files: both sources, fieldRef fields", func(p *corev1.Pod) {
			ref := func(path string) *corev1.ObjectFieldSelector { return &corev1.ObjectFieldSelector{FieldPath: path} }
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "a", FieldRef: ref("metadata.labels"), ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
				{Path: "b", FieldRef: ref("spec.nodeName")},
				{Path: "c", FieldRef: ref("spec.bogus")},
				{Path: "d", FieldRef: ref("metadata.annotations['Not Valid']")},
				{Path: "e", FieldRef: ref("metadata.annotations['example.com/Key']")},
			}}})}
		}, []string{invalid + " spec.volumes[0].downwardAPI", notSupported + " spec.volumes[0].downwardAPI.fieldRef.fieldPath",
			invalid + " spec.volumes[0].downwardAPI.fieldRef.fieldPath", invalid + " spec.volumes[0].downwardAPI.fieldRef"},
			[]string{`spec.volumes[0].downwardAPI: Invalid value: "resource": fieldRef and resourceFieldRef can not be specified simultaneously`,
				`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`,
				`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Invalid value: "spec.bogus": error converting fieldPath: field label not supported: spec.bogus`}},
		{"image volume without reference", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{PullPolicy: corev1.PullIfNotPresent}})}
		}, []string{required + " spec.volumes[0].image.reference"}, nil},
		{"token longer than 2^32 seconds", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default"
			p.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(1<<32 + 1))}}}}})}
		}, []string{invalid + " spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"},
			[]string{"spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(p)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}

	// A pod's projected service account token needs its service account
	// (upstream's validatePodMetadataAndSpec; the ServiceAccount admission
	// plugin names "default" when the pod names none); a template's does not.
	p := newPod("p")
	p.Spec.Volumes = []corev1.Volume{vol("tok", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}})}
	defaultPod(p)
	errs := r.Strategy.Validate(context.Background(), p)
	wantErrors(t, errs, forbidden+" spec.volumes[0].projected.sources[1].serviceAccountToken")
	wantError(t, errs, "spec.volumes[0].projected.sources[1].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set")
	p.Spec.ServiceAccountName = "default"
	wantErrors(t, r.Strategy.Validate(context.Background(), p))

	// A workload's template may leave an image volume's reference empty
	// (upstream checks it for pods only).
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: newPod("p").Spec}}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{vol("v", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{PullPolicy: corev1.PullIfNotPresent}}),
		vol("tok", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}})}
	dr := find(t, appsV1, "deployments")
	dr.Strategy.Default(d)
	wantErrors(t, dr.Strategy.Validate(context.Background(), d))
}

// TestVolumeMountValidationAsUpstream: volume mounts are checked as
// upstream's ValidateVolumeMounts: a mount without a name is also not
// found; subPath and subPathExpr errors are reported on the volumeMounts
// path without the mount's index (as are mountPropagation and
// recursiveReadOnly); an image volume takes subPath and subPathExpr
// (since 1.33) under the same rules; subPath and subPathExpr exclude each
// other; mount propagation is known
// and Bidirectional only for privileged containers; recursive read-only
// mounts are read-only and not propagated.
func TestVolumeMountValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const mounts = "spec.containers[0].volumeMounts"
	bidi, weird := corev1.MountPropagationBidirectional, corev1.MountPropagationMode("Weird")
	enabled, bogus := corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyMode("Bogus")
	cases := []struct {
		name    string
		mounts  []corev1.VolumeMount
		want    []string
		details []string
	}{
		{"no name", []corev1.VolumeMount{{MountPath: "/a"}}, []string{required + " " + mounts + "[0].name", notFound + " " + mounts + "[0].name"}, nil},
		{"image volume sub paths", []corev1.VolumeMount{{Name: "img", MountPath: "/a", SubPath: "x"}, {Name: "img", MountPath: "/b", SubPathExpr: "$(X)"}},
			nil, nil},
		{"image volume sub paths stay inside", []corev1.VolumeMount{{Name: "img", MountPath: "/a", SubPath: "../x"}},
			[]string{invalid + " " + mounts + ".subPath"}, []string{mounts + `.subPath: Invalid value: "../x": must not contain '..'`}},
		{"subPathExpr", []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x", SubPathExpr: "/abs"}},
			[]string{invalid + " " + mounts + "[0].subPathExpr", invalid + " " + mounts + ".subPathExpr"},
			[]string{mounts + `[0].subPathExpr: Invalid value: "/abs": subPathExpr and subPath are mutually exclusive`}},
		{"mount propagation", []corev1.VolumeMount{{Name: "data", MountPath: "/a", MountPropagation: &weird}, {Name: "data", MountPath: "/b", MountPropagation: &bidi}},
			[]string{notSupported + " " + mounts + ".mountPropagation", forbidden + " " + mounts + ".mountPropagation"},
			[]string{mounts + ".mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}},
		{"recursive read-only", []corev1.VolumeMount{{Name: "data", MountPath: "/a", RecursiveReadOnly: &enabled, MountPropagation: &bidi},
			{Name: "data", MountPath: "/b", ReadOnly: true, RecursiveReadOnly: &bogus}},
			[]string{forbidden + " " + mounts + ".mountPropagation", forbidden + " " + mounts + ".recursiveReadOnly",
				forbidden + " " + mounts + ".recursiveReadOnly", notSupported + " " + mounts + ".recursiveReadOnly"},
			[]string{mounts + ".recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
				mounts + ".recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox:1.37", PullPolicy: corev1.PullIfNotPresent}}}}
			p.Spec.Containers[0].VolumeMounts = tc.mounts
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}

	// A privileged container may propagate both ways.
	p := newPod("p")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/a", MountPropagation: &bidi}}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	defaultPod(p)
	wantErrors(t, r.Strategy.Validate(context.Background(), p))
}

// TestEphemeralVolumeValidationAsUpstream: a generic ephemeral volume is
// checked as upstream's validateEphemeralVolumeSource: a claim template is
// required, its metadata has labels and annotations only, its spec is a
// claim's (access modes, a positive storage request, class and mode); and,
// for a pod, the claim's name "<pod>-<volume>" is a valid object name and
// no persistentVolumeClaim volume names a claim an ephemeral volume creates.
func TestEphemeralVolumeValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	storage := func(q string) corev1.VolumeResourceRequirements {
		return corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}}
	}
	good := func() *corev1.PersistentVolumeClaimTemplate {
		return &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "p"}},
			Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Resources: storage("1Gi")}}
	}
	eph := func(name string, tmpl *corev1.PersistentVolumeClaimTemplate) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: tmpl}}}
	}
	const tp = "spec.volumes[0].ephemeral.volumeClaimTemplate"
	block, bogusMode := corev1.PersistentVolumeBlock, corev1.PersistentVolumeMode("Raw")
	cases := []struct {
		name    string
		pod     string
		volumes func() []corev1.Volume
		want    []string
		details []string
	}{
		{"valid", "p", func() []corev1.Volume { return []corev1.Volume{eph("scratch", good())} }, nil, nil},
		{"no template", "p", func() []corev1.Volume { return []corev1.Volume{eph("scratch", nil)} },
			[]string{required + " " + tp}, nil},
		{"template metadata and spec", "p", func() []corev1.Volume {
			t := good()
			t.Name = "named"
			t.Labels["bad key!"] = "x"
			t.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany, "ReadSometimes"}
			t.Spec.Resources = storage("0")
			t.Spec.StorageClassName = ptr("Not_A_Class")
			t.Spec.VolumeMode = &bogusMode
			return []corev1.Volume{eph("scratch", t)}
		}, []string{forbidden + " " + tp + ".metadata.name", invalid + " " + tp + ".metadata.labels",
			notSupported + " " + tp + ".spec.accessModes", forbidden + " " + tp + ".spec.accessModes",
			invalid + " " + tp + ".spec.resources[storage]", invalid + " " + tp + ".spec.storageClassName",
			notSupported + " " + tp + ".spec.volumeMode"},
			[]string{tp + ".metadata.name: Forbidden: cannot be set",
				tp + ".spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
				tp + `.spec.resources[storage]: Invalid value: "0": must be greater than zero`}},
		{"data sources", "p", func() []corev1.Volume {
			t := good()
			t.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Snapshot", Name: "s"}
			t.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr("Bad_Group"), Namespace: ptr("other")}
			return []corev1.Volume{eph("scratch", t)}
		}, []string{invalid + " " + tp + ".spec.dataSource", required + " " + tp + ".spec.dataSourceRef.name",
			required + " " + tp + ".spec.dataSourceRef.kind", invalid + " " + tp + ".spec.dataSourceRef.apiGroup", invalid + " " + tp + ".spec"},
			[]string{tp + `.spec.dataSource: Invalid value: "Snapshot": must be 'PersistentVolumeClaim' when referencing the default apiGroup`}},
		{"data source and ref differ", "p", func() []corev1.Volume {
			t := good()
			t.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
			t.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "b"}
			return []corev1.Volume{eph("scratch", t)}
		}, []string{invalid + " " + tp + ".spec"}, nil},
		{"no access mode, no storage request", "p", func() []corev1.Volume {
			t := good()
			t.Spec = corev1.PersistentVolumeClaimSpec{VolumeMode: &block}
			return []corev1.Volume{eph("scratch", t)}
		}, []string{required + " " + tp + ".spec.accessModes", required + " " + tp + ".spec.resources[storage]"},
			[]string{tp + ".spec.accessModes: Required value: at least 1 access mode is required"}},
		{"claim name too long", "p" + strings.Repeat("o", 250), func() []corev1.Volume { return []corev1.Volume{eph("scratch", good())} },
			[]string{invalid + " spec.volumes[0].name"}, nil}, // upstream reports it on the volume name
		{"a claim volume naming the ephemeral claim", "p", func() []corev1.Volume {
			return []corev1.Volume{eph("scratch", good()),
				{Name: "again", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "p-scratch"}}}}
		}, []string{invalid + " spec.volumes[1].persistentVolumeClaim.claimName"},
			[]string{`spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "p-scratch": must not reference a PVC that gets created for an ephemeral volume`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(tc.pod)
			p.Spec.Volumes = tc.volumes()
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			var spec field.ErrorList
			for _, e := range errs {
				if !strings.HasPrefix(e.Field, "metadata.") {
					spec = append(spec, e)
				}
			}
			wantErrors(t, spec, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestVolumePluginValidationAsUpstream: the in-tree plugins' own fields are
// checked as upstream's validate<Plugin>VolumeSource, on upstream's paths
// (a gcePersistentDisk's on "persistentDisk", a cephFS's on "cephfs", a
// csi secret name's on "csi.name").
func TestVolumePluginValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const v = "spec.volumes[0]."
	lun := int32(256)
	cases := []struct {
		name    string
		src     corev1.VolumeSource
		want    []string
		details []string
	}{
		{"nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Path: "rel"}},
			[]string{required + " " + v + "nfs.server", invalid + " " + v + "nfs.path"},
			[]string{v + `nfs.path: Invalid value: "rel": must be an absolute path`}},
		{"nfs without path", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s"}},
			[]string{required + " " + v + "nfs.path", invalid + " " + v + "nfs.path"}, nil},
		{"csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "Not_A_Driver", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "Bad_Secret"}}},
			[]string{invalid + " " + v + "csi.driver", invalid + " " + v + "csi.name"}, nil},
		{"csi without driver", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{NodePublishSecretRef: &corev1.LocalObjectReference{}}},
			[]string{required + " " + v + "csi.driver", invalid + " " + v + "csi.driver", required + " " + v + "csi.nodePublishSecretRef.name"}, nil},
		{"gcePersistentDisk", corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{Partition: 300}},
			[]string{required + " " + v + "persistentDisk.pdName", invalid + " " + v + "persistentDisk.partition"},
			[]string{v + "persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive"}},
		{"awsElasticBlockStore", corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{Partition: -1}},
			[]string{required + " " + v + "awsElasticBlockStore.volumeID", invalid + " " + v + "awsElasticBlockStore.partition"}, nil},
		{"glusterfs", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}},
			[]string{required + " " + v + "glusterfs.endpoints", required + " " + v + "glusterfs.path"}, nil},
		{"flocker", corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{DatasetName: "a/b", DatasetUUID: "u"}},
			[]string{invalid + " " + v + "flocker", invalid + " " + v + "flocker.datasetName"}, nil},
		{"flocker empty", corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{}},
			[]string{required + " " + v + "flocker"}, nil},
		{"rbd", corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}},
			[]string{required + " " + v + "rbd.monitors", required + " " + v + "rbd.image"}, nil},
		{"cinder", corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{SecretRef: &corev1.LocalObjectReference{}}},
			[]string{required + " " + v + "cinder.volumeID", required + " " + v + "cinder.secretRef.name"}, nil},
		{"cephFS", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{}},
			[]string{required + " " + v + "cephfs.monitors"}, nil},
		{"fc", corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}, WWIDs: []string{"i"}, Lun: &lun}},
			[]string{invalid + " " + v + "fc.targetWWNs", invalid + " " + v + "fc.lun"}, nil},
		{"fc without target", corev1.VolumeSource{FC: &corev1.FCVolumeSource{}},
			[]string{required + " " + v + "fc.targetWWNs"}, nil},
		{"fc without lun", corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}}},
			[]string{required + " " + v + "fc.lun"}, nil},
		{"flexVolume", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Options: map[string]string{"example.k8s.io/x": "1", "mine/y": "2"}}},
			[]string{required + " " + v + "flexVolume.driver", invalid + " " + v + "flexVolume.options[example.k8s.io/x]"},
			[]string{v + `flexVolume.options[example.k8s.io/x]: Invalid value: "example.k8s.io/x": kubernetes.io and k8s.io namespaces are reserved`}},
		{"azureFile", corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{}},
			[]string{required + " " + v + "azureFile.secretName", required + " " + v + "azureFile.shareName"}, nil},
		{"vsphereVolume", corev1.VolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{}},
			[]string{required + " " + v + "vsphereVolume.volumePath"}, nil},
		{"photonPersistentDisk", corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{}},
			[]string{required + " " + v + "photonPersistentDisk.pdID"}, nil},
		{"portworxVolume", corev1.VolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{}},
			[]string{required + " " + v + "portworxVolume.volumeID"}, nil},
		{"storageos", corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "Bad_Name", VolumeNamespace: "Bad_NS", SecretRef: &corev1.LocalObjectReference{}}},
			[]string{invalid + " " + v + "storageos.volumeName", invalid + " " + v + "storageos.volumeNamespace", required + " " + v + "storageos.secretRef.name"}, nil},
		{"scaleIO", corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{}},
			[]string{required + " " + v + "scaleIO.gateway", required + " " + v + "scaleIO.system", required + " " + v + "scaleIO.volumeName"}, nil},
		{"quobyte", corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "host-without-port"}},
			[]string{invalid + " " + v + "quobyte.registry", required + " " + v + "quobyte.volume"}, nil},
		{"azureDisk", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "http://x", Kind: ptr(corev1.AzureDataDiskKind("Dedicated"))}},
			[]string{notSupported + " " + v + "azureDisk.diskURI"}, nil},
		{"iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{IQN: "bogus", Lun: 300, DiscoveryCHAPAuth: true}},
			[]string{required + " " + v + "iscsi.targetPortal", invalid + " " + v + "iscsi.iqn", invalid + " " + v + "iscsi.lun", required + " " + v + "iscsi.secretRef"},
			[]string{v + `iscsi.iqn: Invalid value: "bogus": must be valid format starting with iqn, eui, or naa`}},
		{"iscsi initiator", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: strings.Repeat("t", 70), IQN: "iqn.2001-04.com.example:storage", InitiatorName: ptr("eui.bad")}},
			[]string{invalid + " " + v + "iscsi.initiatorname", invalid + " " + v + "name"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tc.src}}
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestVolumeDeviceValidationAsUpstream: a container's volumeDevices are
// checked as upstream's ValidateVolumeDevices: each names a claim-backed
// volume (persistentVolumeClaim or ephemeral), once, at a unique device
// path without backsteps, and neither its name nor its path is also a
// mount's.
func TestVolumeDeviceValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const devs = "spec.containers[0].volumeDevices"
	const mounts = "spec.containers[0].volumeMounts"
	p := newPod("p")
	p.Spec.Volumes = []corev1.Volume{
		{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "claim2", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c2"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{
		{Name: "claim", DevicePath: "/dev/a"},
		{Name: "claim", DevicePath: "/dev/a"},
		{Name: "scratch", DevicePath: "/dev/../b"},
		{Name: "missing", DevicePath: "/data"},
		{},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "claim2", MountPath: "/data"}, {Name: "claim", MountPath: "/m"}}
	defaultPod(p)
	errs := r.Strategy.Validate(context.Background(), p)
	wantErrors(t, errs,
		invalid+" "+devs+"[0].name", // also a mount
		invalid+" "+devs+"[1].name", invalid+" "+devs+"[1].name", invalid+" "+devs+"[1].devicePath",
		invalid+" "+devs+"[2].name", invalid+" "+devs+"[2].devicePath",
		notFound+" "+devs+"[3].name", invalid+" "+devs+"[3].devicePath",
		required+" "+devs+"[4].name", notFound+" "+devs+"[4].name", required+" "+devs+"[4].devicePath",
		invalid+" "+mounts+"[0].mountPath", invalid+" "+mounts+"[1].name",
	)
	for _, d := range []string{
		devs + `[1].name: Invalid value: "claim": must be unique`,
		devs + `[2].name: Invalid value: "scratch": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`,
		devs + `[2].devicePath: Invalid value: "/dev/../b": can not contain backsteps ('..')`,
		devs + `[3].devicePath: Invalid value: "/data": must not already exist as a path in volumeMounts`,
		mounts + `[1].name: Invalid value: "claim": must not already exist in volumeDevices`,
		mounts + `[0].mountPath: Invalid value: "/data": must not already exist as a path in volumeDevices`,
	} {
		wantError(t, errs, d)
	}
}

// TestImageVolumePullPolicyDefaultedAndValidated: an image volume's
// pullPolicy defaults as a container's imagePullPolicy (Always for a
// reference tagged latest or with neither tag nor digest, else
// IfNotPresent), for pods and templates, as upstream's SetDefaults_Volume;
// it is then validated as upstream's validateImageVolumeSource
// (validatePullPolicy: Required when empty, one of the known policies).
func TestImageVolumePullPolicyDefaultedAndValidated(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	img := func(ref string, pp corev1.PullPolicy) corev1.Volume {
		return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: ref, PullPolicy: pp}}}
	}
	for _, tc := range []struct {
		ref  string
		set  corev1.PullPolicy
		want corev1.PullPolicy
	}{
		{"busybox", "", corev1.PullAlways},
		{"busybox:latest", "", corev1.PullAlways},
		{"registry.example:5000/tools/busybox", "", corev1.PullAlways},
		{"busybox:1.36", "", corev1.PullIfNotPresent},
		{"busybox@sha256:" + strings.Repeat("a", 64), "", corev1.PullIfNotPresent},
		{"busybox:latest", corev1.PullNever, corev1.PullNever},
	} {
		p := newPod("p")
		p.Spec.Volumes = []corev1.Volume{img(tc.ref, tc.set)}
		r.Strategy.Default(p)
		if got := p.Spec.Volumes[0].Image.PullPolicy; got != tc.want {
			t.Errorf("pod image volume %q (pullPolicy %q): defaulted to %q, want %q", tc.ref, tc.set, got, tc.want)
		}
		wantErrors(t, r.Strategy.Validate(ctx, p))
	}

	d := newDeployment()
	d.Spec.Template.Spec.Volumes = []corev1.Volume{img("busybox:1.36", "")}
	dr := find(t, appsV1, "deployments")
	dr.Strategy.Default(d)
	if got := d.Spec.Template.Spec.Volumes[0].Image.PullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("template image volume defaulted to %q, want IfNotPresent", got)
	}

	p := newPod("p")
	p.Spec.Volumes = []corev1.Volume{img("busybox", "Sometimes")}
	r.Strategy.Default(p)
	errs := r.Strategy.Validate(ctx, p)
	wantErrors(t, errs, notSupported+" spec.volumes[0].image.pullPolicy")
	wantError(t, errs, `spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`)

	// Not defaulted (as a body validated without defaults would be), empty
	// is Required.
	p = newPod("p")
	r.Strategy.Default(p)
	p.Spec.Volumes = []corev1.Volume{img("busybox", "")}
	wantErrors(t, r.Strategy.Validate(ctx, p), required+" spec.volumes[0].image.pullPolicy")
}

// TestEphemeralVolumeWithInvalidClaimNameIsNotMountable: an ephemeral
// volume whose claim name "<pod>-<volume>" is invalid is a volume with
// errors, so mounting it is also NotFound, as upstream's ValidateVolumes
// (the claim name is checked in validateVolumeSource given the pod's
// metadata); a claim volume naming an ephemeral volume's claim is reported
// but stays mountable (upstream reports it outside the volume's errors).
func TestEphemeralVolumeWithInvalidClaimNameIsNotMountable(t *testing.T) {
	r := find(t, coreV1, "pods")
	tmpl := &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	eph := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: tmpl}}}
	spec := func(errs field.ErrorList) field.ErrorList {
		var out field.ErrorList
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "metadata.") {
				out = append(out, e)
			}
		}
		return out
	}

	p := newPod("p" + strings.Repeat("o", 250))
	p.Spec.Volumes = []corev1.Volume{eph}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	defaultPod(p)
	wantErrors(t, spec(r.Strategy.Validate(context.Background(), p)),
		invalid+" spec.volumes[0].name", notFound+" spec.containers[0].volumeMounts[0].name")

	p = newPod("p")
	p.Spec.Volumes = []corev1.Volume{eph, {Name: "again", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "p-scratch"}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "again", MountPath: "/again"}}
	defaultPod(p)
	wantErrors(t, r.Strategy.Validate(context.Background(), p), invalid+" spec.volumes[1].persistentVolumeClaim.claimName")

	// A template has no pod name: its ephemeral volumes are mountable.
	d := newDeployment()
	d.Spec.Template.Spec.Volumes = []corev1.Volume{eph}
	d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	dr := find(t, appsV1, "deployments")
	dr.Strategy.Default(d)
	wantErrors(t, dr.Strategy.Validate(context.Background(), d))
}
