package apiserver_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// withPriority runs the Priority admission plugin, with its cache.
func withPriority(c *apiserver.Config) {
	c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
		m, v, s, err := admission.NewPlugins([]string{"Priority"}, stores)
		return apiserver.Plugins{Mutators: m, Validators: v, Starters: s}, err
	}
}

// A fresh server has stored kube-apiserver 1.37's two system
// PriorityClasses before it is ready (its
// scheduling/bootstrap-system-priority-classes post-start hook): value,
// description, the defaulted preemptionPolicy, not the global default, no
// labels, generation 1.
func TestSystemPriorityClassesAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, withPriority)
	list, err := e.cs.SchedulingV1().PriorityClasses().List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		value int32
		desc  string
	}{
		"system-node-critical":    {2000001000, "Used for system critical pods that must not be moved from their current node."},
		"system-cluster-critical": {2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
	if len(list.Items) != len(want) {
		t.Fatalf("priority classes of a fresh server: %d, want 2: %+v", len(list.Items), list.Items)
	}
	for _, pc := range list.Items {
		w, ok := want[pc.Name]
		if !ok {
			t.Errorf("unexpected class %q", pc.Name)
			continue
		}
		if pc.Value != w.value || pc.Description != w.desc || pc.GlobalDefault || pc.PreemptionPolicy == nil ||
			*pc.PreemptionPolicy != corev1.PreemptLowerPriority || len(pc.Labels) != 0 || len(pc.Annotations) != 0 ||
			pc.Generation != 1 || pc.UID == "" || pc.CreationTimestamp.IsZero() {
			t.Errorf("%s: %+v", pc.Name, pc)
		}
	}
	r := e.do("GET", "/readyz/poststarthook/scheduling/bootstrap-system-priority-classes", nil)
	if r.code != http.StatusOK || string(r.body) != "ok" {
		t.Errorf("hook check: %d %q", r.code, r.body)
	}
	// The Priority plugin reads them from the store only (no built-in
	// values): a pod naming one is admitted from the first request on.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: "kube-system"},
		Spec: corev1.PodSpec{PriorityClassName: "system-node-critical", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	got, err := e.cs.CoreV1().Pods("kube-system").Create(ctx(t), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a system-node-critical pod: %v", err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 2000001000 || got.Spec.PreemptionPolicy == nil ||
		*got.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("pod priority %v, policy %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
}

// A second start on the same storage neither fails nor duplicates the
// classes, and leaves them as they are (kube-apiserver's hook creates a
// missing class only): a description changed by an update stays.
func TestSystemPriorityClassesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, withPriority)
	pcs := e.cs.SchedulingV1().PriorityClasses()
	pc, err := pcs.Get(ctx(t), "system-cluster-critical", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pc.Description = "mine"
	if pc, err = pcs.Update(ctx(t), pc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating a system class's description: %v", err)
	}
	e2 := newEnvAt(t, e.prefix, withPriority)
	list, err := e2.cs.SchedulingV1().PriorityClasses().List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("classes after a restart: %+v", list.Items)
	}
	for _, it := range list.Items {
		if it.Name == pc.Name && (it.Description != "mine" || it.ResourceVersion != pc.ResourceVersion) {
			t.Errorf("restart rewrote %s: %+v", it.Name, it)
		}
	}
}

// A DELETE of a system class is refused with kube-apiserver's 403, a dry
// run too; a user class deletes. As upstream, whose check is in its
// storage's Delete only, a deletecollection deletes the system classes.
func TestSystemPriorityClassDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, nil)
	for _, path := range []string{"/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-cluster-critical?dryRun=All"} {
		r := e.do("DELETE", path, nil)
		st := expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, "")
		name := "system-node-critical"
		if st.Details != nil && st.Details.Name == "system-cluster-critical" {
			name = "system-cluster-critical"
		}
		want := `priorityclasses.scheduling.k8s.io "` + name + `" is forbidden: this is a system priority class and cannot be deleted`
		if st.Message != want || st.Details == nil || st.Details.Group != "scheduling.k8s.io" || st.Details.Kind != "priorityclasses" {
			t.Errorf("DELETE %s: %+v, want message %q", path, st, want)
		}
	}
	pcs := e.cs.SchedulingV1().PriorityClasses()
	if _, err := pcs.Get(ctx(t), "system-node-critical", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the refused delete: %v", err)
	}
	if _, err := pcs.Create(ctx(t), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Value: 5}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pcs.Delete(ctx(t), "mine", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a user class: %v", err)
	}
	if err := pcs.DeleteCollection(ctx(t), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
	if _, err := pcs.Get(ctx(t), "system-node-critical", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after deletecollection: %v, want NotFound", err)
	}
}

