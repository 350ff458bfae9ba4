package etcd3_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// storedConfigMap decodes what etcd holds at key k the way a fresh read
// does: the object a create answers and a watch sends must equal it.
func storedConfigMap(t *testing.T, s *etcd3.Store, k string) *corev1.ConfigMap {
	t.Helper()
	resp, err := etcd.Client().Get(context.Background(), k)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s: %v (%d kvs)", k, err, len(resp.Kvs))
	}
	cm := &corev1.ConfigMap{}
	if _, _, err := s.Codec().Decode(resp.Kvs[0].Value, nil, cm); err != nil {
		t.Fatal(err)
	}
	cm.ResourceVersion = strconv.FormatInt(resp.Kvs[0].ModRevision, 10)
	return cm
}

// TestCreateAndWatchShareOneDecode: with a watch on the resource running,
// creates and the watch's ADDED events share decodes of what was written,
// and every object (a create's answer, a watch event's) is still its own
// and equal to a fresh decode of the stored bytes at the write's revision.
// watchedConfigMaps reads n events of type typ from w (any other type
// fails the test), keyed by key, within 30 s.
func watchedConfigMaps(t *testing.T, w watch.Interface, typ watch.EventType, n int, key func(*corev1.ConfigMap) string) map[string]*corev1.ConfigMap {
	t.Helper()
	events := map[string]*corev1.ConfigMap{}
	timeout := time.After(30 * time.Second)
	for len(events) < n {
		select {
		case e := <-w.ResultChan():
			if e.Type != typ {
				t.Fatalf("event %s %#v", e.Type, e.Object)
			}
			cm := e.Object.(*corev1.ConfigMap)
			events[key(cm)] = cm
		case <-timeout:
			t.Fatalf("%d of %d %s events", len(events), n, typ)
		}
	}
	return events
}

func TestCreateAndWatchShareOneDecode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		client     func() *clientv3.Client
		newWatcher func() clientv3.Watcher
	}{
		{"grpc", etcd.Client, nil},
		{"inprocess", etcd.InProcessClient, etcd.NewWatcher},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			res := storagetest.ConfigMaps()
			s, err := etcd3.New(etcd3.Config{Client: tc.client(), NewWatcher: tc.newWatcher, Resource: res})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			noInitial := false
			w, err := s.Watch(ctx, res.ResourcePrefix, storage.ListOptions{
				Recursive: true, SendInitialEvents: &noInitial, Predicate: storage.Everything()})
			if err != nil {
				t.Fatal(err)
			}
			const n, clients = 300, 8
			created := make([]*corev1.ConfigMap, n)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < n; i += clients {
						out := &corev1.ConfigMap{}
						in := &corev1.ConfigMap{
							ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns",
								Labels: map[string]string{"i": strconv.Itoa(i)}},
							Data: map[string]string{"payload": fmt.Sprintf("value %d", i)},
						}
						if err := s.Create(ctx, res.ResourcePrefix+"/ns/"+in.Name, in, out); err != nil {
							errs <- err
							return
						}
						created[i] = out
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			events := watchedConfigMaps(t, w, watch.Added, n, func(cm *corev1.ConfigMap) string { return cm.Name })
			// Each side's object is its own: changing a create's answer
			// (as a handler may) leaves the watch's object alone.
			for _, cm := range created {
				cm.Data["payload"] = "changed by the caller"
				cm.Labels["i"] = "changed"
			}
			for i, cm := range created {
				k := s.PathPrefix() + res.ResourcePrefix + "/ns/" + cm.Name
				want := storedConfigMap(t, s, k)
				got := events[cm.Name]
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("watch object of %s differs from a decode of the stored bytes:\n got %#v\nwant %#v", cm.Name, got, want)
				}
				want.Data["payload"] = "changed by the caller"
				want.Labels["i"] = "changed"
				if !reflect.DeepEqual(cm, want) {
					t.Fatalf("create %d answered %#v, want %#v", i, cm, want)
				}
			}
			if spared := etcd3.SparedDecodes(s); spared == 0 {
				t.Errorf("no decode spared in %d creates under a watch", n)
			} else {
				t.Logf("%d of %d decodes spared", spared, n)
			}
			w.Stop()
			if p := etcd3.PendingSharedDecodes(s); p != 0 {
				t.Errorf("%d writes still being handed over after the watch stopped", p)
			}
		})
	}
}

