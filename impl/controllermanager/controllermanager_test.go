package controllermanager

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metafake "k8s.io/client-go/metadata/fake"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fakeClients(t *testing.T, kube *fake.Clientset) Clients {
	ms := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(ms); err != nil {
		t.Fatal(err)
	}
	ds := runtime.NewScheme()
	return Clients{Kube: kube, Metadata: metafake.NewSimpleMetadataClient(ms), Dynamic: dynamicfake.NewSimpleDynamicClient(ds), Discovery: kube.Discovery()}
}

func deploymentObj() *appsv1.Deployment {
	r := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

func TestRunWithoutLeaderElection(t *testing.T) {
	before := goruntime.NumGoroutine()
	kube := fake.NewClientset(deploymentObj())
	cfg := DefaultConfig()
	cfg.LeaderElect = false
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunWithClients(ctx, fakeClients(t, kube), cfg) }()
	waitFor(t, "the deployment's replicaset", func() bool {
		l, _ := kube.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		return len(l.Items) == 1
	})
	waitFor(t, "events recorded through the API", func() bool {
		l, _ := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		return len(l.Items) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines to exit", func() bool { return goruntime.NumGoroutine() <= before+3 })
}

func TestLeaderElectionOneActsAtATime(t *testing.T) {
	kube := fake.NewClientset()
	mk := func(id string) Config {
		cfg := DefaultConfig()
		cfg.Controllers = []string{ReplicaSet}
		cfg.Election.Identity = id
		cfg.Election.LeaseDuration = 2 * time.Second
		cfg.Election.RenewDeadline = 1500 * time.Millisecond
		cfg.Election.RetryPeriod = 100 * time.Millisecond
		return cfg
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	var wg sync.WaitGroup
	errA, errB := make(chan error, 1), make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); errA <- RunWithClients(ctxA, fakeClients(t, kube), mk("a")) }()
	waitFor(t, "a to lead", func() bool { return holder() == "a" })
	wg.Add(1)
	go func() { defer wg.Done(); errB <- RunWithClients(ctxB, fakeClients(t, kube), mk("b")) }()
	// b keeps retrying while a renews; a stays the holder.
	time.Sleep(300 * time.Millisecond)
	if h := holder(); h != "a" {
		t.Fatalf("holder %q while a is alive", h)
	}
	cancelA() // a releases the lease on shutdown
	if err := <-errA; err != nil {
		t.Fatalf("a: %v", err)
	}
	waitFor(t, "b to take over", func() bool { return holder() == "b" })
	cancelB()
	if err := <-errB; err != nil && !errors.Is(err, ErrLostLeadership) {
		t.Fatalf("b: %v", err)
	}
	wg.Wait()
}

func TestEnabled(t *testing.T) {
	c := Config{Controllers: []string{"*", "-garbagecollector"}}
	if !c.Enabled(Deployment) || c.Enabled(GarbageCollector) {
		t.Fatal("'*' with '-garbagecollector'")
	}
	c = Config{Controllers: []string{ReplicaSet}}
	if !c.Enabled(ReplicaSet) || c.Enabled(Deployment) {
		t.Fatal("explicit list")
	}
}

// TestEnabledFirstEntryDecides: as kube-controller-manager's
// IsControllerEnabled, the first entry naming a controller decides
// ("deployment,-deployment" runs it), "*" what no entry names.
func TestEnabledFirstEntryDecides(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		want        bool
	}{
		{[]string{Deployment, "-" + Deployment}, true},
		{[]string{"-" + Deployment, Deployment}, false},
		{[]string{"*", "-" + Deployment}, false},
		{[]string{"-" + Deployment, "*"}, false},
		{[]string{"*", Deployment, "-" + Deployment}, true},
		{[]string{ReplicaSet}, false},
		{nil, false},
	} {
		if got := (Config{Controllers: tc.controllers}).Enabled(Deployment); got != tc.want {
			t.Errorf("%q: Enabled(deployment) = %v, want %v", tc.controllers, got, tc.want)
		}
	}
}
