package controllermanager_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// rbacClients is rbacServer's admin clientset, the controller manager's
// (system:kube-controller-manager) and its rest.Config.
func rbacClients(t *testing.T) (admin, controllerManager *kubernetes.Clientset, cmCfg *rest.Config) {
	t.Helper()
	adminCfg, cmCfg := rbacServer(t)
	// Neither logs the API server's warnings (v1 Endpoints' deprecation):
	// the controller manager's as kube-controller-manager's, the admin's
	// as the tests read Endpoints on purpose.
	controllermanager.QuietWarnings(cmCfg)
	adminCfg.WarningHandler = rest.NoWarnings{}
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	controllerManager, err = kubernetes.NewForConfig(cmCfg)
	if err != nil {
		t.Fatal(err)
	}
	return admin, controllerManager, cmCfg
}

// rbacServer starts kubeproof's API server on embedded etcd with
// --authorization-mode=RBAC over the default bootstrap policy and service
// account tokens (TokenRequest), and returns rest.Configs for an admin
// (system:masters) and for system:kube-controller-manager.
func rbacServer(t *testing.T) (admin, controllerManager *rest.Config) {
	t.Helper()
	etcd, err := embedded.Start(context.Background(), embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Close() })
	ca, err := pki.NewCA("controllermanager-test-ca")
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
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcd.Client(), Prefix: "/registry"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{
		StorageFactory: factory, Resources: registry.All(), ServingCert: &serving, ClientCA: ca.Pool(), Listener: ln,
		ServiceAccounts: &apiserver.ServiceAccountConfig{Issuers: []string{"https://kubernetes.default.svc.cluster.local"}, SigningKey: saKey},
		Plugins: func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			a, err := rbac.New(stores)
			if err != nil {
				return apiserver.Plugins{}, err
			}
			return apiserver.Plugins{
				Authorizer: a,
				Starters:   []func(context.Context){a.Run},
				PostStartHooks: []apiserver.PostStartHook{{Name: "rbac/bootstrap-roles",
					Run: func(ctx context.Context, hc apiserver.PostStartHookContext) error {
						return bootstrappolicy.EnsureThrough(ctx, hc.LoopbackClientConfig)
					}}},
				WaitReady: []func(context.Context) error{a.WaitSynced},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("API server: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("API server did not stop")
		}
		factory.Close()
	})
	url := "https://" + ln.Addr().String()
	restFor := func(user string, groups ...string) *rest.Config {
		kp, err := ca.IssueClient(user, groups)
		if err != nil {
			t.Fatal(err)
		}
		c := pki.RESTConfig(url, ca.CertPEM, kp)
		c.QPS, c.Burst = 1000, 2000
		return c
	}
	admin = restFor("admin", "system:masters")
	controllerManager = restFor("system:kube-controller-manager")
	// Wait until the server answers (it serves only once RBAC is synced).
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	defer hc.CloseIdleConnections()
	eventually(t, "API server ready", func() (bool, error) {
		resp, err := hc.Get(url + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return admin, controllerManager
}

// TestServiceAccountCredentialsUnderRBAC runs the controller manager as
// system:kube-controller-manager, which RBAC lets only list, watch, elect a
// leader, record events and manage controller identities, with
// --use-service-account-credentials: every controller must write as its
// own kube-system service account for a Deployment to roll out, be
// garbage-collected and a namespace to be emptied.
func TestServiceAccountCredentialsUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The controller manager's own identity may not write workloads.
	_, err := root.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("system:kube-controller-manager creating a ReplicaSet: %v, want Forbidden", err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.Election.Identity = "rbac-test"
	cfg.UseServiceAccountCredentials = true
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(2)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	go func() { defer wg.Done(); readyEveryPod(ctx, admin, "default") }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()

	deps := admin.AppsV1().Deployments("default")
	available := func(name string, replicas int32) func() (bool, error) {
		return func() (bool, error) {
			d, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := d.Status
			return st.ObservedGeneration == d.Generation && st.Replicas == replicas && st.AvailableReplicas == replicas, nil
		}
	}
	if _, err := deps.Create(ctx, newDeployment("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "3 available replicas", available("web", 3))
	for _, sa := range []string{"deployment-controller", "replicaset-controller", "generic-garbage-collector", "namespace-controller", "node-controller"} {
		if _, err := admin.CoreV1().ServiceAccounts("kube-system").Get(ctx, sa, metav1.GetOptions{}); err != nil {
			t.Errorf("service account kube-system/%s: %v", sa, err)
		}
	}

	// A recreated service account invalidates the cached token (its uid
	// is in the token): the 401 resets the cache and the controller gets a
	// new token on its next try.
	if err := admin.CoreV1().ServiceAccounts("kube-system").Delete(ctx, "replicaset-controller", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "replicaset-controller"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	five := int32(5)
	d.Spec.Replicas = &five
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "scaled to 5 after the service account was recreated", available("web", 5))

	// The garbage collector deletes the ReplicaSet and pods.
	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replicasets and pods collected", func() (bool, error) {
		rss, err := admin.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(rss.Items) == 0 && len(pods.Items) == 0, nil
	})

	// The namespace controller empties and finalizes a deleted namespace.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace doomed gone", func() (bool, error) {
		_, err := admin.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
