package intern

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// startupPod is a Running pod as the startup benchmarks' pods arrive in an
// informer: labels, a request, the default tolerations, the defaulted
// security context and resize policy, the kube-api-access volume, the
// kubelet's conditions and a running container.
func startupPod() *v1.Pod {
	start := metav1.NewTime(time.Unix(1_790_000_000, 0).Local())
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "startup-1", Namespace: "default", Labels: map[string]string{"app": "startup", "bench": "s12"}},
		Spec: v1.PodSpec{
			NodeName: "node-17", SchedulerName: "default-scheduler", ServiceAccountName: "default", DeprecatedServiceAccount: "default",
			RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst, SecurityContext: &v1.PodSecurityContext{},
			TerminationGracePeriodSeconds: ptr.To[int64](30), EnableServiceLinks: ptr.To(true), Priority: ptr.To[int32](0),
			PreemptionPolicy: ptr.To(v1.PreemptLowerPriority),
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Containers: []v1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: v1.PullIfNotPresent,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
				Resources:    v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}},
				ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}, {ResourceName: v1.ResourceMemory, RestartPolicy: v1.NotRequired}},
				VolumeMounts: []v1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Volumes: []v1.Volume{{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				DefaultMode: ptr.To[int32](0o644),
				Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
			}}}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, HostIP: "10.0.0.17", HostIPs: []v1.HostIP{{IP: "10.0.0.17"}},
			PodIP: "10.244.17.5", PodIPs: []v1.PodIP{{IP: "10.244.17.5"}}, StartTime: &start,
			Conditions: []v1.PodCondition{
				{Type: "PodReadyToStartContainers", Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
			},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Image: "registry.k8s.io/pause:3.10", ImageID: "sha256:abc", Ready: true, Started: ptr.To(true),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}}}},
		},
	}
}

// BenchmarkPod is Table.Pod on a freshly decoded version of a pod whose
// values the table already holds: what the shared pod informer (and the
// watch cache) spend on every pod event once a workload is under way.
func BenchmarkPod(b *testing.B) {
	tab := New()
	tmpl := startupPod()
	tab.Pod(tmpl.DeepCopy())
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		p := tmpl.DeepCopy() // a decode's fresh values
		b.StartTimer()
		tab.Pod(p)
	}
}
