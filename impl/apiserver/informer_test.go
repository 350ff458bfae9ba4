package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// serveAt runs a server on addr over the given key prefix until the
// returned stop is called.
func serveAt(t *testing.T, addr, prefix string) (stop func()) {
	t.Helper()
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(),
		ServingCert: &serving, ClientCA: ca.Pool(), Listener: ln, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(c) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Close()
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestInformerSurvivesWatchBreakAndCompaction: a shared informer syncs,
// resumes after its watch is broken by a server restart, and relists
// after a 410 when the revision it watched from was compacted.
func TestInformerSurvivesWatchBreakAndCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for client-go's reconnect backoff")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	prefix := fmt.Sprintf("/informer%d", time.Now().UnixNano())
	stop := serveAt(t, addr, prefix)
	defer func() { stop() }()

	cfg := pki.RESTConfig("https://"+addr, ca.CertPEM, admin)
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	eventually(t, "server ready", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(c, "default", metav1.GetOptions{})
		return err == nil
	})
	if _, err := cs.CoreV1().Pods("default").Create(c, pod("x1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	updates := make(chan string, 1000)
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { updates <- obj.(*corev1.Pod).Labels["step"] },
	})
	if err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithCancel(context.Background())
	factory.Start(ictx.Done())
	defer func() {
		icancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(c.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	setStep := func(step string) *corev1.Pod {
		p, err := cs.CoreV1().Pods("default").Patch(c, "x1", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"step":"`+step+`"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lister := factory.Core().V1().Pods().Lister()
	hasStep := func(step string) func() bool {
		return func() bool {
			p, err := lister.Pods("default").Get("x1")
			return err == nil && p.Labels["step"] == step
		}
	}
	// every update is observed, in order.
	for i := range 5 {
		setStep(fmt.Sprint(i))
	}
	for i := range 5 {
		select {
		case got := <-updates:
			if got != fmt.Sprint(i) {
				t.Fatalf("update %d: saw step %q", i, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("update %d not observed", i)
		}
	}

	// break the watch: restart the server on the same address and store.
	stop()
	stop = serveAt(t, addr, prefix)
	eventually(t, "restarted server", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(c, "default", metav1.GetOptions{})
		return err == nil
	})
	setStep("after-restart")
	eventually(t, "update after watch break", hasStep("after-restart"))

	// break it again and compact etcd past what the informer saw: the
	// re-watch gets 410 Expired and the informer relists.
	stop()
	stop = serveAt(t, addr, prefix)
	eventually(t, "restarted server", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(c, "default", metav1.GetOptions{})
		return err == nil
	})
	last := setStep("after-compaction")
	if _, err := cs.CoreV1().Pods("default").Create(c, pod("x2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev := int64(0)
	fmt.Sscan(last.ResourceVersion, &rev)
	if _, err := etcdServer.Client().Compact(c, rev+1); err != nil {
		t.Fatal(err)
	}
	// a watch from the compacted revision is 410 Expired (a Status or an
	// ERROR event carrying one), which is what makes the informer relist.
	w, err := cs.CoreV1().Pods("default").Watch(c, metav1.ListOptions{ResourceVersion: "2"})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from compacted rv: %v", err)
		}
	} else {
		ev := <-w.ResultChan()
		w.Stop()
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != 410 {
			t.Fatalf("watch from compacted rv: %s %+v", ev.Type, ev.Object)
		}
	}
	eventually(t, "state after compaction", func() bool {
		_, err := lister.Pods("default").Get("x2")
		return err == nil && hasStep("after-compaction")()
	})
}
