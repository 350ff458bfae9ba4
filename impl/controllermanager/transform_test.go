package controllermanager

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
)

func TestTrimForCacheKeepsWhatControllersRead(t *testing.T) {
	deadline := int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"controller.kubernetes.io/pod-deletion-cost": "5"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs1", Controller: ptr.To(true)}},
			Finalizers:      []string{"f"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", PriorityClassName: "high", ActiveDeadlineSeconds: &deadline, Hostname: "h", Subdomain: "svc",
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			Volumes:     []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx", Command: []string{"run"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Ports:     []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
			InitContainers: []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 3, Ready: true}},
			PodIP:             "10.0.0.1",
		},
	}
	want := pod.DeepCopy()
	out, err := trimForCache(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	want.ManagedFields = nil
	if got.Name != want.Name || got.UID != want.UID || got.ResourceVersion != want.ResourceVersion ||
		got.Labels["app"] != "web" || got.Annotations["controller.kubernetes.io/pod-deletion-cost"] != "5" ||
		len(got.OwnerReferences) != 1 || len(got.Finalizers) != 1 {
		t.Errorf("metadata changed: %+v", got.ObjectMeta)
	}
	if got.Status.Phase != corev1.PodRunning || len(got.Status.Conditions) != 1 || got.Status.ContainerStatuses[0].RestartCount != 3 || got.Status.PodIP != "10.0.0.1" {
		t.Errorf("status changed: %+v", got.Status)
	}
	s := got.Spec
	if s.NodeName != "n1" || s.PriorityClassName != "high" || *s.ActiveDeadlineSeconds != 30 || len(s.Tolerations) != 1 {
		t.Errorf("spec fields controllers read were dropped: %+v", s)
	}
	if s.Hostname != "h" || s.Subdomain != "svc" {
		t.Errorf("hostname and subdomain (the endpoints controller's) dropped: %+v", s)
	}
	if c := s.Containers[0]; c.Name != "app" || c.Image != "nginx" || c.Resources.Requests.Cpu().MilliValue() != 100 || c.Command != nil || c.Env != nil ||
		len(c.Ports) != 1 || c.Ports[0].Name != "web" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container trimmed wrongly: %+v", c)
	}
	if ic := s.InitContainers[0]; ic.RestartPolicy == nil || *ic.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar restartPolicy dropped: %+v", ic)
	}
	if s.Volumes != nil {
		t.Errorf("volumes kept: %v", s.Volumes)
	}
}

func TestTrimForCacheOtherObjectsAndTombstones(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	out, _ := trimForCache(node)
	n := out.(*corev1.Node)
	if n.ManagedFields != nil || n.Labels["a"] != "b" || len(n.Status.Conditions) != 1 {
		t.Errorf("node trimmed wrongly: %+v", n)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{}}}}}
	out, _ = trimForCache(tomb)
	if _, ok := out.(cache.DeletedFinalStateUnknown); !ok {
		t.Errorf("tombstone not passed through: %T", out)
	}
}

// TestTrimForCacheKeepsSecretReferences: a cached pod still names every
// secret the original does (the legacy service account token cleaner
// reads them from the cache), while volumes and env that name no secret
// go, and projected volumes keep only their secret sources.
func TestTrimForCacheKeepsSecretReferences(t *testing.T) {
	secretEnv := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "PLAIN", Value: "v"},
			{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	secretEnvFrom := func(name string) []corev1.EnvFromSource {
		return []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}},
			{Name: "mixed", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected"}}}}}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "volume"}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", Image: "i", Env: secretEnv("init-env"), EnvFrom: secretEnvFrom("init-envfrom")}},
		Containers:     []corev1.Container{{Name: "app", Image: "a", Env: secretEnv("app-env"), EnvFrom: secretEnvFrom("app-envfrom")}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "d", Env: secretEnv("debug-env"), EnvFrom: secretEnvFrom("debug-envfrom")}}},
	}}
	names := func(p *corev1.Pod) []string {
		var out []string
		serviceaccount.PodSecretNames(p, func(n string) { out = append(out, n) })
		return out
	}
	want := names(pod)
	if len(want) != 10 {
		t.Fatalf("the test pod names %d secrets: %v", len(want), want)
	}
	out, err := trimForCache(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if g := names(got); !slices.Equal(g, want) {
		t.Errorf("secret names %v, want %v", g, want)
	}
	var vols []string
	for _, v := range got.Spec.Volumes {
		vols = append(vols, v.Name)
	}
	if !slices.Equal(vols, []string{"mixed", "secret", "csi"}) {
		t.Errorf("volumes kept: %v", vols)
	}
	if srcs := got.Spec.Volumes[0].Projected.Sources; len(srcs) != 1 || srcs[0].Secret == nil {
		t.Errorf("projected sources kept: %+v", srcs)
	}
	c := got.Spec.Containers[0]
	if len(c.Env) != 1 || c.Env[0].Name != "FROM_SECRET" || len(c.EnvFrom) != 1 || c.EnvFrom[0].Prefix != "S_" {
		t.Errorf("env kept: %+v %+v", c.Env, c.EnvFrom)
	}
}
