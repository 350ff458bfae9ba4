package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// TestAPFEnsurerAutoUpdateAnnotation: as kube-apiserver's ensurer, a
// restarted server records on each bootstrap object whether it may keep
// it up to date: a suggested object without the autoupdate-spec
// annotation that someone changed (generation above 1) gets "false" and
// keeps its spec, one no one changed gets "true", a mandatory one gets
// "true"; an object it no longer suggests whose annotation is any true
// boolean ("True") is deleted.
func TestAPFEnsurerAutoUpdateAnnotation(t *testing.T) {
	e := newEnv(t, nil)
	fc := e.cs.FlowcontrolV1()
	pls, fss := fc.PriorityLevelConfigurations(), fc.FlowSchemas()
	wl, err := pls.Get(ctx(t), "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(wl.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	wl.Spec.Limited.NominalConcurrencyShares = ptr32(7)
	if _, err := pls.Update(ctx(t), wl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gd, err := pls.Get(ctx(t), "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(gd.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	if gd, err = pls.Update(ctx(t), gd, metav1.UpdateOptions{}); err != nil || gd.Generation != 1 {
		t.Fatalf("removing global-default's annotation: %v, generation %d, want 1", err, gd.Generation)
	}
	ca, err := fss.Get(ctx(t), "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "nonsense"
	if _, err := fss.Update(ctx(t), ca, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	retired := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "retired", Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "True"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}
	if _, err := pls.Create(ctx(t), retired, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	newEnvAt(t, e.prefix, nil)
	if p, err := pls.Get(ctx(t), "workload-low", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if p.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" || *p.Spec.Limited.NominalConcurrencyShares != 7 {
		t.Errorf("workload-low changed without the annotation: annotations %v shares %d, want autoupdate-spec false and shares 7",
			p.Annotations, *p.Spec.Limited.NominalConcurrencyShares)
	}
	if p, err := pls.Get(ctx(t), "global-default", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if p.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("global-default unchanged without the annotation: annotations %v, want autoupdate-spec true", p.Annotations)
	}
	if fs, err := fss.Get(ctx(t), "catch-all", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("mandatory catch-all with a malformed annotation: annotations %v, want autoupdate-spec true", fs.Annotations)
	}
	if _, err := pls.Get(ctx(t), "retired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("retired suggestion annotated True: %v, want deleted", err)
	}
}

// TestAPFEnsurerRunsPeriodically: after start the ensurer runs again
// every period (a minute in kube-apiserver; shortened here), so a
// suggested object changed while its annotation is "true" is put back,
// and an object annotated "true" that is not suggested is deleted,
// without a restart.
func TestAPFEnsurerRunsPeriodically(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(),
		Prefix: fmt.Sprintf("/apf-periodic-%d", time.Now().UnixNano())})
	defer factory.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), ServingCert: &serving,
		ClientCA: ca.Pool(), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.SetAPFEnsurePeriod(srv, 100*time.Millisecond)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	cfg := pki.RESTConfig("https://"+ln.Addr().String(), ca.CertPEM, admin)
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pls := cs.FlowcontrolV1().PriorityLevelConfigurations()
	eventually(t, "workload-low exists", func() bool {
		_, err := pls.Get(ctx(t), "workload-low", metav1.GetOptions{})
		return err == nil
	})
	wl, err := pls.Get(ctx(t), "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wl.Spec.Limited.NominalConcurrencyShares = ptr32(7)
	if _, err := pls.Update(ctx(t), wl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	retired := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "retired", Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}
	if _, err := pls.Create(ctx(t), retired, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "workload-low's shares put back to 100", func() bool {
		p, err := pls.Get(ctx(t), "workload-low", metav1.GetOptions{})
		return err == nil && *p.Spec.Limited.NominalConcurrencyShares == 100
	})
	eventually(t, "the retired suggestion deleted", func() bool {
		_, err := pls.Get(ctx(t), "retired", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// As kube-apiserver's, whose ensurer reads its informers' listers,
	// the periodic runs read the server's caches: no LIST or GET
	// requests of their own.
	reads := func() string {
		body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `group="flowcontrol.apiserver.k8s.io"`) &&
				(strings.Contains(line, `verb="LIST"`) || strings.Contains(line, `verb="GET"`)) {
				out = append(out, line)
			}
		}
		return strings.Join(out, "\n")
	}
	before := reads()
	time.Sleep(time.Second) // ten periods
	if after := reads(); after != before {
		t.Errorf("flowcontrol reads during ten periodic runs:\n%s\nbefore:\n%s\nwant none", after, before)
	}
}
