package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// klogCapture keeps what klog logs (client-go's default warning handler
// logs through it) while a test runs.
type klogCapture struct {
	mu    sync.Mutex
	lines []string
}

func captureKlog(t *testing.T) *klogCapture {
	c := &klogCapture{}
	klog.SetLogger(funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10}))
	t.Cleanup(klog.ClearLogger)
	return c
}

// containing are the captured lines with s.
func (c *klogCapture) containing(s string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// warningsSeen records the warnings a client is given.
type warningsSeen struct {
	mu  sync.Mutex
	got []string
}

func (w *warningsSeen) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, msg)
}

func (w *warningsSeen) seen(msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.got {
		if g == msg {
			return true
		}
	}
	return false
}

const endpointsDeprecated = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

// The controller manager of `kubeproof up` reads and writes v1 Endpoints
// (its endpoints controller creates a selector Service's and deletes it
// with the Service) without logging the deprecation warning the API
// server answers, as kube-controller-manager drops its clients' warnings;
// a user's client still gets the warning, and client-go's default handler
// (kubectl's) still shows it.
func TestControllerManagerLogsNoDeprecationWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	logged := captureKlog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	userCfg := rest.CopyConfig(c.AdminConfig)
	warned := &warningsSeen{}
	userCfg.WarningHandler = warned
	cs := kubernetes.NewForConfigOrDie(userCfg)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the endpoints controller's Endpoints", func() bool {
		_, err := cs.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil
	})
	if !warned.seen(endpointsDeprecated) {
		t.Errorf("a user's client was not warned: %q", warned.got)
	}
	if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the Endpoints deleted with the Service", func() bool {
		_, err := cs.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if got := logged.containing(endpointsDeprecated); len(got) > 0 {
		t.Errorf("the cluster's components logged the deprecation warning %d times: %q", len(got), got[0])
	}
	// A client with client-go's default handler, as kubectl's, logs it:
	// the capture sees what the components would have logged.
	plain := kubernetes.NewForConfigOrDie(rest.CopyConfig(c.AdminConfig))
	if _, err := plain.CoreV1().Endpoints("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := logged.containing(endpointsDeprecated); len(got) != 1 {
		t.Errorf("a default client's warning logged %d times, want 1", len(got))
	}
}

// quietEndpoints is the Endpoints client of c's administrator that logs no
// warning: tests reading Endpoints on purpose would otherwise print v1
// Endpoints' deprecation through klog at every read.
func quietEndpoints(t *testing.T, c *Cluster, ns string) typedcorev1.EndpointsInterface {
	t.Helper()
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoreV1().Endpoints(ns)
}
