package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// holdPriorityClassCreates is a validating plugin holding every create of
// a PriorityClass until release is closed, counting them in held.
type holdPriorityClassCreates struct {
	release <-chan struct{}
	held    *atomic.Int32
}

func (h holdPriorityClassCreates) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Resource != "priorityclasses" || a.Operation != admission.Create {
		return nil
	}
	h.held.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil
}

// rawServer is an API server started by hand (not waited for), for
// servers starting at the same time on one storage.
type rawServer struct {
	url  string
	done chan error
	stop context.CancelFunc
}

// startRaw runs a server on prefix with the extra validators; its Run's
// answer arrives on done once it returns.
func startRaw(t *testing.T, prefix string, validators ...admission.Validator) *rawServer {
	t.Helper()
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	t.Cleanup(factory.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), ServingCert: &serving,
		ClientCA: ca.Pool(), Listener: ln, AdmissionValidators: validators})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	r := &rawServer{url: "https://" + ln.Addr().String(), done: make(chan error, 1), stop: cancel}
	go func() { r.done <- srv.Run(c) }()
	return r
}

// waitRawReady waits until r answers /readyz 200 (asked with client),
// failing the test if its Run returns first or 20 s pass.
func waitRawReady(t *testing.T, client *http.Client, r *rawServer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			t.Fatalf("server %s stopped while starting: %v", r.url, err)
		default:
		}
		if resp, err := client.Get(r.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server %s never became ready", r.url)
}

// stopRaw stops r and checks its Run ended without error.
func stopRaw(t *testing.T, r *rawServer) {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("server %s Run: %v", r.url, err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("server %s did not shut down", r.url)
	}
}

// Two API servers on one storage start at the same time: both read a
// system class missing, the other server's create lands first, and this
// one's create is answered AlreadyExists, which kube-apiserver's hook
// counts as done. The server still starts and serves. The race is forced:
// the first server's create is held until the second has started.
func TestSystemPriorityClassesConcurrentStartAlreadyExists(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	prefix := fmt.Sprintf("/priority-race-%d", time.Now().UnixNano())
	release := make(chan struct{})
	var held atomic.Int32
	a := startRaw(t, prefix, holdPriorityClassCreates{release: release, held: &held})
	deadline := time.Now().Add(20 * time.Second)
	for held.Load() == 0 {
		select {
		case err := <-a.done:
			close(release)
			t.Fatalf("first server stopped before its create: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("first server never created a system class")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The second server creates both classes while the first one's create
	// waits.
	b := newEnvAt(t, prefix, nil)
	close(release)
	waitRawReady(t, b.client, a)
	list, err := b.cs.SchedulingV1().PriorityClasses().List(ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("classes after both starts: %v %v", list, err)
	}
	stopRaw(t, a)
}

// Three API servers on one storage started at once, unforced: every one
// of them starts (whatever their start-up writes race on) and the classes
// exist once.
func TestSystemPriorityClassesConcurrentStart(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	prefix := fmt.Sprintf("/priority-race3-%d", time.Now().UnixNano())
	var servers []*rawServer
	for range 3 {
		servers = append(servers, startRaw(t, prefix))
	}
	// A client with the admin certificate, from a server of its own on
	// another prefix.
	probe := newEnv(t, nil)
	for _, s := range servers {
		waitRawReady(t, probe.client, s)
	}
	for _, s := range servers {
		stopRaw(t, s)
	}
	// The classes, read through a fourth server on the same storage.
	e := newEnvAt(t, prefix, nil)
	list, err := e.cs.SchedulingV1().PriorityClasses().List(ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("classes after three concurrent starts: %v %v", list, err)
	}
}

// A restart on a storage holding the system classes creates nothing, so
// an admission check refusing every PriorityClass create (a webhook
// configured so since the first start) does not stop it, as
// kube-apiserver's hook only creates a class its read did not find.
func TestSystemPriorityClassesRestartWithRefusingAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, nil)
	var creates atomic.Int32
	refuse := refusePriorityClasses{err: apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), "x", errors.New("no")),
		fail: func() bool { creates.Add(1); return true }}
	s := startRaw(t, e.prefix, refuse)
	waitRawReady(t, e.client, s)
	stopRaw(t, s)
	if n := creates.Load(); n != 0 {
		t.Errorf("restart created %d classes, want none", n)
	}
}

// A create that never answers (here an admission check that holds it; a
// store or a webhook that hangs alike) fails the start once the hook's
// time is up, as kube-apiserver's loopback request ends at its request
// timeout and its hook then fails: Run returns, naming the hook.
func TestSystemPriorityClassesHungCreateStopsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(),
		Prefix: fmt.Sprintf("/priority-hung-%d", time.Now().UnixNano())})
	defer factory.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Int32
	never := make(chan struct{})
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), ServingCert: &serving,
		ClientCA: ca.Pool(), Listener: ln, AdmissionValidators: []admission.Validator{holdPriorityClassCreates{release: never, held: &held}}})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.SetBootstrapTimeout(srv, 2*time.Second)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(c) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case err := <-done:
		done <- err
		const want = "apiserver: post-start hook scheduling/bootstrap-system-priority-classes: gave up after 2s: "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Run: %v, want %s...", err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still starting 20 s after a 2 s hook timeout: the held create holds the start")
	}
	if held.Load() != 1 {
		t.Errorf("creates held %d, want 1", held.Load())
	}
}

// The system classes carry the managedFields kube-apiserver's field
// manager records for its loopback client's create: one entry, manager
// kube-apiserver, operation Update, owning the fields the create set
// (description, the defaulted preemptionPolicy, value).
func TestSystemPriorityClassesManagedFields(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, nil)
	for _, name := range []string{"system-node-critical", "system-cluster-critical"} {
		pc, err := e.cs.SchedulingV1().PriorityClasses().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mf := pc.ManagedFields
		if len(mf) != 1 || mf[0].Manager != "kube-apiserver" || mf[0].Operation != metav1.ManagedFieldsOperationUpdate ||
			mf[0].APIVersion != "scheduling.k8s.io/v1" || mf[0].FieldsType != "FieldsV1" || mf[0].Time == nil || mf[0].FieldsV1 == nil ||
			string(mf[0].FieldsV1.Raw) != `{"f:description":{},"f:preemptionPolicy":{},"f:value":{}}` {
			t.Errorf("%s managedFields: %+v", name, mf)
			if len(mf) > 0 && mf[0].FieldsV1 != nil {
				t.Logf("fieldsV1 %s", mf[0].FieldsV1.Raw)
			}
		}
	}
}
