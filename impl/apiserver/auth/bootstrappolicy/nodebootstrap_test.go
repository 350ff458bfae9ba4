package bootstrappolicy_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestNodeBootstrapBindings: by default (as upstream) a bootstrap token user
// may not ask for certificates; with the kubeadm-style bindings `up`
// creates it may create CSRs and have a new node's approved
// (certificatesigningrequests/nodeclient) but not renew a node's own
// certificate (selfnodeclient), which nodes may; the certificate
// controller may write CSR status and review access.
func TestNodeBootstrapBindings(t *testing.T) {
	s := newStores(t)
	authz, _ := startAuthorizers(t, s)
	ctx := context.Background()
	bootstrapper := user("system:bootstrap:abcdef", bootstrappolicy.BootstrappersGroup)
	node := user("system:node:joiner", "system:nodes")
	csr := func(u *request.User, verb, sub string) auth.Attributes {
		return auth.Attributes{User: u, Info: &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: sub}}
	}
	decide := func(a auth.Attributes) auth.Decision {
		d, _, _ := authz.Authorize(ctx, a)
		return d
	}
	eventually := func(what string, a auth.Attributes, want auth.Decision) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for decide(a) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: decision %v, want %v", what, decide(a), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually("bootstrapper creates a CSR by default", csr(bootstrapper, "create", ""), auth.DecisionNoOpinion)
	eventually("bootstrapper nodeclient by default", csr(bootstrapper, "create", "nodeclient"), auth.DecisionNoOpinion)

	controller := user("system:serviceaccount:kube-system:certificate-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	eventually("certificate controller updates status", csr(controller, "update", "status"), auth.DecisionAllow)
	eventually("certificate controller creates CSRs", csr(controller, "create", ""), auth.DecisionNoOpinion)
	// As upstream's system:controller:certificate-controller: approve for
	// the kubelet client signer only, sign for the signers
	// kube-controller-manager runs.
	signer := func(verb, name string) auth.Attributes {
		return auth.Attributes{User: controller, Info: &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: "certificates.k8s.io", APIVersion: "*", Resource: "signers", Name: name}}
	}
	eventually("certificate controller approves kubelet client requests", signer("approve", "kubernetes.io/kube-apiserver-client-kubelet"), auth.DecisionAllow)
	eventually("certificate controller approves kubelet serving requests", signer("approve", "kubernetes.io/kubelet-serving"), auth.DecisionNoOpinion)
	for _, name := range []string{"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client", "kubernetes.io/legacy-unknown"} {
		eventually("certificate controller signs for "+name, signer("sign", name), auth.DecisionAllow)
	}
	eventually("certificate controller signs for others", signer("sign", "example.com/signer"), auth.DecisionNoOpinion)

	for _, b := range bootstrappolicy.NodeBootstrapBindings() {
		create(t, s, rbacv1.Resource("clusterrolebindings"), "", b.Name, &b)
	}
	eventually("bootstrapper creates a CSR", csr(bootstrapper, "create", ""), auth.DecisionAllow)
	eventually("bootstrapper watches CSRs", csr(bootstrapper, "watch", ""), auth.DecisionAllow)
	eventually("bootstrapper nodeclient", csr(bootstrapper, "create", "nodeclient"), auth.DecisionAllow)
	eventually("bootstrapper selfnodeclient", csr(bootstrapper, "create", "selfnodeclient"), auth.DecisionNoOpinion)
	eventually("node selfnodeclient", csr(node, "create", "selfnodeclient"), auth.DecisionAllow)
	eventually("bootstrapper deletes CSRs", csr(bootstrapper, "delete", ""), auth.DecisionNoOpinion)
}
