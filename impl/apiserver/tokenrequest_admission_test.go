package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
)

// nodeTokens allows system:masters everything and node n1 to create
// service account tokens and to request tokens for audience "granted"
// (RBAC's request-serviceaccounts-token-audience on resource "granted").
type nodeTokens struct{}

func (nodeTokens) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.User == nil {
		return auth.DecisionNoOpinion, "", nil
	}
	if slices.Contains(a.User.Groups, "system:masters") {
		return auth.DecisionAllow, "", nil
	}
	i := a.Info
	if a.User.Name == "system:node:n1" && i.IsResourceRequest && i.APIGroup == "" &&
		((i.Verb == "create" && i.Resource == "serviceaccounts" && i.Subresource == "token") ||
			(i.Verb == "request-serviceaccounts-token-audience" && i.Resource == "granted")) {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "no rule", nil
}

// TestTokenRequestAdmission: serviceaccounts/token runs admission as
// kube-apiserver's TokenREST is served: the mutating plugins on the
// request as sent (NodeRestriction's checks of a node's request, its
// audiences not yet defaulted), and a TokenRequest whose metadata.uid is
// not the service account's is a 409 Conflict
// (TokenRequestServiceAccountUIDValidation, beta and on since 1.34); the
// answer carries the service account's uid.
func TestTokenRequestAdmission(t *testing.T) {
	tokens, err := auth.ParseTokenFile(strings.NewReader("node-token,system:node:n1,n1,\"system:nodes\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = nodeTokens{}
		c.TokenAuthenticators = []auth.TokenAuthenticator{tokens}
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			mut, val, starters, err := admission.NewPluginsWithOptions([]string{"NodeRestriction"}, stores,
				admission.Options{Authorizer: nodeTokens{}})
			return apiserver.Plugins{Authorizer: nodeTokens{}, Mutators: mut, Validators: val, Starters: starters}, err
		}
	})
	c := ctx(t)
	core := e.cs.CoreV1()
	sa, err := core.ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vault := corev1.Volume{Name: "vault", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}}}}}
	pod, err := core.Pods("default").Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", NodeName: "n1", Volumes: []corev1.Volume{vault},
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// metadata.uid: the service account's, or none.
	request := func(uid string, audiences ...string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: authenticationv1.TokenRequestSpec{
			Audiences:      audiences,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}}}
	}
	for _, uid := range []string{"", string(sa.UID)} {
		tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", request(uid), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token request with uid %q: %v", uid, err)
		}
		if tr.UID != sa.UID || tr.Status.Token == "" {
			t.Fatalf("token request with uid %q: answer uid %q token %q, want uid %q", uid, tr.UID, tr.Status.Token, sa.UID)
		}
	}
	_, err = core.ServiceAccounts("default").CreateToken(c, "builder", request("wrong-uid"), metav1.CreateOptions{})
	want := fmt.Sprintf(`Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "builder": the UID in the token request (wrong-uid) does not match the UID of the service account (%s)`, sa.UID)
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("token request with another uid: %v, want 409 %q", err, want)
	} else if errors.As(err, &status); status.Status().Details == nil ||
		status.Status().Details.Group != "authentication.k8s.io" || status.Status().Details.Kind != "TokenRequest" || status.Status().Details.Name != "builder" {
		t.Fatalf("token request with another uid: details %+v", status.Status().Details)
	}

	// The node's requests: NodeRestriction, on the request as sent.
	node := e.tokenClient(t, "node-token", "").CoreV1().ServiceAccounts("default")
	for _, tc := range []struct {
		name string
		tr   *authenticationv1.TokenRequest
		want string // "" allowed; else a 403 with this message
	}{
		{"audience of the pod's volume", request("", "vault"), ""},
		{"audience the authorizer grants", request("", "granted"), ""},
		{"audience no volume uses", request("", "other"),
			`serviceaccounts "builder" is forbidden: audience "other" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience`},
		{"API audience without a kube-api-access volume (audiences not defaulted first)", request(""),
			`serviceaccounts "builder" is forbidden: audience "" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience`},
		{"two audiences", request("", "vault", "granted"), `serviceaccounts "builder" is forbidden: node may only request 0 or 1 audiences`},
		{"token not bound to a pod", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}},
			`serviceaccounts "builder" is forbidden: node requested token not bound to a pod`},
		// The kubelet's request for a credential provider plugin (service
		// account token mode): allowed when RBAC grants its audience.
		{"kubelet credential provider request, audience granted", credentialprovider.TokenRequest("granted", "web", pod.UID, sa.UID), ""},
		{"kubelet credential provider request, audience not granted", credentialprovider.TokenRequest("registry.example.com", "web", pod.UID, sa.UID),
			`serviceaccounts "builder" is forbidden: audience "registry.example.com" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := node.CreateToken(c, "builder", tc.tr, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("node's token request: %v", err)
			case tc.want == "" && (tr.Status.Token == "" || tr.UID != sa.UID):
				t.Fatalf("node's token request answered %+v", tr)
			case tc.want != "" && (!apierrors.IsForbidden(err) || err.Error() != tc.want):
				t.Fatalf("node's token request: %v, want 403 %q", err, tc.want)
			}
		})
	}
}

// TestTokenRequestInvalidAsUpstream: TokenREST.Create's 422s: a body
// naming another service account is invalid at metadata.name (checked
// before the service account is read), and a request failing validation
// is invalid under no name, as upstream's NewInvalid(gvk.GroupKind(), "",
// errs).
func TestTokenRequestInvalidAsUpstream(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	sas := e.cs.CoreV1().ServiceAccounts("default")
	if _, err := sas.Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sa string
		tr       *authenticationv1.TokenRequest
		want     string
	}{
		{"another name", "builder", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			`TokenRequest.authentication.k8s.io "builder" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"another name, no such service account", "nobody", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			`TokenRequest.authentication.k8s.io "nobody" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"short expiry", "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(60))}},
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sas.CreateToken(c, tc.sa, tc.tr, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || err.Error() != tc.want {
				t.Fatalf("token request: %v, want 422 %q", err, tc.want)
			}
		})
	}
}
