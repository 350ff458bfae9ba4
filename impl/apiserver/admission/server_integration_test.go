package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// warningRecorder keeps the Warning headers client-go hands it.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// startServer runs an API server on embedded etcd with the default
// admission plugins plus NodeRestriction, built by admission.NewPlugins
// through the server's plugin hook.
func startServer(t testing.TB) (*kubernetes.Clientset, *warningRecorder) {
	cs, w, _ := startServerWith(t, true)
	return cs, w
}

// clientAs returns a client authenticated by a certificate for user in
// groups.
type clientAs func(user string, groups ...string) *kubernetes.Clientset

// startServerWith starts the server with the plugins, or with none but
// the server's built-in NamespaceLifecycle.
func startServerWith(t testing.TB, withPlugins bool) (*kubernetes.Clientset, *warningRecorder, clientAs) {
	t.Helper()
	if testing.Short() {
		t.Skip("embedded etcd and API server: skipped with -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	etcd, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("admission-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServing("apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	adminKP, err := ca.IssueClient("admin", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcd.Client(), Prefix: "/registry"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	names, err := admission.EnabledPlugins([]string{"NodeRestriction"}, []string{"NamespaceLifecycle"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := apiserver.Config{
		StorageFactory: factory, Resources: registry.All(),
		ServingCert: &serving, ClientCA: ca.Pool(), Listener: ln,
	}
	if withPlugins {
		cfg.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			m, v, s, err := admission.NewPlugins(names, stores)
			return apiserver.Plugins{Mutators: m, Validators: v, Starters: s}, err
		}
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	rc := pki.RESTConfig("https://"+ln.Addr().String(), ca.CertPEM, adminKP)
	rc.QPS, rc.Burst = -1, 0
	warnings := &warningRecorder{}
	rc.WarningHandler = warnings
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		factory.Close()
		etcd.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server never served the default namespace")
		}
		time.Sleep(20 * time.Millisecond)
	}
	as := func(user string, groups ...string) *kubernetes.Clientset {
		kp, err := ca.IssueClient(user, groups)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kubernetes.NewForConfig(pki.RESTConfig("https://"+ln.Addr().String(), ca.CertPEM, kp))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return cs, warnings, as
}

// result is a client call's answer, checked with must.
type result[T any] struct {
	obj T
	err error
}

func created[T any](obj T, err error) result[T] { return result[T]{obj, err} }

func (r result[T]) must(t *testing.T, what string) T {
	t.Helper()
	if r.err != nil {
		t.Fatalf("creating %s: %v", what, r.err)
	}
	return r.obj
}

// eventually retries check until it passes: plugins read watch-fed
// caches, which see new objects a little after they are written (as
// kube-apiserver's informers do).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

func wantStatus(t *testing.T, err error, code int32, contains string) {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Code != code || !strings.Contains(err.Error(), contains) {
		t.Fatalf("got %v, want %d containing %q", err, code, contains)
	}
}

// TestPluginsThroughTheAPIServer: every default plugin acting on real
// requests to a real API server.
func TestPluginsThroughTheAPIServer(t *testing.T) {
	cs, warnings := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}}}
	created(core.Namespaces().Create(ctx, ns, metav1.CreateOptions{})).must(t, "namespace")

	// ServiceAccount: no default account yet, so pods are refused.
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	_, err := core.Pods("team").Create(ctx, pod("early"), metav1.CreateOptions{})
	wantStatus(t, err, 403, `pods "early" is forbidden: error looking up service account team/default: serviceaccount "default" not found`)
	created(core.ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")

	// LimitRanger defaults, PriorityClass globalDefault.
	created(core.LimitRanges("team").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}}}, metav1.CreateOptions{})).must(t, "limit range")
	created(cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 100, GlobalDefault: true}, metav1.CreateOptions{})).must(t, "priority class")
	_, err = cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 1, GlobalDefault: true}, metav1.CreateOptions{})
	wantStatus(t, err, 403, "PriorityClass normal is already marked as default")

	eventually(t, "limit range and priority class seen by admission", func() error {
		p, err := core.Pods("team").Create(ctx, pod("probe"), dryRun)
		if err != nil {
			return err
		}
		if cpu := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; cpu.String() != "200m" || p.Spec.PriorityClassName != "normal" {
			return fmt.Errorf("not yet: limits %v, class %q", p.Spec.Containers[0].Resources.Limits, p.Spec.PriorityClassName)
		}
		return nil
	})
	warnings.take()
	p := created(core.Pods("team").Create(ctx, pod("web"), metav1.CreateOptions{})).must(t, "pod")
	if p.Spec.ServiceAccountName != "default" || len(p.Spec.Volumes) != 1 || !strings.HasPrefix(p.Spec.Volumes[0].Name, "kube-api-access-") ||
		p.Spec.Containers[0].VolumeMounts[0].MountPath != admission.ServiceAccountTokenMountPath {
		t.Fatalf("service account not applied: %+v", p.Spec)
	}
	if cpu := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; cpu.String() != "200m" {
		t.Fatalf("limit range default not applied: %+v", p.Spec.Containers[0].Resources)
	}
	// A read-modify-write of that pod is accepted: the defaults that apply
	// once LimitRanger added limits (requests from limits) are on the stored
	// object as read, as kube-apiserver's storage decoding defaults it.
	p.Labels = map[string]string{"updated": "yes"}
	p = created(core.Pods("team").Update(ctx, p, metav1.UpdateOptions{})).must(t, "pod label update")
	if p.Spec.Priority == nil || *p.Spec.Priority != 100 || p.Spec.PriorityClassName != "normal" {
		t.Fatalf("priority %v %q", p.Spec.Priority, p.Spec.PriorityClassName)
	}
	if len(p.Spec.Tolerations) != 2 || *p.Spec.Tolerations[0].TolerationSeconds != 300 {
		t.Fatalf("default tolerations %+v", p.Spec.Tolerations)
	}
	// PodSecurity: the warn level's violations reach the client as
	// Warning headers.
	if w := warnings.take(); len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), `would violate PodSecurity "restricted:latest"`) {
		t.Fatalf("warnings %q", w)
	}

	// PodSecurity enforce.
	priv := pod("priv")
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: func() *bool { b := true; return &b }()}
	_, err = core.Pods("team").Create(ctx, priv, metav1.CreateOptions{})
	wantStatus(t, err, 403, `pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`)

	// ResourceQuota: a quota of one pod, already used by the pod there
	// (the status a quota controller writes), then raised to two.
	created(core.ResourceQuotas("team").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, "team", "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	eventually(t, "quota seen by admission", func() error {
		_, err := core.Pods("team").Create(ctx, pod("probe"), dryRun)
		if !quotaRefused(err) {
			return fmt.Errorf("dry run not refused yet: %v", err)
		}
		return nil
	})
	q, err := core.ResourceQuotas("team").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("2")
	if _, err := core.ResourceQuotas("team").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeQuotaStatus(t, core, "team", "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	created(core.Pods("team").Create(ctx, pod("second"), metav1.CreateOptions{})).must(t, "second pod")
	_, err = core.Pods("team").Create(ctx, pod("third"), metav1.CreateOptions{})
	wantStatus(t, err, 403, `pods "third" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`)
	q, err = core.ResourceQuotas("team").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourcePods]; used.Value() != 2 {
		t.Fatalf("quota status %+v", q.Status)
	}
	if err := core.ResourceQuotas("team").Delete(ctx, "q", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Webhooks over HTTPS: one labels pods, one refuses pods labelled deny.
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		var obj corev1.Pod
		_ = json.Unmarshal(rev.Request.Object.Raw, &obj)
		switch r.URL.Path {
		case "/mutate":
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType, resp.Patch = &pt, []byte(`[{"op":"add","path":"/metadata/labels/hooked","value":"yes"}]`)
		case "/validate":
			if obj.Labels["deny"] == "yes" {
				resp.Allowed = false
				resp.Result = &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "labelled deny"}
			}
		}
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp})
	}))
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	defer hook.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	none := admissionregistrationv1.SideEffectClassNone
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	url := func(path string) *string { s := hook.URL + path; return &s }
	created(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "labeler"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "labeler.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/mutate"), CABundle: caBundle}, Rules: rules}},
	}, metav1.CreateOptions{})).must(t, "mutating webhook")
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "guard.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/validate"), CABundle: caBundle}, Rules: rules}},
	}, metav1.CreateOptions{})).must(t, "validating webhook")
	denied := pod("denied")
	denied.Labels = map[string]string{"deny": "yes"}
	eventually(t, "webhooks seen by admission", func() error {
		probe := pod("probe")
		probe.Labels = map[string]string{"app": "probe"}
		p, err := core.Pods("team").Create(ctx, probe, dryRun)
		if err != nil || p.Labels["hooked"] != "yes" {
			return fmt.Errorf("mutating webhook not called yet: %v", err)
		}
		if _, err := core.Pods("team").Create(ctx, denied, dryRun); err == nil {
			return fmt.Errorf("validating webhook not called yet")
		}
		return nil
	})
	hooked := created(core.Pods("team").Create(ctx, func() *corev1.Pod { p := pod("hooked"); p.Labels = map[string]string{"app": "x"}; return p }(), metav1.CreateOptions{})).must(t, "hooked pod")
	if hooked.Labels["hooked"] != "yes" || hooked.Labels["app"] != "x" {
		t.Fatalf("mutating webhook not applied: %v", hooked.Labels)
	}
	_, err = core.Pods("team").Create(ctx, denied, metav1.CreateOptions{})
	wantStatus(t, err, 403, `admission webhook "guard.example.com" denied the request: labelled deny`)
	if _, err := core.Pods("team").Get(ctx, "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused pod was stored: %v", err)
	}
}

