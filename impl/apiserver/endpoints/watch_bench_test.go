package endpoints

import (
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	kpresource "github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// runningPod is a pod as the startup benchmark's kubelets leave it: one
// container, requests, a projected service-account volume, Running with
// its conditions and one managedFields entry per writer.
func runningPod() *corev1.Pod {
	t := metav1.Unix(1_790_000_000, 0)
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}`)}
	expiry := int64(3607)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pod-12345", Namespace: "bench", UID: "6d1f8a52-3c1e-4b7e-9a0c-1f2e3d4c5b6a", ResourceVersion: "123456",
			CreationTimestamp: t, Labels: map[string]string{"app": "startup"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubeproof", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: fields},
				{Manager: "kubeproof", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: fields, Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-0042", ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: corev1.PullIfNotPresent,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				VolumeMounts:           []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.42", PodIP: "10.244.42.7", StartTime: &t, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.k8s.io/pause:3.10",
				ImageID: "sha256:0123456789abcdef", ContainerID: "sim://0123456789abcdef",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}}},
		},
	}
}

func podHandler(tb testing.TB) *Handler {
	tb.Helper()
	c, err := codec.New()
	if err != nil {
		tb.Fatal(err)
	}
	res := &kpresource.Resource{
		GroupVersion: corev1.SchemeGroupVersion, Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true,
		New:      func() runtime.Object { return &corev1.Pod{} },
		NewList:  func() runtime.Object { return &corev1.PodList{} },
		Strategy: cmStrategy{},
	}
	return NewHandler(res, nil, "/pods", &Options{Codecs: c})
}

// BenchmarkWatchEventEncode is one watcher's encoding of one pod event into
// its stream frame, in the two media types clients watch with.
func BenchmarkWatchEventEncode(b *testing.B) {
	h := podHandler(b)
	for _, accept := range []string{codec.Protobuf, codec.JSON} {
		b.Run("accept="+accept, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
			r.Header.Set("Accept", accept)
			target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
			if err != nil {
				b.Fatal(err)
			}
			ew := newEventWriter(h, target, nil)
			// More distinct pods than the shared encodings keep: every
			// event is encoded (a watch alone on its resource).
			pods := make([]*corev1.Pod, 4*sharedEncodingEntries)
			for i := range pods {
				pods[i] = runningPod()
				pods[i].ResourceVersion = strconv.Itoa(100 + i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ew.encode(r, watch.Event{Type: watch.Modified, Object: pods[i%len(pods)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkWatchEventFanOut is one pod event encoded for the four watchers
// a pod's event has in the startup benchmark (scheduler, controller
// manager, the pod's kubelet, the benchmark's observer), all protobuf, the
// same object handed to each as the watch cache does.
func BenchmarkWatchEventFanOut(b *testing.B) {
	h := podHandler(b)
	r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
	r.Header.Set("Accept", codec.Protobuf)
	target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
	if err != nil {
		b.Fatal(err)
	}
	writers := make([]*eventWriter, 4)
	for i := range writers {
		writers[i] = newEventWriter(h, target, nil)
	}
	// More distinct pods than the shared encodings keep: each event's
	// object is new to them, as in a stream of pod updates.
	events := make([]watch.Event, 4*sharedEncodingEntries)
	for i := range events {
		pod := runningPod()
		pod.ResourceVersion = strconv.Itoa(100 + i)
		events[i] = watch.Event{Type: watch.Modified, Object: pod}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ev := events[i%len(events)]
		i++
		for _, ew := range writers {
			if _, err := ew.encode(r, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}
