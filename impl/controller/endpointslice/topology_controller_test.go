package endpointslice

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// TestControllerTopologyHints: a topology-mode Auto service over nodes in
// three zones gets same-zone hints on its slice (and a Normal event); when
// zone c's node is not Ready its endpoints serve zones a and b, and serve
// c again once it is back (node changes alone resync the service); when
// zone c loses its endpoints the hints go, with a warning saying why.
func TestControllerTopologyHints(t *testing.T) {
	svc, pods, _ := zonal(corev1.AnnotationTopologyMode, "a1", "a2", "b1", "b2", "c1", "c2")
	objects := []runtime.Object{svc, node("node-a", "a", "4"), node("node-b", "b", "4"), node("node-c", "c", "4")}
	for _, p := range pods {
		objects = append(objects, p)
	}
	client := fake.NewClientset(objects...)
	// The fake names generateName objects and counts generations as the
	// API server does.
	created := 0
	client.PrependReactor("create", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		s := action.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		created++
		s.Name, s.Generation = fmt.Sprintf("%s%d", s.GenerateName, created), 1
		return false, nil, nil
	})
	client.PrependReactor("update", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		action.(k8stesting.UpdateAction).GetObject().(*discoveryv1.EndpointSlice).Generation++
		return false, nil, nil
	})
	recorder := record.NewFakeRecorder(100)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices(), WithRecorder(recorder))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	factory.Start(ctx.Done())
	go func() { done <- c.Run(ctx, 1) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		factory.Shutdown()
	}()

	waitFor := func(what, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		var got string
		for time.Now().Before(deadline) {
			l, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ss := make([]*discoveryv1.EndpointSlice, len(l.Items))
			for i := range l.Items {
				ss[i] = &l.Items[i]
			}
			if got = zoneHints(ss); got == want {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s: hints %s, want %s", what, got, want)
	}
	expectEvent := func(want string) {
		t.Helper()
		select {
		case e := <-recorder.Events:
			if !strings.HasPrefix(e, want) {
				t.Errorf("event %q, want %q...", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event, want %q", want)
		}
	}
	setNodeReady := func(status corev1.ConditionStatus) {
		n, err := client.CoreV1().Nodes().Get(ctx, "node-c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions[0].Status = status
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitFor("three zones", "a1:a a2:a b1:b b2:b c1:c c2:c")
	expectEvent("Normal TopologyAwareHintsEnabled")

	setNodeReady(corev1.ConditionFalse)
	waitFor("zone c's node not ready", "a1:a a2:a b1:b b2:b c1:a c2:b")
	setNodeReady(corev1.ConditionTrue)
	waitFor("zone c's node ready again", "a1:a a2:a b1:b b2:b c1:c c2:c")

	for _, name := range []string{"c1", "c2"} {
		if err := client.CoreV1().Pods("ns").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("zone c without endpoints", "a1:- a2:- b1:- b2:-")
	expectEvent("Warning TopologyAwareHintsDisabled Topology aware hints not given: every zone's minimum share")
}
