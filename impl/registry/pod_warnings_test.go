package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The warnings of a pod spec and metadata, with upstream's messages and
// field paths (pkg/api/pod/warnings.go), for a pod (no prefix) and for a
// workload's template (spec.template).
func TestPodSpecAndMetaWarningsAsUpstream(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec, *metav1.ObjectMeta)
		want   []string // for a pod; a template's are prefixed with spec.template.
	}{
		{"nothing to warn of", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
			s.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
			s.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "$(A):2"}}
		}, nil},
		{"deprecated node labels", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/zone": "a", "node-role.kubernetes.io/master": ""}
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "a", Operator: "Exists"}, {Key: "beta.kubernetes.io/arch", Operator: "Exists"}}},
				}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
					{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "beta.kubernetes.io/instance-type", Operator: "Exists"}}}},
				},
			}}
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
				{TopologyKey: "failure-domain.beta.kubernetes.io/region", LabelSelector: &metav1.LabelSelector{}},
				{TopologyKey: "kubernetes.io/hostname"},
			}
		}, []string{
			`spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
			`spec.nodeSelector[failure-domain.beta.kubernetes.io/zone]: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
			`spec.nodeSelector[node-role.kubernetes.io/master]: use "node-role.kubernetes.io/control-plane" instead`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: beta.kubernetes.io/instance-type is deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
			`spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
			`spec.topologySpreadConstraints[1].labelSelector: a null labelSelector results in matching no pod`,
		}},
		{"deprecated annotations", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			m.Annotations = map[string]string{
				"scheduler.alpha.kubernetes.io/critical-pod":         "",
				"security.alpha.kubernetes.io/unsafe-sysctls":        "a=b",
				"seccomp.security.alpha.kubernetes.io/pod":           "runtime/default",
				"container.seccomp.security.alpha.kubernetes.io/app": "runtime/default",
			}
		}, []string{
			`metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
			`metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls]: non-functional in v1.11+; use the "sysctls" field instead`,
			`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`,
			`metadata.annotations[container.seccomp.security.alpha.kubernetes.io/app]: non-functional in v1.27+; use the "seccompProfile" field instead`,
		}},
		{"seccomp annotations with the fields", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			m.Annotations = map[string]string{
				"seccomp.security.alpha.kubernetes.io/pod":           "runtime/default",
				"container.seccomp.security.alpha.kubernetes.io/app": "runtime/default",
			}
			s.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}, nil},
		{"deprecated volume plugins", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r"}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{}}},
				{Name: "f", VolumeSource: corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{}}},
				{Name: "g", VolumeSource: corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{}}},
				{Name: "h", VolumeSource: corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}}},
				{Name: "h2", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.5")},
						Limits:   corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
					}}}}}},
				{Name: "i", VolumeSource: corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{}}},
				{Name: "j", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}}},
			}
		}, []string{
			`spec.volumes[0].gitRepo: deprecated in v1.11`,
			`spec.volumes[2].scaleIO: deprecated in v1.16, non-functional in v1.22+`,
			`spec.volumes[3].photonPersistentDisk: deprecated in v1.11, non-functional in v1.16+`,
			`spec.volumes[4].flocker: deprecated in v1.22, non-functional in v1.25+`,
			`spec.volumes[5].storageOS: deprecated in v1.22, non-functional in v1.25+`,
			`spec.volumes[6].quobyte: deprecated in v1.22, non-functional in v1.25+`,
			`spec.volumes[7].glusterfs: deprecated in v1.25, non-functional in v1.26+`,
			`spec.volumes[8].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
			`spec.volumes[9].cephfs: deprecated in v1.28, non-functional in v1.31+`,
			`spec.volumes[10].rbd: deprecated in v1.28, non-functional in v1.31+`,
		}},
		{"overlapping volume paths", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.Volumes = []corev1.Volume{
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "c"},
					Items:                []corev1.KeyToPath{{Key: "a", Path: "x"}, {Key: "b", Path: "x/y"}}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "k", Path: "token"}}}},
					{},
					{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: str("b"), Path: "ca"}},
				}}}},
			}
		}, []string{
			`volume "cm" (ConfigMap "c"): overlapping paths: "x/y" with "x"`,
			`volume "p" (Projected Secret "s"): overlapping paths: "token" with "token"`,
			`volume "p" (Projected) has no sources provided`,
		}},
		{"duplicate host aliases and image pull secrets", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"a"}}, {IP: "10.0.0.1", Hostnames: []string{"b"}}}
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "r"}, {Name: ""}, {Name: "r"}}
		}, []string{
			`spec.hostAliases[1].ip: duplicate ip "10.0.0.1"`,
			`spec.imagePullSecrets[2].name: duplicate name "r"`,
			`spec.imagePullSecrets[1].name: invalid empty name ""`,
		}},
		{"fractional byte quantities", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100m")}
			s.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1.5")},
			}}}
			s.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("500m"), corev1.ResourceCPU: resource.MustParse("500m")},
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("250m")},
			}
		}, []string{
			`spec.overhead[memory]: fractional byte value "100m" is invalid, must be an integer`,
			`spec.initContainers[0].resources.requests[ephemeral-storage]: fractional byte value "1500m" is invalid, must be an integer`,
			`spec.containers[0].resources.limits[memory]: fractional byte value "500m" is invalid, must be an integer`,
			`spec.containers[0].resources.requests[memory]: fractional byte value "250m" is invalid, must be an integer`,
		}},
		{"env vars hiding earlier ones", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.Containers[0].Env = []corev1.EnvVar{
				{Name: "A", Value: "1"},
				{Name: "A", Value: "2"},
				{Name: "A", Value: "$(A)"},
				{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "A", Value: "x$(A)"},
			}
		}, []string{
			`spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply`,
			`spec.containers[0].env[2]: hides previous definition of "A", which may be dropped when using apply`,
			`spec.containers[0].env[3]: hides previous definition of "A", which may be dropped when using apply`,
		}},
		{"container ports", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.Containers[0].Ports = []corev1.ContainerPort{
				{ContainerPort: 80, Protocol: "TCP"},
				{ContainerPort: 80, Protocol: "TCP"},
				{ContainerPort: 81, Protocol: "TCP", HostIP: "10.0.0.1"},
				{ContainerPort: 82, Protocol: "TCP", HostPort: 8082},
			}
			s.Containers = append(s.Containers, corev1.Container{Name: "b", Ports: []corev1.ContainerPort{
				{ContainerPort: 80, Protocol: "UDP"},
				{ContainerPort: 82, Protocol: "TCP", HostPort: 8082, HostIP: "10.0.0.1"},
				{ContainerPort: 80, Protocol: "TCP", HostPort: 8080},
			}})
		}, []string{
			`spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]`,
			`spec.containers[0].ports[2]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:10.0.0.1}`,
			`spec.containers[1].ports[1]: dangerously ambiguous port definition with spec.containers[0].ports[3]`,
			`spec.containers[1].ports[2]: overlapping port definition with spec.containers[0].ports[0]`,
			`spec.containers[1].ports[2]: overlapping port definition with spec.containers[0].ports[1]`,
		}},
		{"negative grace period and null pod affinity selectors", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.TerminationGracePeriodSeconds = i64(-1)
			s.Affinity = &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{{TopologyKey: "k"}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "k", LabelSelector: &metav1.LabelSelector{}}}},
				},
				PodAntiAffinity: &corev1.PodAntiAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "k"}}},
				},
			}
		}, []string{
			`spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod`,
			`spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod`,
		}},
		{"non-canonical IPs", func(s *corev1.PodSpec, m *metav1.ObjectMeta) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"FD00::10"}}
		}, []string{
			`spec.dnsConfig.nameservers[0]: IPv6 address "FD00::10" should be in RFC 5952 canonical format ("fd00::10")`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec, &p.ObjectMeta)
			if got := podSpecAndMetaWarnings(nil, &p.Spec, &p.ObjectMeta); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("pod warnings:\n got  %q\n want %q", got, tc.want)
			}
			tmpl := &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
			var want []string
			for _, w := range tc.want {
				if !strings.HasPrefix(w, "volume ") {
					w = "spec.template." + strings.ReplaceAll(w, " with spec.", " with spec.template.spec.")
				}
				want = append(want, w)
			}
			if got := podTemplateWarnings(field.NewPath("spec", "template"), tmpl); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("template warnings:\n got  %q\n want %q", got, want)
			}
		})
	}
}

// A template's container AppArmor annotation without the field is
// deprecated; a pod's is not warned of here (upstream warns of it in its
// AppArmor version skew handling).
func TestTemplateAppArmorAnnotationWarning(t *testing.T) {
	p := newPod("p")
	p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}
	if got := podSpecAndMetaWarnings(nil, &p.Spec, &p.ObjectMeta); len(got) != 0 {
		t.Errorf("pod warnings %q, want none", got)
	}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
	want := `spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: deprecated since v1.30; use the "appArmorProfile" field instead`
	if got := podTemplateWarnings(field.NewPath("spec", "template"), tmpl); strings.Join(got, "\n") != want {
		t.Errorf("template warnings %q, want %q", got, want)
	}
	tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
	if got := podTemplateWarnings(field.NewPath("spec", "template"), tmpl); len(got) != 0 {
		t.Errorf("template warnings with the field %q, want none", got)
	}
}

// Pod creates warn as upstream's podStrategy.WarningsOnCreate: the name as
// a DNS label, then the spec's warnings.
func TestPodCreateWarnings(t *testing.T) {
	r := find(t, coreV1, "pods")
	p := newPod("a.b")
	p.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/arch": "amd64"}
	defaultPod(p)
	ctx, w := request.WithWarnings(context.Background())
	r.Strategy.PrepareForCreate(ctx, p)
	if errs := r.Strategy.Validate(ctx, p); len(errs) > 0 {
		t.Fatalf("create errors: %v", errs)
	}
	want := []string{
		`metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
	}
	if got := w.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n got  %q\n want %q", got, want)
	}
}

