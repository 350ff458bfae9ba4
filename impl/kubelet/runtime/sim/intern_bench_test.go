package sim

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// BenchmarkContainerParts is what CreateContainer keeps of a container's
// labels, annotations, environment, security context and metadata when an equal set was seen before
// (every container of a workload after the first).
func BenchmarkContainerParts(b *testing.B) {
	labels := map[string]string{runtime.LabelPodName: "web-1", runtime.LabelPodNamespace: "default", runtime.LabelPodUID: "uid-1",
		"io.kubernetes.container.name": "app"}
	annotations := map[string]string{"io.kubernetes.container.hash": "1234abcd", "io.kubernetes.container.restartCount": "0",
		"io.kubernetes.container.terminationMessagePath": "/dev/termination-log", "io.kubernetes.container.terminationMessagePolicy": "File",
		"io.kubernetes.pod.terminationGracePeriod": "30"}
	env := []*runtimeapi.KeyValue{{Key: "KUBERNETES_SERVICE_HOST", Value: []byte("10.96.0.1")}, {Key: "KUBERNETES_SERVICE_PORT", Value: []byte("443")},
		{Key: "KUBERNETES_PORT", Value: []byte("tcp://10.96.0.1:443")}, {Key: "KUBERNETES_PORT_443_TCP_PROTO", Value: []byte("tcp")}}
	sc := &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}, NoNewPrivs: true}
	meta := &runtimeapi.ContainerMetadata{Name: "app"}
	parts := func() {
		if l := compactLabels(labels); l.rest == nil {
			b.Fatal("no other labels kept")
		}
		shared.stringMap(annotations)
		shared.env(env)
		shared.securityContext(sc)
		shared.containerMeta(meta)
	}
	parts()
	b.ReportAllocs()
	for b.Loop() {
		parts()
	}
}
