package etcd3_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// sizeCall is one call of a storage.ValueSizes.
type sizeCall struct{ added, removed int }

// A GetList or Watch whose context carries storage.WithValueSizes reports
// the length of every etcd value it reads: a list each listed value; a
// watch each event's new value and the one it replaces or deletes.
func TestValueSizes(t *testing.T) {
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := func(name string) string { return res.ResourcePrefix + "/ns/" + name }
	stored := func(name string) int { // the length of name's etcd value now
		t.Helper()
		resp, err := etcd.Client().Get(ctx, s.PathPrefix()+key(name))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s from etcd: %v", name, err)
		}
		return len(resp.Kvs[0].Value)
	}
	for _, name := range []string{"a", "b"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Data: map[string]string{"v": strings.Repeat("x", 100)}}
		if err := s.Create(ctx, key(name), obj, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	aSize, bSize := stored("a"), stored("b")

	var listed []sizeCall
	lctx := storage.WithValueSizes(ctx, func(added, removed int) { listed = append(listed, sizeCall{added, removed}) })
	list := &corev1.ConfigMapList{}
	if err := s.GetList(lctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, list); err != nil {
		t.Fatal(err)
	}
	if want := []sizeCall{{aSize, 0}, {bSize, 0}}; !slices.Equal(listed, want) {
		t.Errorf("the list reported %v, want %v", listed, want)
	}

	watched := make(chan sizeCall, 16)
	wctx := storage.WithValueSizes(ctx, func(added, removed int) { watched <- sizeCall{added, removed} })
	w, err := s.Watch(wctx, res.ResourcePrefix, storage.ListOptions{Recursive: true,
		ResourceVersion: list.ResourceVersion, Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	if err := s.Create(ctx, key("c"), obj, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	cSize := stored("c")
	err = s.GuaranteedUpdate(ctx, key("a"), &corev1.ConfigMap{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap).DeepCopy()
		cm.Data["v"] = strings.Repeat("x", 5000)
		return cm, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	aGrown := stored("a")
	if err := s.Delete(ctx, key("b"), &corev1.ConfigMap{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []sizeCall{{cSize, 0}, {aGrown, aSize}, {0, bSize}} {
		select {
		case got := <-watched:
			if got != want {
				t.Errorf("watch event %d reported %v, want %v", i, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch event %d reported nothing", i)
		}
	}
	if aGrown < aSize+4900 {
		t.Errorf("a grew from %d to %d bytes", aSize, aGrown)
	}
}
