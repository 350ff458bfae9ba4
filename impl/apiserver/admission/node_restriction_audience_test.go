package admission

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// audienceGrants is an authorizer that allows
// request-serviceaccounts-token-audience on the audiences it lists (a
// "*" entry: every audience), for service account "sa" only, and records
// what it was asked.
type audienceGrants struct {
	audiences []string
	asked     []auth.Attributes
}

func (g *audienceGrants) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	g.asked = append(g.asked, a)
	i := a.Info
	if i.Verb != "request-serviceaccounts-token-audience" || !i.IsResourceRequest || i.APIGroup != "" || i.Name != "sa" {
		return auth.DecisionNoOpinion, "", nil
	}
	for _, aud := range g.audiences {
		if aud == "*" || aud == i.Resource {
			return auth.DecisionAllow, "", nil
		}
	}
	return auth.DecisionNoOpinion, "", nil
}

// TestNodeTokenAudienceRestriction: a node's TokenRequest may name at most
// one audience, one a projected serviceAccountToken volume of the bound pod
// uses ("" for the API server's, a kube-api-access volume), or one the
// authorizer lets the node request-serviceaccounts-token-audience (resource
// the audience, name the service account), as upstream 1.37's NodeRestriction
// with ServiceAccountNodeAudienceRestriction (beta, on).
func TestNodeTokenAudienceRestriction(t *testing.T) {
	kubelet := &request.User{Name: "system:node:a", Groups: []string{"system:nodes", "system:authenticated"}}
	psat := func(aud string) corev1.Volume {
		return corev1.Volume{Name: "v" + aud, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: aud, Path: "token"}}}}}}
	}
	pods := map[string]*corev1.Pod{}
	addPod := func(name string, vols ...corev1.Volume) {
		p := newPod(name)
		p.UID, p.Spec.NodeName, p.Spec.ServiceAccountName, p.Spec.Volumes = "uid-p", "a", "sa", vols
		pods[name] = p
	}
	addPod("api-access", psat(""))
	addPod("vault", psat(""), psat("vault"))
	addPod("bare")
	addPod("csi", corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "example.com/d"}}})
	addPod("claims", corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}, psat("vault"))
	grants := &audienceGrants{audiences: []string{"registry.example.com"}}
	plugin := &NodeRestriction{
		GetPod:     func(_ context.Context, ns, name string) (*corev1.Pod, error) { return pods[name].DeepCopy(), nil },
		Authorizer: grants,
	}
	tokenFor := func(sa, pod string, audiences ...string) *Attributes {
		return &Attributes{User: kubelet, Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Subresource: "token",
			Namespace: "ns", Name: sa, Object: &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{}, Spec: authenticationv1.TokenRequestSpec{
				Audiences: audiences, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: "uid-p"}}}}
	}
	const notAuthorized = ` not found in pod spec volume, system:node:a is not authorized to request tokens for this audience`
	tests := []struct {
		name string
		a    *Attributes
		want string
	}{
		{"kube-api-access token (no audiences)", tokenFor("sa", "api-access"), ""},
		{"explicit empty audience of a kube-api-access volume", tokenFor("sa", "api-access", ""), ""},
		{"audience of a projected volume", tokenFor("sa", "vault", "vault"), ""},
		{"audience no volume uses", tokenFor("sa", "vault", "other"), `serviceaccounts "sa" is forbidden: audience "other"` + notAuthorized},
		{"API audience without a kube-api-access volume", tokenFor("sa", "bare"), `audience ""` + notAuthorized},
		{"two audiences", tokenFor("sa", "vault", "vault", ""), `serviceaccounts "sa" is forbidden: node may only request 0 or 1 audiences`},
		{"audience granted by the authorizer", tokenFor("sa", "bare", "registry.example.com"), ""},
		{"audience granted for another service account", tokenFor("other", "bare", "registry.example.com"), `audience "registry.example.com"` + notAuthorized},
		{"CSI driver that does not exist", tokenFor("sa", "csi", "x"),
			`serviceaccounts "sa" is forbidden: error validating audience "x": csidriver.storage.k8s.io "example.com/d" not found`},
		{"claims that do not exist", tokenFor("sa", "claims", "x"),
			`error validating audience "x": [persistentvolumeclaim "data" not found, persistentvolumeclaim "claims-e" not found]`},
		{"audience found beside claims that do not exist", tokenFor("sa", "claims", "vault"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantForbidden(t, plugin.Admit(context.Background(), tt.a), tt.want)
		})
	}

	// The authorizer is asked as upstream's SubjectAccessReview-like check:
	// the node, the virtual verb, the audience as the resource of the
	// core group, the service account as the name, in its namespace.
	grants.asked = nil
	wantForbidden(t, plugin.Admit(context.Background(), tokenFor("sa", "bare", "registry.example.com")), "")
	if len(grants.asked) != 1 {
		t.Fatalf("authorizer asked %d times, want 1", len(grants.asked))
	}
	got := grants.asked[0]
	if got.User != kubelet || got.Info.Verb != "request-serviceaccounts-token-audience" || !got.Info.IsResourceRequest ||
		got.Info.APIGroup != "" || got.Info.Namespace != "ns" || got.Info.Resource != "registry.example.com" || got.Info.Name != "sa" || got.Info.Subresource != "" {
		t.Errorf("authorizer asked %+v for %v", *got.Info, got.User)
	}
	// A grant on "*" allows every audience, the API server's too.
	grants.audiences = []string{"*"}
	wantForbidden(t, plugin.Admit(context.Background(), tokenFor("sa", "bare")), "")
	wantForbidden(t, plugin.Admit(context.Background(), tokenFor("sa", "bare", "any")), "")
	// A pod's own audience needs no authorizer.
	grants.asked = nil
	wantForbidden(t, plugin.Admit(context.Background(), tokenFor("sa", "vault", "vault")), "")
	if len(grants.asked) != 0 {
		t.Errorf("authorizer asked for an audience the pod uses: %+v", grants.asked)
	}
}
