package bootstrappolicy_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
)

var etcd *objcachetest.Etcd

func TestMain(m *testing.M) {
	var err error
	etcd, err = objcachetest.StartEtcd(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	etcd.Close()
	os.Exit(code)
}

func newStores(t *testing.T) *objcachetest.Stores {
	t.Helper()
	s, err := etcd.NewStores(objcachetest.RBACAndPods())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// checkNoLeak fails t if goroutines running the authorizers' code are
// still alive (polling briefly) after they were stopped.
func checkNoLeak(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "kubeproof/impl/apiserver/auth/rbac") || strings.Contains(g, "kubeproof/impl/apiserver/auth/node") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still run authorizer code after shutdown:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
