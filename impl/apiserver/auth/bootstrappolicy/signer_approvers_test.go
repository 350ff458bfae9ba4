package bootstrappolicy_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestSignerApproverRoles: kube-apiserver's default ClusterRoles
// system:certificates.k8s.io:<signer>-approver each grant approve on the
// signer kubernetes.io/<signer> and no other: bound to a user, they let
// it approve requests for that signer (the CertificateApproval admission
// plugin's question).
func TestSignerApproverRoles(t *testing.T) {
	s := newStores(t)
	authz, _ := startAuthorizers(t, s)
	ctx := context.Background()
	signers := []string{"legacy-unknown", "kubelet-serving", "kube-apiserver-client", "kube-apiserver-client-kubelet"}
	for _, signer := range signers {
		b := rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: signer + "-approvers"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:" + signer + "-approver"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: signer + "-approver"}}}
		create(t, s, rbacv1.Resource("clusterrolebindings"), "", b.Name, &b)
	}
	decide := func(who, verb, signer string) auth.Decision {
		d, _, _ := authz.Authorize(ctx, auth.Attributes{User: user(who), Info: &request.Info{IsResourceRequest: true, Verb: verb,
			APIGroup: "certificates.k8s.io", APIVersion: "*", Resource: "signers", Name: signer}})
		return d
	}
	for _, signer := range signers {
		who := signer + "-approver"
		deadline := time.Now().Add(20 * time.Second)
		for decide(who, "approve", "kubernetes.io/"+signer) != auth.DecisionAllow {
			if time.Now().After(deadline) {
				t.Fatalf("%s may not approve for kubernetes.io/%s", who, signer)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, other := range append(signers, "*") {
			if other != signer && decide(who, "approve", "kubernetes.io/"+other) != auth.DecisionNoOpinion {
				t.Errorf("%s may approve for kubernetes.io/%s", who, other)
			}
		}
		if decide(who, "sign", "kubernetes.io/"+signer) != auth.DecisionNoOpinion {
			t.Errorf("%s may sign for kubernetes.io/%s", who, signer)
		}
	}
}
