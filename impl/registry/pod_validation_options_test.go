package registry

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// storedBeforeTightening are pod spec values that today's checks refuse
// but that an object stored earlier may hold, each with the one error a
// create gets, as upstream's validation with PodValidationOptions zero.
var storedBeforeTightening = []struct {
	name   string
	set    func(*corev1.PodSpec)
	errors []string
}{
	{"hugepages not whole pages", func(s *corev1.PodSpec) {
		s.Containers[0].Resources = corev1.ResourceRequirements{
			Limits:   rlist("memory", "64Mi", "hugepages-2Mi", "3Mi"),
			Requests: rlist("memory", "64Mi", "hugepages-2Mi", "3Mi"),
		}
	}, []string{invalid + " spec.containers[0].resources.limits[hugepages-2Mi]", invalid + " spec.containers[0].resources.requests[hugepages-2Mi]"}},
	{"pod affinity selector value invalid", func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"not a label value"}}}},
			}},
		}}
	}, []string{invalid + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[0]"}},
	{"required node affinity value invalid", func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a/b"}}},
			}}},
		}}
	}, []string{invalid + " spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
	{"topology spread selector invalid", func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpExists, Values: []string{"web"}}}},
		}}
	}, []string{forbidden + " spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values"}},
	{"topology spread matchLabelKeys invalid", func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MatchLabelKeys: []string{"bad key!"},
		}}
	}, []string{invalid + " spec.topologySpreadConstraints[0].matchLabelKeys[0]"}},
	{"projected token path leaves the volume", func(s *corev1.PodSpec) {
		s.ServiceAccountName = "default"
		s.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "../token"}}},
		}}}}
	}, []string{invalid + " spec.volumes[0].projected.path"}},
	// Upstream checks token paths as ValidateLocalNonReservedPath (not
	// starting with "..", where the kubelet keeps its ..data), reported on
	// the projected volume's path, as upstream's validateProjectionSources.
	{"projected token path reserved", func(s *corev1.PodSpec) {
		s.ServiceAccountName = "default"
		s.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "..token"}}},
		}}}}
	}, []string{invalid + " spec.volumes[0].projected.path"}},
}

// TestPodUpdateKeepsWhatTheStoredPodHad: a pod stored with a value a later
// check refuses stays updatable (labels, images, ephemeral containers), as
// upstream relaxes pod validation by the old pod
// (GetValidationOptionsFromPodSpecAndMeta); a create is still refused.
func TestPodUpdateKeepsWhatTheStoredPodHad(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	for _, tc := range storedBeforeTightening {
		t.Run(tc.name, func(t *testing.T) {
			old := defaultedPod(t, newPod("web"))
			tc.set(&old.Spec)
			r.Strategy.Default(old)

			created := old.DeepCopy()
			created.ResourceVersion = ""
			wantErrors(t, r.Strategy.Validate(ctx, created), tc.errors...)

			labeled := old.DeepCopy()
			labeled.Labels = map[string]string{"app": "web"}
			r.Strategy.PrepareForUpdate(ctx, labeled, old)
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, labeled, old))

			image := old.DeepCopy()
			image.Spec.Containers[0].Image = "nginx:1.28"
			r.Strategy.PrepareForUpdate(ctx, image, old)
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, image, old))

			debug := old.DeepCopy()
			debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}}}
			r.EphemeralContainers.PrepareForUpdate(ctx, debug, old)
			wantErrors(t, r.EphemeralContainers.ValidateUpdate(ctx, debug, old))
		})
	}
}

// TestWorkloadTemplateUpdateKeepsWhatTheStoredTemplateHad: a Deployment's
// or ReplicaSet's stored template with a value a later check refuses stays
// updatable, as upstream's GetValidationOptionsFromPodTemplate; a template
// that passed the checks may not gain such a value, and a create is
// refused.
func TestWorkloadTemplateUpdateKeepsWhatTheStoredTemplateHad(t *testing.T) {
	ctx := context.Background()
	kinds := []struct {
		resource string
		new      func() runtimeObject
		template func(runtimeObject) *corev1.PodTemplateSpec
	}{
		{"deployments", func() runtimeObject { return newDeployment() },
			func(o runtimeObject) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template }},
		{"replicasets", func() runtimeObject { return newReplicaSet() },
			func(o runtimeObject) *corev1.PodTemplateSpec { return &o.(*appsv1.ReplicaSet).Spec.Template }},
	}
	for _, k := range kinds {
		r := find(t, appsV1, k.resource)
		for _, tc := range storedBeforeTightening {
			t.Run(k.resource+"/"+tc.name, func(t *testing.T) {
				clean := k.new()
				r.Strategy.Default(clean)
				r.Strategy.PrepareForCreate(ctx, clean)
				if errs := r.Strategy.Validate(ctx, clean); len(errs) > 0 {
					t.Fatalf("clean object invalid: %v", errs.ToAggregate())
				}
				old := clean.DeepCopyObject()
				tc.set(&k.template(old).Spec)
				r.Strategy.Default(old)

				// The same value on create, and gained by an update, is refused.
				created := old.DeepCopyObject()
				wantTemplateErrors(t, r.Strategy.Validate(ctx, created), tc.errors)
				gained := old.DeepCopyObject()
				r.Strategy.PrepareForUpdate(ctx, gained, clean)
				wantTemplateErrors(t, r.Strategy.ValidateUpdate(ctx, gained, clean), tc.errors)

				// Kept, it does not block another change of the template.
				image := old.DeepCopyObject()
				k.template(image).Spec.Containers[0].Image = "nginx:1.28"
				r.Strategy.PrepareForUpdate(ctx, image, old)
				wantErrors(t, r.Strategy.ValidateUpdate(ctx, image, old))
			})
		}
	}
}

// wantTemplateErrors: errs are exactly podErrors ("<type> spec.<field>"
// keys of a pod) moved under the workload's spec.template.
func wantTemplateErrors(t *testing.T, errs field.ErrorList, podErrors []string) {
	t.Helper()
	var want []string
	for _, e := range podErrors {
		typ, f, _ := strings.Cut(e, " spec.")
		want = append(want, typ+" spec.template.spec."+f)
	}
	wantErrors(t, errs, want...)
}
