package serviceaccount

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func namespace(name string, terminating bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if terminating {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	return ns
}

func TestDecideServiceAccounts(t *testing.T) {
	none := func(string) bool { return false }
	all := func(string) bool { return true }
	if got := DecideServiceAccounts(namespace("a", false), none); len(got) != 1 || got[0].Name != "default" || got[0].Namespace != "a" {
		t.Fatalf("missing default: %+v", got)
	}
	if got := DecideServiceAccounts(namespace("a", false), all); len(got) != 0 {
		t.Fatalf("existing default: %+v", got)
	}
	if got := DecideServiceAccounts(namespace("a", true), none); len(got) != 0 {
		t.Fatalf("terminating namespace: %+v", got)
	}
}

func TestDecideRootCA(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
	action, cm := DecideRootCA(namespace("a", false), nil, ca)
	if action != RootCACreate || cm.Name != RootCAConfigMapName || cm.Data[RootCAKey] != string(ca) || cm.Annotations[descriptionKey] == "" {
		t.Fatalf("create: %v %+v", action, cm)
	}
	if action, _ := DecideRootCA(namespace("a", false), cm, ca); action != RootCANothing {
		t.Fatalf("up to date: %v", action)
	}
	tampered := cm.DeepCopy()
	tampered.Data[RootCAKey] = "evil"
	tampered.Data["extra"] = "x"
	action, fixed := DecideRootCA(namespace("a", false), tampered, ca)
	if action != RootCAUpdate || fixed.Data[RootCAKey] != string(ca) || len(fixed.Data) != 1 {
		t.Fatalf("tampered: %v %+v", action, fixed)
	}
	if action, _ := DecideRootCA(namespace("a", true), nil, ca); action != RootCANothing {
		t.Fatalf("terminating: %v", action)
	}
}

// TestControllers runs both controllers against a fake API: defaults
// appear in active namespaces only, a deleted default account and a
// tampered CA ConfigMap are restored, and nothing is left running after.
func TestControllers(t *testing.T) {
	before := runtime.NumGoroutine()
	ca := []byte("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
	client := fake.NewClientset(namespace("a", false), namespace("gone", true))
	factory := informers.NewSharedInformerFactory(client, 0)
	sa := NewServiceAccounts(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
	pub, err := NewRootCAPublisher(client, ca, factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan struct{}, 2)
	go func() { _ = sa.Run(ctx, 1); done <- struct{}{} }()
	go func() { _ = pub.Run(ctx, 1); done <- struct{}{} }()
	defer func() {
		cancel()
		<-done
		<-done
		factory.Shutdown()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%d goroutines left, %d before", n, before)
		}
	}()

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	hasSA := func(ns string) bool {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}
	caData := func(ns string) string {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, RootCAConfigMapName, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data[RootCAKey]
	}
	eventually("default service account in a", func() bool { return hasSA("a") })
	eventually("root CA in a", func() bool { return caData("a") == string(ca) })

	// A namespace created later gets both.
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("b", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("default service account in b", func() bool { return hasSA("b") })
	eventually("root CA in b", func() bool { return caData("b") == string(ca) })

	// Deleted or tampered objects come back.
	if err := client.CoreV1().ServiceAccounts("a").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("default service account re-created", func() bool { return hasSA("a") })
	cm, err := client.CoreV1().ConfigMaps("a").Get(ctx, RootCAConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[RootCAKey] = "evil"
	if _, err := client.CoreV1().ConfigMaps("a").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("root CA restored", func() bool { return caData("a") == string(ca) })

	// The terminating namespace got nothing.
	if _, err := client.CoreV1().ServiceAccounts("gone").Get(ctx, "default", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service account in a terminating namespace: %v", err)
	}
	if caData("gone") != "" {
		t.Fatal("root CA in a terminating namespace")
	}
}

func TestRootCAPublisherNeedsCA(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := NewRootCAPublisher(client, nil, factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps()); err == nil {
		t.Fatal("a publisher without a CA must not start")
	}
}