// TestNodeRestrictionThroughTheAPIServer: a kubelet's certificate
// (system:node:a in system:nodes) may change its own Node only.
func TestNodeRestrictionThroughTheAPIServer(t *testing.T) {
	admin, _, as := startServerWith(t, true)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		created(admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})).must(t, "node "+name)
	}
	created(admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	kubelet := as("system:node:a", "system:nodes")
	label := func(name, key string) error {
		n, err := kubelet.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels = map[string]string{key: "x"}
		_, err = kubelet.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}
	if err := label("a", "example.com/rack"); err != nil {
		t.Fatalf("own node: %v", err)
	}
	wantStatus(t, label("b", "example.com/rack"), 403, `nodes "b" is forbidden: node "a" is not allowed to modify node "b"`)
	wantStatus(t, label("a", "node-restriction.kubernetes.io/pool"), 403, `nodes "a" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool`)
	_, err := kubelet.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"},
		Spec: corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	wantStatus(t, err, 403, `pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods`)
	// A kubelet deletes the pods bound to its node only: kube-apiserver's
	// DELETE runs the mutating phase, where NodeRestriction refuses.
	for _, node := range []string{"a", "b"} {
		created(admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})).must(t, "pod on "+node)
	}
	// nor evicts others (pods/eviction is admitted as a create).
	err = kubelet.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "on-b", Namespace: "default"}})
	wantStatus(t, err, 403, `pods "on-b" is forbidden: node a can only evict pods with spec.nodeName set to itself`)
	zero := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	wantStatus(t, kubelet.CoreV1().Pods("default").Delete(ctx, "on-b", zero), 403,
		`pods "on-b" is forbidden: node "a" can only delete pods with spec.nodeName set to itself`)
	if err := kubelet.CoreV1().Pods("default").Delete(ctx, "on-a", zero); err != nil {
		t.Fatalf("deleting a pod bound to its own node: %v", err)
	}
}

