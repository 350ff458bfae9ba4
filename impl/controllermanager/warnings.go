package controllermanager

import "k8s.io/client-go/rest"

// QuietWarnings makes the clients built from cfg drop the API server's
// warnings (rest.NoWarnings) instead of logging them through klog, as
// kube-controller-manager does for its whole process: it reads and writes
// deprecated kinds on purpose (v1 Endpoints: the endpoints and
// EndpointSlice mirroring controllers, the garbage collector's and
// namespace controller's generic lists and deletes), so every such request
// would log "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1
// EndpointSlice". Only the controller manager's clients are quieted; a
// user's client (kubectl) still gets and shows the warning.
func QuietWarnings(cfg *rest.Config) {
	cfg.WarningHandler = rest.NoWarnings{}
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
}
