package apiserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// failingServiceLists is a storage factory whose services store fails
// fail recursive lists after the first, as an etcd hiccup would fail the
// service repair's first passes.
type failingServiceLists struct {
	storage.Factory
	fail atomic.Int32
}

func (f *failingServiceLists) New(cfg storage.ResourceConfig) (storage.Interface, storage.DestroyFunc, error) {
	st, destroy, err := f.Factory.New(cfg)
	if err != nil || cfg.GroupResource.Group != "" || cfg.GroupResource.Resource != "services" {
		return st, destroy, err
	}
	return &failingListStore{Interface: st, fail: &f.fail}, destroy, nil
}

type failingListStore struct {
	storage.Interface
	fail  *atomic.Int32
	lists atomic.Int32
}

func (s *failingListStore) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	// The first list is the kubernetes service's allocation sync (Run
	// retries it); the repair's passes list next.
	if opts.Recursive && s.lists.Add(1) > 1 && s.fail.Add(-1) >= 0 {
		return errors.New("etcdserver: request timed out")
	}
	return s.Interface.GetList(ctx, key, opts, out)
}

// A service repair whose first passes fail is retried soon, not only at
// the next ServiceRepairInterval: its post-start hook's check (and so
// /readyz and /livez) passes once a pass succeeds. Before, the first two
// passes failing left the server unready for the whole interval (three
// minutes by default, longer than kubeproof up waits for /readyz).
func TestServiceRepairFirstPassRetriedUntilItSucceeds(t *testing.T) {
	var f *failingServiceLists
	e := newEnv(t, func(c *apiserver.Config) {
		f = &failingServiceLists{Factory: c.StorageFactory}
		f.fail.Store(3)
		c.StorageFactory = f
		c.ServiceRepairInterval = time.Hour
	})
	if left := f.fail.Load(); left >= 0 {
		t.Fatalf("%d injected list failures left: the repair did not list services as expected", left+1)
	}
	resp, err := e.client.Get(e.url + "/readyz/poststarthook/start-service-ip-repair-controllers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("repair hook check: %d %q", resp.StatusCode, body)
	}
}
