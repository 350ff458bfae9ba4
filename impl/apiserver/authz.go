package apiserver

import (
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
)

// withSystemMasters is the authorizer the server decides every request
// with: system:masters allowed before a is asked, as kube-apiserver's
// generic server puts a privileged-group authorizer for system:masters
// in front of whatever authorizer it is configured with (the loopback
// client's identity is in that group). The server's own writes at start
// (the system namespaces, the `kubernetes` Service, the bootstrap
// objects) are requests of that identity, made before an RBAC policy
// exists: an authorizer refusing them would keep the start retrying
// forever. A union that already asks system:masters first is kept as it
// is.
func withSystemMasters(a auth.Authorizer) auth.Authorizer {
	if u, ok := a.(auth.AuthorizerUnion); ok && len(u) > 0 {
		if p, ok := u[0].(auth.PrivilegedGroups); ok && len(p) == 1 && p[0] == bootstrappolicy.SystemMastersGroup {
			return a
		}
	}
	return auth.AuthorizerUnion{auth.PrivilegedGroups{bootstrappolicy.SystemMastersGroup}, a}
}
