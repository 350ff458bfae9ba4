package fieldmanager

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// kubeletNode is a Node as a simulated kubelet registers it (its status
// dropped by the create, as the server does) with the managed fields the
// server records for that create, and the kubelet's status at now.
func kubeletNode(b testing.TB, m *Manager, now time.Time) (created *corev1.Node, status func(old *corev1.NodeStatus, now time.Time) corev1.NodeStatus) {
	b.Helper()
	cfg := &kubelet.Config{NodeName: "node-17", NodeIP: "10.0.0.17", CPU: resource.MustParse("4"), Memory: resource.MustParse("32Gi"),
		EphemeralStorage: resource.MustParse("100Gi"), Port: kubelet.KubeletPort, MaxPods: kubelet.DefaultMaxPods,
		KubeletVersion: kubelet.DefaultKubeletVersion}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: map[string]string{
		corev1.LabelHostname: cfg.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	created = m.Update(&corev1.Node{}, node, "kubeproof-kubelet").(*corev1.Node)
	created.UID, created.ResourceVersion, created.CreationTimestamp = "4f3c1a52-2b1e-4a57-9a43-0d2b8c1e7f60", "1000", metav1.NewTime(now)
	return created, func(old *corev1.NodeStatus, now time.Time) corev1.NodeStatus {
		return kubelet.NodeStatus(cfg, old, kubelet.Pressure{}, "kubeproof-sim://1.0", nil, now)
	}
}

// BenchmarkNodeStatusUpdate is the managed-fields work of a kubelet's
// nodes/status write: the first one, after registering, and the
// heartbeat every 10 s after it (each condition's lastHeartbeatTime
// moved), the kubelet already a manager of the status.
func BenchmarkNodeStatusUpdate(b *testing.B) {
	kind := corev1.SchemeGroupVersion.WithKind("Node")
	main, st := managerFor(b, kind, "", "status"), managerFor(b, kind, "status", "spec")
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	live, status := kubeletNode(b, main, t0)
	first := live.DeepCopy()
	first.Status = status(nil, t0)
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Update(live, first.DeepCopy(), "kubeproof-kubelet")
		}
	})
	reported := st.Update(live, first.DeepCopy(), "kubeproof-kubelet").(*corev1.Node)
	next := reported.DeepCopy()
	next.Status = status(&reported.Status, t0.Add(10*time.Second))
	b.Run("again", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Update(reported, next.DeepCopy(), "kubeproof-kubelet")
		}
	})
}