// refusePriorityClasses is a validating plugin answering the creates of
// PriorityClasses with err while fail says so.
type refusePriorityClasses struct {
	err  error
	fail func() bool
}

func (r refusePriorityClasses) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource == "priorityclasses" && a.Operation == admission.Create && r.fail() {
		return r.err
	}
	return nil
}

// The hook retries a create the server answers 503 (upstream's hook
// retries ServiceUnavailable) and is done once it succeeds.
func TestSystemPriorityClassesRetryUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	var refused atomic.Int32
	e := newEnv(t, func(c *apiserver.Config) {
		c.AdmissionValidators = append(c.AdmissionValidators, refusePriorityClasses{
			err:  apierrors.NewServiceUnavailable("storage is being migrated"),
			fail: func() bool { return refused.Add(1) == 1 },
		})
	})
	if refused.Load() < 2 {
		t.Fatalf("creates seen %d, want the refused one and its retry", refused.Load())
	}
	list, err := e.cs.SchedulingV1().PriorityClasses().List(ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("classes after a retried create: %v %v", list, err)
	}
}

// A create refused otherwise fails the hook, and the start: kube-apiserver
// stops when its hook fails.
func TestSystemPriorityClassesRefusedStopsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: "/priority-refused"})
	defer factory.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), ServingCert: &serving,
		ClientCA: ca.Pool(), Listener: ln,
		AdmissionValidators: []admission.Validator{refusePriorityClasses{err: apierrors.NewForbidden(
			schedulingv1.Resource("priorityclasses"), "system-node-critical", errors.New("no")), fail: func() bool { return true }}}})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = srv.Run(c)
	want := `apiserver: post-start hook scheduling/bootstrap-system-priority-classes: creating priorityclasses "system-node-critical": priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: no`
	if err == nil || err.Error() != want {
		t.Fatalf("Run: %v, want %s", err, want)
	}
}

// levelRecorder keeps the level and message of every record logged at
// Debug or above.
type levelRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *levelRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *levelRecorder) WithGroup(string) slog.Handler      { return r }

// hookRecords are the records naming the system PriorityClasses hook.
func (r *levelRecorder) hookRecords() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.records {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "hook" && a.Value.String() == "scheduling/bootstrap-system-priority-classes" {
				out = append(out, rec)
				return false
			}
			return true
		})
	}
	return out
}

// The hook's normal start is quiet: its creates and its completion are
// logged at Debug only (the project's logs say nothing by default); a
// create to retry is still a warning.
func TestSystemPriorityClassesLogQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	var quiet levelRecorder
	newEnv(t, func(c *apiserver.Config) { c.Logger = slog.New(&quiet) })
	recs := quiet.hookRecords()
	if len(recs) != 3 {
		t.Errorf("hook records %d, want 3 (two creates, done)", len(recs))
	}
	for _, rec := range recs {
		if rec.Level > slog.LevelDebug {
			t.Errorf("%v %q: want Debug", rec.Level, rec.Message)
		}
	}

	var retried levelRecorder
	var refused atomic.Int32
	newEnv(t, func(c *apiserver.Config) {
		c.Logger = slog.New(&retried)
		c.AdmissionValidators = append(c.AdmissionValidators, refusePriorityClasses{
			err:  apierrors.NewServiceUnavailable("storage is being migrated"),
			fail: func() bool { return refused.Add(1) == 1 },
		})
	})
	warned := false
	for _, rec := range retried.hookRecords() {
		warned = warned || rec.Level == slog.LevelWarn
	}
	if !warned {
		t.Errorf("a create answered 503 and retried: no warning")
	}
}
