package admission_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
)

// TestServiceAccountControllersFeedTheServiceAccountPlugin: with the
// service account controller and root CA publisher running, a pod created
// right after its namespace is admitted (the plugin waits for the default
// service account) and the CA ConfigMap its projected volume reads exists.
func TestServiceAccountControllersFeedTheServiceAccountPlugin(t *testing.T) {
	cs, _, _ := startServerWith(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	caPEM := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	factory := informers.NewSharedInformerFactory(cs, 0)
	rootCA := serviceaccount.RootCAConfigMapInformer(cs)
	sa := serviceaccount.NewServiceAccounts(cs, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
	pub, err := serviceaccount.NewRootCAPublisher(cs, caPEM, factory.Core().V1().Namespaces(), rootCA.Core().V1().ConfigMaps())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	rootCA.Start(ctx.Done())
	done := make(chan struct{}, 2)
	go func() { _ = sa.Run(ctx, 2); done <- struct{}{} }()
	go func() { _ = pub.Run(ctx, 2); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		factory.Shutdown()
		rootCA.Shutdown()
	})

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "first"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	p, err := cs.CoreV1().Pods("fresh").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod right after its namespace: %v", err)
	}
	if p.Spec.ServiceAccountName != "default" || len(p.Spec.Volumes) != 1 {
		t.Fatalf("pod spec %+v", p.Spec)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cm, err := cs.CoreV1().ConfigMaps("fresh").Get(ctx, serviceaccount.RootCAConfigMapName, metav1.GetOptions{})
		if err == nil && cm.Data[serviceaccount.RootCAKey] == string(caPEM) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-root-ca.crt never published: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The system namespaces get theirs too.
	for {
		_, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-system default service account: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
