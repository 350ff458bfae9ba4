package podgc

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// started is a collector over a fake clientset holding objs, with synced
// informers and a fake clock.
func started(t *testing.T, cfg Config, objs ...k8sruntime.Object) (*Controller, *fake.Clientset, *clocktesting.FakeClock, context.Context) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clk, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	return c, client, clk, ctx
}

func TestCollectOrphanMarksFailedThenForceDeletes(t *testing.T) {
	c, client, clk, ctx := started(t, Config{}, pod("orphan", "gone", corev1.PodRunning, 0), node("n1", true), pod("fine", "n1", corev1.PodRunning, 0))
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{}); err != nil {
		t.Fatalf("orphan deleted inside its quarantine: %v", err)
	}
	clk.Step(DefaultQuarantine)
	client.ClearActions()
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	var sawGet, sawPatch, sawDelete bool
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get":
			if a := a.(k8stesting.GetAction); a.GetResource().Resource == "nodes" && a.GetName() == "gone" {
				sawGet = true
			}
		case "patch":
			if a := a.(k8stesting.PatchAction); a.GetSubresource() != "status" || a.GetName() != "orphan" || sawDelete {
				t.Fatalf("unexpected patch %v", a)
			}
			sawPatch = true
		case "delete":
			a := a.(k8stesting.DeleteAction)
			if !sawPatch || a.GetName() != "orphan" {
				t.Fatalf("delete %s before the status patch", a.GetName())
			}
			opts := a.GetDeleteOptions()
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != "uid-orphan" {
				t.Fatalf("delete options %+v, want grace 0 and the UID precondition", opts)
			}
			sawDelete = true
		}
	}
	if !sawGet || !sawPatch || !sawDelete {
		t.Fatalf("get node %v, patch %v, delete %v: want all", sawGet, sawPatch, sawDelete)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("orphan still there: %v", err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "fine", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod on a live node deleted: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Metrics())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got = append(got, fmt.Sprintf("%s{%s} %v", f.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue()))
		}
	}
	if want := "pod_gc_collector_force_delete_pods_total{namespace=ns,reason=orphaned} 1"; strings.Join(got, ";") != want {
		t.Fatalf("metrics %v, want %s", got, want)
	}
}

// The patch the collector sends turns a running orphan Failed with the
// DisruptionTarget condition, keeping its other conditions.
func TestFailedStatusPatchAppliesAsStrategicMerge(t *testing.T) {
	p := pod("orphan", "gone", corev1.PodRunning, 0)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	client := fake.NewClientset(p)
	patch, err := failedStatusPatch(p, DisruptionTargetCondition(t0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Pods("ns").Patch(ctx, "orphan", "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodFailed || len(got.Status.Conditions) != 2 {
		t.Fatalf("status %+v", got.Status)
	}
	var c corev1.PodCondition
	for _, cond := range got.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget {
			c = cond
		}
	}
	if c.Type != corev1.DisruptionTarget || c.Reason != "DeletionByPodGC" || c.Status != corev1.ConditionTrue {
		t.Fatalf("condition %+v", c)
	}
}

// A node the informer has not seen yet but the API server has is not
// treated as gone: its pods stay.
func TestCollectKeepsPodsOfNodeFoundByGet(t *testing.T) {
	c, client, clk, ctx := started(t, Config{}, pod("p", "late", corev1.PodRunning, 0))
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	// Created behind the informer's back: only the quorum GET sees it.
	client.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, node("late", true), nil
	})
	clk.Step(DefaultQuarantine)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod of an existing node deleted: %v", err)
	}
}

func TestCollectTerminatedOverThreshold(t *testing.T) {
	c, client, _, ctx := started(t, Config{TerminatedPodThreshold: 1}, node("n1", true),
		pod("old", "n1", corev1.PodSucceeded, 0), pod("new", "n1", corev1.PodFailed, time.Minute), pod("run", "n1", corev1.PodRunning, 0))
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"old": false, "new": true, "run": true} {
		_, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if exists := err == nil; exists != want {
			t.Errorf("pod %s exists=%v, want %v (%v)", name, exists, want, err)
		}
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			t.Fatalf("terminal pod patched: %v", a)
		}
	}
}

// Run stops when its context ends and leaves no goroutine behind.
func TestRunStops(t *testing.T) {
	before := runtime.NumGoroutine()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clocktesting.NewFakeClock(t0), Config{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	factory.Shutdown()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Run stopped, %d before", n, before)
	}
}