// TestCreateWithoutWatchRegistersNothing: no watch sees the key, so a
// create hands nothing over (nothing would take it); nor does a failed one.
func TestCreateWithoutWatchRegistersNothing(t *testing.T) {
	ctx := context.Background()
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A watch on another namespace does not see ns/a.
	noInitial := false
	w, err := s.Watch(ctx, res.ResourcePrefix+"/other", storage.ListOptions{
		Recursive: true, SendInitialEvents: &noInitial, Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	out := &corev1.ConfigMap{}
	if err := s.Create(ctx, res.ResourcePrefix+"/ns/a", in, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, res.ResourcePrefix+"/ns/a", in, &corev1.ConfigMap{}); !storage.IsExists(err) {
		t.Fatalf("second create: %v, want a key-exists error", err)
	}
	if p := etcd3.PendingSharedDecodes(s); p != 0 {
		t.Errorf("%d writes being handed over without a watch that sees them", p)
	}
	want := storedConfigMap(t, s, s.PathPrefix()+res.ResourcePrefix+"/ns/a")
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("create answered %#v, want %#v", out, want)
	}
}

// TestUpdateAndWatchShareOneDecode: the same for GuaranteedUpdate and the
// watch's MODIFIED events, with clients updating the same objects (so some
// updates retry on a conflict).
func TestUpdateAndWatchShareOneDecode(t *testing.T) {
	ctx := context.Background()
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{Client: etcd.InProcessClient(), NewWatcher: etcd.NewWatcher, Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const objects, clients, updates = 10, 6, 40
	for i := range objects {
		in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns"},
			Data: map[string]string{"n": "0"}}
		if err := s.Create(ctx, res.ResourcePrefix+"/ns/"+in.Name, in, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	noInitial := false
	w, err := s.Watch(ctx, res.ResourcePrefix, storage.ListOptions{
		Recursive: true, SendInitialEvents: &noInitial, Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	spared := etcd3.SparedDecodes(s)
	var mu sync.Mutex
	answers := map[string]*corev1.ConfigMap{} // by resourceVersion
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range updates {
				name := fmt.Sprintf("cm-%d", (c+u)%objects)
				out := &corev1.ConfigMap{}
				err := s.GuaranteedUpdate(ctx, res.ResourcePrefix+"/ns/"+name, out, false, nil,
					func(in runtime.Object) (runtime.Object, error) {
						cm := in.(*corev1.ConfigMap)
						cm.Data["n"] = fmt.Sprintf("%d-%d", c, u)
						return cm, nil
					})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				answers[out.ResourceVersion] = out
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	events := watchedConfigMaps(t, w, watch.Modified, clients*updates, func(cm *corev1.ConfigMap) string { return cm.ResourceVersion })
	for _, cm := range answers {
		cm.Data["n"] = "changed by the caller"
	}
	for rv, got := range events {
		// What etcd holds at that revision, decoded afresh.
		rev, _ := strconv.ParseInt(rv, 10, 64)
		resp, err := etcd.Client().Get(ctx, s.PathPrefix()+res.ResourcePrefix+"/ns/"+got.Name, clientv3.WithRev(rev))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s at %d: %v", got.Name, rev, err)
		}
		want := &corev1.ConfigMap{}
		if _, _, err := s.Codec().Decode(resp.Kvs[0].Value, nil, want); err != nil {
			t.Fatal(err)
		}
		want.ResourceVersion = rv
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("watch object at %s:\n got %#v\nwant %#v", rv, got, want)
		}
		answer := answers[rv]
		if answer == nil {
			t.Fatalf("no update answered with resourceVersion %s", rv)
		}
		want.Data["n"] = "changed by the caller"
		if !reflect.DeepEqual(answer, want) {
			t.Fatalf("update answered %#v, want %#v", answer, want)
		}
	}
	if etcd3.SparedDecodes(s) == spared {
		t.Errorf("no decode spared in %d updates under a watch", clients*updates)
	}
}