// TestQuotaUnderConcurrentCreatesThroughTheAPIServer: 64 clients race to
// create pods against a quota of 10 pods; exactly 10 exist afterwards.
func TestQuotaUnderConcurrentCreatesThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "race"}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts("race").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	created(core.ResourceQuotas("race").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, "race", "pods", nil)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	eventually(t, "quota seen by admission", func() error {
		if _, err := core.Pods("race").Create(ctx, pod("probe"), dryRun); !quotaRefused(err) {
			return fmt.Errorf("not refused yet: %v", err)
		}
		return nil
	})
	q, err := core.ResourceQuotas("race").Get(ctx, "pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("10")
	if _, err := core.ResourceQuotas("race").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeQuotaStatus(t, core, "race", "pods", nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 64 {
		wg.Go(func() {
			_, err := core.Pods("race").Create(ctx, pod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: pods"):
				refused++
			default:
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	pods, err := core.Pods("race").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if admitted != 10 || refused != 54 || len(pods.Items) != 10 {
		t.Fatalf("admitted %d, refused %d, stored %d; want 10, 54, 10", admitted, refused, len(pods.Items))
	}
	got, err := core.ResourceQuotas("race").Get(ctx, "pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 10 {
		t.Fatalf("status.used.pods %s", used.String())
	}
}
