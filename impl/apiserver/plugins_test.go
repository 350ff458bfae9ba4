package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// denyConfigMapsAuthorizer denies configmaps, has no opinion on the rest.
type denyConfigMapsAuthorizer struct{}

func (denyConfigMapsAuthorizer) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.Info != nil && a.Info.Resource == "configmaps" {
		return auth.DecisionDeny, "no configmaps here", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// labelMutator labels every created pod with whether its namespace's
// ServiceAccount "default" exists, read from the server's own store.
type labelMutator struct{ stores apiserver.StoreGetter }

func (m labelMutator) Admit(ctx context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Operation != admission.Create {
		return nil
	}
	gr := schema.GroupResource{Resource: "serviceaccounts"}
	store, ok := m.stores.Store(gr)
	if !ok {
		return errors.New("no serviceaccounts store")
	}
	var sa corev1.ServiceAccount
	err := store.Get(ctx, m.stores.ObjectKey(gr, a.Namespace, "builder"), storage.GetOptions{}, &sa)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["builder-sa"] = map[bool]string{true: "found", false: "missing"}[err == nil]
	return nil
}

func TestPluginsExtendTheChainAndRunWithTheServer(t *testing.T) {
	var started, stopped atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() {
		// Registered before newEnv's, so it runs after it: Run has returned.
		if stopped.Load() != 1 {
			t.Errorf("starter not stopped by shutdown (stopped=%d)", stopped.Load())
		}
	})
	e := newEnv(t, func(c *apiserver.Config) {
		c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			if _, ok := stores.Store(schema.GroupResource{Resource: "pods"}); !ok {
				return apiserver.Plugins{}, errors.New("pods store missing")
			}
			return apiserver.Plugins{
				Authorizer: auth.AuthorizerUnion{denyConfigMapsAuthorizer{}, auth.AlwaysAllow{}},
				Mutators:   []admission.Mutator{labelMutator{stores}},
				Starters: []func(context.Context){func(ctx context.Context) {
					started.Add(1)
					close(release)
					<-ctx.Done()
					stopped.Add(1)
				}},
				WaitReady: []func(context.Context) error{func(ctx context.Context) error {
					select {
					case <-release:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				}},
			}, nil
		}
	})
	if started.Load() != 1 {
		t.Fatalf("starter ran %d times before the server was ready", started.Load())
	}
	// As alice (admin, in system:masters, is allowed before the plugin's
	// authorizer is asked).
	expectStatus(t, e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil, "Impersonate-User", "alice"), http.StatusForbidden,
		metav1.StatusReasonForbidden, `User "alice" cannot list resource "configmaps" in API group "" in the namespace "default": no configmaps here`)

	c := ctx(t)
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := e.cs.CoreV1().Pods("default").Create(c, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["builder-sa"] != "found" {
		t.Fatalf("mutator did not read the store: labels %v", got.Labels)
	}
	got, err = e.cs.CoreV1().Pods("kube-system").Create(c, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["builder-sa"] != "missing" {
		t.Fatalf("labels %v, want builder-sa=missing", got.Labels)
	}
}

func TestAuthorizerUnion(t *testing.T) {
	deny := denyConfigMapsAuthorizer{}
	cases := []struct {
		name  string
		union auth.AuthorizerUnion
		res   string
		want  auth.Decision
	}{
		{"first deny decides", auth.AuthorizerUnion{deny, auth.AlwaysAllow{}}, "configmaps", auth.DecisionDeny},
		{"no opinion falls through", auth.AuthorizerUnion{deny, auth.AlwaysAllow{}}, "pods", auth.DecisionAllow},
		{"first allow decides", auth.AuthorizerUnion{auth.AlwaysAllow{}, auth.AlwaysDeny{}}, "configmaps", auth.DecisionAllow},
		{"all no opinion", auth.AuthorizerUnion{deny, deny}, "pods", auth.DecisionNoOpinion},
		{"empty", auth.AuthorizerUnion{}, "pods", auth.DecisionNoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := &request.Info{IsResourceRequest: true, Verb: "get", Resource: tc.res}
			d, _, _ := tc.union.Authorize(context.Background(), auth.Attributes{Info: info})
			if d != tc.want {
				t.Fatalf("decision %v, want %v", d, tc.want)
			}
		})
	}
}
