package etcd3_test

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// An --etcd-prefix is rooted and cleaned as kube-apiserver's etcd3 storage
// roots it (path.Join("/", prefix)): "foo", "foo/" and "//foo/" all keep
// objects under "/foo/", and "" is the default "/registry".
func TestPrefixNormalised(t *testing.T) {
	for i, tc := range []struct{ prefix, want string }{
		{"", "/registry"},
		{"/registry", "/registry"},
		{"pfx-rel", "/pfx-rel"},
		{"pfx-slash/", "/pfx-slash"},
		{"//pfx-dup//a/", "/pfx-dup/a"},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			res := storagetest.ConfigMaps()
			s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Prefix: tc.prefix, Resource: res})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.PathPrefix(); got != tc.want {
				t.Errorf("PathPrefix() = %q, want %q", got, tc.want)
			}
			ctx := context.Background()
			name := fmt.Sprintf("prefix-%d", i)
			key := res.ResourcePrefix + "/ns/" + name
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
			if err := s.Create(ctx, key, obj, &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if _, err := etcd.Client().Delete(ctx, tc.want+key); err != nil {
					t.Errorf("cleaning up: %v", err)
				}
			}()
			resp, err := etcd.Client().Get(ctx, tc.want+key, clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Count != 1 {
				t.Errorf("no etcd key %s after creating %s with prefix %q", tc.want+key, key, tc.prefix)
			}
		})
	}
}

// NormalizePrefix is the prefix a Store keeps its keys under.
func TestNormalizePrefix(t *testing.T) {
	for in, want := range map[string]string{"": "/registry", "/registry": "/registry", "/registry/": "/registry",
		"foo": "/foo", "foo/": "/foo", "//foo//bar/": "/foo/bar", "/": ""} {
		if got := storage.NormalizePrefix(in); got != want {
			t.Errorf("NormalizePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
