package apiserver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// BenchmarkTokenRequest is a kubelet's request for a pod's projected
// service-account token (serviceaccounts/token bound to a pod on a node)
// over HTTPS (protobuf) against the embedded etcd behind the watch cache,
// as in `kubeproof up`, one at a time. cpu-µs/op is the whole process's
// (client, server, etcd).
func BenchmarkTokenRequest(b *testing.B) { benchmarkTokenRequest(b, 0) }

// BenchmarkTokenRequestWhileWriting is BenchmarkTokenRequest while four
// clients update ConfigMaps back to back, as kubelets and controllers write
// while pods start: each quorum read of the token request then waits for
// a round of etcd's raft loop busy with those writes (the test etcd does
// not fsync; `kubeproof up`'s does, and waits longer).
func BenchmarkTokenRequestWhileWriting(b *testing.B) { benchmarkTokenRequest(b, 4) }

func benchmarkTokenRequest(b *testing.B, writers int) {
	factory := storagebackend.NewFactory(storagebackend.Config{
		Client:     etcdServer.Client(),
		Prefix:     fmt.Sprintf("/token%d", time.Now().UnixNano()),
		WatchCache: true,
	})
	b.Cleanup(factory.Close)
	e := newEnv(b, func(c *apiserver.Config) {
		c.StorageFactory = factory
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
	})
	cs, err := kubernetes.NewForConfig(protobufClient(e.rest))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	core := cs.CoreV1()
	if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	node, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
		Labels: map[string]string{"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// A node's status as a kubelet reports it (a cached node is mostly
	// that).
	now := metav1.Now()
	resources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	node.Status = corev1.NodeStatus{Capacity: resources, Allocatable: resources, Phase: corev1.NodeRunning,
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "node-1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo:        corev1.NodeSystemInfo{MachineID: "m", SystemUUID: "u", BootID: "b", KernelVersion: "6.1", OSImage: "linux", ContainerRuntimeVersion: "sim://1", KubeletVersion: "v1.37.2", Architecture: "amd64", OperatingSystem: "linux"}}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		status := corev1.ConditionFalse
		if c == corev1.NodeReady {
			status = corev1.ConditionTrue
		}
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: c, Status: status,
			LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Kubelet" + string(c), Message: "kubelet reports " + string(c)})
	}
	if _, err := core.Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "app", NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	exp := int64(3607)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{issuer}, ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"},
	}}
	request := func() {
		if _, err := core.ServiceAccounts("default").CreateToken(ctx, "app", req, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	request() // warm the connection and the caches
	writeCtx, stopWriting := context.WithCancel(ctx)
	var writing sync.WaitGroup
	defer func() { stopWriting(); writing.Wait() }()
	for w := range writers {
		cm, err := core.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d", w)}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		writing.Add(1)
		go func() {
			defer writing.Done()
			for i := 0; writeCtx.Err() == nil; i++ {
				cm.Data = map[string]string{"i": fmt.Sprint(i)}
				updated, err := core.ConfigMaps("default").Update(writeCtx, cm, metav1.UpdateOptions{})
				if err != nil {
					return // stopped (or the benchmark fails on its own requests)
				}
				cm = updated
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU(b)
	for range b.N {
		request()
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
