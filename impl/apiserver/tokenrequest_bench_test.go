package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
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
func BenchmarkTokenRequest(b *testing.B) {
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
	if _, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
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
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU(b)
	for range b.N {
		request()
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