// Deployment and ReplicaSet creates warn of the name and the template;
// updates of the template only when the generation changed, as upstream's
// strategies.
func TestWorkloadTemplateWarnings(t *testing.T) {
	const nodeLabelWarning = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
	d := newDeployment()
	rs := newReplicaSet()
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		template *corev1.PodTemplateSpec
	}{
		{"deployments", d, &d.Spec.Template},
		{"replicasets", rs, &rs.Spec.Template},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := find(t, appsV1, tc.name)
			tc.obj.(metav1.Object).SetName("web.x")
			tc.template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
			r.Strategy.Default(tc.obj)
			ctx, w := request.WithWarnings(context.Background())
			r.Strategy.PrepareForCreate(ctx, tc.obj)
			if errs := r.Strategy.Validate(ctx, tc.obj); len(errs) > 0 {
				t.Fatalf("create errors: %v", errs)
			}
			want := []string{
				`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
				nodeLabelWarning,
			}
			if got := w.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("create warnings:\n got  %q\n want %q", got, want)
			}

			// A label change leaves the generation: no warnings.
			upd := tc.obj.DeepCopyObject()
			upd.(metav1.Object).SetLabels(map[string]string{"x": "y"})
			ctx, w = request.WithWarnings(context.Background())
			r.Strategy.PrepareForUpdate(ctx, upd, tc.obj)
			if errs := r.Strategy.ValidateUpdate(ctx, upd, tc.obj); len(errs) > 0 {
				t.Fatalf("update errors: %v", errs)
			}
			if got := w.List(); len(got) != 0 {
				t.Errorf("label update warnings %q, want none", got)
			}

			// A template change bumps it: the template's warnings.
			tc.template.Spec.Containers[0].Image = "nginx:1.28"
			upd = tc.obj.DeepCopyObject()
			tc.template.Spec.Containers[0].Image = "nginx:1.27"
			ctx, w = request.WithWarnings(context.Background())
			r.Strategy.PrepareForUpdate(ctx, upd, tc.obj)
			if errs := r.Strategy.ValidateUpdate(ctx, upd, tc.obj); len(errs) > 0 {
				t.Fatalf("update errors: %v", errs)
			}
			if got := w.List(); strings.Join(got, "\n") != nodeLabelWarning {
				t.Errorf("template update warnings %q, want %q", got, nodeLabelWarning)
			}
		})
	}
}
