package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// The simulated nodes of one process (Config.Nodes) read pods through one
// shared watch, as KWOK's node simulator does, and each writes as its own
// node:
//
//   - one pod informer (kubelet.NewPodInformer) of every pod, listed and
//     watched as NodeSimulatorUser, whose ClusterRole (NodeSimulatorRole,
//     created at start as kubeadm creates its bindings) may only get, list
//     and watch pods and services; one services watch, as that user, for
//     every kubelet's service environment variables
//     (kubelet.Config.ServiceReadClient: services are cluster-wide reads,
//     the same for every node). A kubelet.PodDispatcher hands each pod to the kubelet
//     of its spec.nodeName (kubelet.Config.ExternalPodSource). The
//     in-process controller manager and scheduler use the same informer
//     (controllermanager.Config.PodInformer, scheduler.Config.PodInformer):
//     the process decodes and keeps each pod once instead of three times,
//     and the API server serves one pod watch instead of N+2;
//   - every kubelet writes through its own system:node:<name> client —
//     node status, Lease, pod status, final pod deletes, CSRs — and reads
//     its pods' ConfigMaps and Secrets and its Node through it, so the
//     Node authorizer and NodeRestriction judge each node's requests as a
//     real kubelet's;
//   - that client authenticates with a bearer token of its node, not a
//     client certificate: random, kept in this process's memory only and
//     known to the in-process API server alone (auth.NodeTokens, as
//     kube-apiserver keeps its own loopback client's token), standing for
//     the user the certificate gave (system:node:<name> in system:nodes).
//     Clients that differ only in their token share one transport
//     (simulatedNodes.transport), so all kubelets' requests travel over
//     one or two HTTP/2 connections (the API server allows 1,000
//     concurrent streams on a connection, and the transport opens another
//     when they are taken, as by 1,000 ConfigMap watches), on which the
//     API server writes the frames of concurrent responses together and
//     the clients' read loop reads them together (each request's own
//     frames are still written and flushed by its caller).
//     With a certificate each node needed its own TLS connection: 1,000
//     connections from the process to itself, each response flushed with
//     a write system call of its own. A real kubelet (`kubeproof
//     kubelet`) authenticates with its client certificate, as upstream's;
//   - every kubelet records its events with its own client-go event
//     broadcaster, writing through its own client, as upstream's kubelet
//     (kubelet.Config.Recorder nil): its own correlator and spam filter,
//     its own 1,000-event queue and writer goroutine, so 1,000 nodes write
//     events as 1,000 kubelets do. One broadcaster shared by all nodes
//     (until session 11) wrote one event at a time for all of them and
//     dropped what its one queue could not hold (1.56 of ~4 kubelet events
//     per pod at 1,000 nodes), and its one 4,096-entry correlation cache
//     served every node. A broadcaster costs a node ~74 KiB (~68 KiB heap,
//     mostly its two 1,000-event channels, and three goroutines), its
//     correlation caches ~4 KiB per pod (TestSimulatedNodesWriteAllEvents's
//     comment has the measurement);
//   - the kubelets' root directory (pod directories and volume contents)
//     on tmpfs, as upstream's kubelet keeps secret and projected volumes
//     in memory, removed when the cluster stops (simulated pods do not
//     outlive the process). Each kubelet keeps its image pull records in
//     its own memory (kubelet.Config.PullRecordsInMemory), not in that
//     shared directory: a real kubelet's are its own, under its own root
//     directory, and a simulated node's images do not outlive the process
//     either;
//   - what must outlive the process, because the pods do (they are in
//     the API server's store, and a restarted node admits them again),
//     each kubelet keeps under the data directory, in a directory of
//     its own (nodeStateDir): its resized pods' allocations
//     (kubelet.Config.StateDir), as a real kubelet's allocation
//     checkpoint in its root directory, so that a restarted node runs
//     and admits them by what it had allocated, not by their specs. The
//     file is written only when a pod of the node is resized or a resized
//     pod goes: a node whose pods were never resized writes nothing.
//
// A standalone `kubeproof kubelet` keeps its own field-selected pod watch.

// NodeSimulatorUser is the identity of the simulated nodes' shared pod
// watch, and NodeSimulatorRole its ClusterRole (and binding).
const (
	NodeSimulatorUser = "kubeproof:node-simulator"
	NodeSimulatorRole = "kubeproof:node-simulator"
)

// nodeSimulatorRules: reading pods and services, nothing else.
var nodeSimulatorRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}}}

// simulatedNodes are the parts the simulated kubelets of a cluster share.
type simulatedNodes struct {
	// reader is NodeSimulatorUser's client.
	reader     kubernetes.Interface
	pods       cache.SharedIndexInformer
	dispatcher *kubelet.PodDispatcher
	// rootDir holds every kubelet's pod directories (RootDir) and
	// PodLogsDir; tmpfs tells whether it is on a tmpfs.
	rootDir string
	tmpfs   bool
	// transport carries every kubelet's requests (each adds its own
	// bearer token, user agent and rate limit on top); conns counts its
	// open connections.
	transport http.RoundTripper
	conns     atomic.Int64
}

// countedConn is a connection of the simulated nodes' transport.
type countedConn struct {
	net.Conn
	open  *atomic.Int64
	close sync.Once
}

func (c *countedConn) Close() error {
	c.close.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// startSimulatedNodes prepares the shared parts and starts the pod
// informer on ctx (the components' context). The caller stops them with
// stop once every component has stopped.
func (c *Cluster) startSimulatedNodes(ctx context.Context, cfg Config) (*simulatedNodes, error) {
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return nil, fmt.Errorf("building admin client: %w", err)
	}
	if err := EnsureNodeSimulatorRBAC(ctx, admin); err != nil {
		return nil, err
	}
	_, cs, err := c.componentClient(filepath.Join(cfg.DataDir, "pki"), "", "node-simulator", NodeSimulatorUser, nil, 50, 100, nil)
	if err != nil {
		return nil, err
	}
	if err := WaitPodsReadable(ctx, cs, time.Minute); err != nil {
		return nil, err
	}
	n := &simulatedNodes{}
	if n.rootDir, n.tmpfs, err = kubeletRootDir(cfg.DataDir); err != nil {
		return nil, err
	}
	n.reader = cs
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second} // client-go's
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n.conns.Add(1)
		return &countedConn{Conn: conn, open: &n.conns}, nil
	}
	if n.transport, err = rest.TransportFor(&rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.CertPEM}, Dial: dial}); err != nil {
		return nil, fmt.Errorf("building the simulated nodes' transport: %w", err)
	}
	n.pods = kubelet.NewPodInformer(cs, 0)
	n.dispatcher = kubelet.NewPodDispatcherWithInformer(n.pods)
	pods := n.pods
	c.goRun(&c.compsWG, "simulated nodes' pod informer", func() error { pods.RunWithContext(ctx); return nil })
	return n, nil
}

// stop releases what startSimulatedNodes made, once the kubelets stopped.
func (n *simulatedNodes) stop() {
	utilnet.CloseIdleConnectionsFor(n.transport)
	_ = os.RemoveAll(n.rootDir)
}

// nodeClient is the client of simulated node name: a fresh token of
// c.nodeTokens on the nodes' shared transport.
func (c *Cluster) nodeClient(name string) (kubernetes.Interface, error) {
	token, err := c.nodeTokens.Issue(name)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: c.URL, Transport: c.simNodes.transport, BearerToken: token}
	componentConfig(cfg, name, 50, 100)
	cs, err := newNodeClientset(cfg)
	if err != nil {
		return nil, fmt.Errorf("building %s%s client: %w", NodeUserPrefix, name, err)
	}
	return cs, nil
}

// IssueNodeToken returns a new bearer token that the cluster's API server
// takes for system:node:<name> in system:nodes, as its simulated kubelets'
// tokens (Config.NodeTokens). It is an error for a cluster that accepts no
// node tokens.
func (c *Cluster) IssueNodeToken(name string) (string, error) {
	if c.nodeTokens == nil {
		return "", errors.New("issuing a node token: the cluster accepts none (no simulated nodes, Config.NodeTokens unset)")
	}
	return c.nodeTokens.Issue(name)
}

// nodeTokensAuthenticator is c.nodeTokens for the API server: nil (not a
// nil pointer) without simulated nodes.
func (c *Cluster) nodeTokensAuthenticator() auth.TokenAuthenticator {
	if c.nodeTokens == nil {
		return nil
	}
	return c.nodeTokens
}

// EnsureNodeSimulatorRBAC creates NodeSimulatorRole and its binding to
// NodeSimulatorUser, or brings the role's rules back to nodeSimulatorRules.
// Start does it when it runs simulated nodes; a process that reads pods as
// the node simulator against another API server does it first.
func EnsureNodeSimulatorRBAC(ctx context.Context, admin kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: NodeSimulatorRole}, Rules: nodeSimulatorRules}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := admin.RbacV1().ClusterRoles().Get(ctx, NodeSimulatorRole, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading ClusterRole %s: %w", NodeSimulatorRole, err)
		}
		old.Rules = nodeSimulatorRules
		if _, err := admin.RbacV1().ClusterRoles().Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating ClusterRole %s: %w", NodeSimulatorRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", NodeSimulatorRole, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NodeSimulatorRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: NodeSimulatorRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: NodeSimulatorUser}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", NodeSimulatorRole, err)
	}
	return nil
}

// WaitPodsReadable waits until cs may list pods (the authorizer has seen
// the new binding), so the informer does not start in a reflector's
// back-off.
func WaitPodsReadable(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s cannot list pods after %s: %w", NodeSimulatorUser, timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to read pods: %w", NodeSimulatorUser, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kubeletRootDir is the simulated kubelets' root directory: on the
// machine's tmpfs (/dev/shm) when it has a writable one, named after the
// data directory so that a restart on the same data directory replaces
// what a crashed run left; DataDir/kubelet otherwise. It is emptied first.
func kubeletRootDir(dataDir string) (dir string, tmpfs bool, err error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", false, err
	}
	sum := sha256.Sum256([]byte(abs))
	candidates := []struct {
		dir   string
		tmpfs bool
	}{
		{filepath.Join(shmDir, "kubeproof-kubelets-"+hex.EncodeToString(sum[:6])), true},
		{filepath.Join(abs, "kubelet"), false},
	}
	var errs []error
	for _, c := range candidates {
		if c.tmpfs && !isDir(shmDir) {
			continue
		}
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		return c.dir, c.tmpfs, nil
	}
	return "", false, fmt.Errorf("simulated kubelets' root directory: %w", errors.Join(errs...))
}

// nodeStateDir is simulated node name's directory of the state it keeps
// across restarts of the process (kubelet.Config.StateDir): under the
// data directory, unlike the kubelets' root directory (kubeletRootDir),
// which every start empties. It is made when first written.
func nodeStateDir(dataDir, name string) string {
	return filepath.Join(dataDir, "nodes", name)
}

// shmDir is the machine's tmpfs (a variable for tests).
var shmDir = "/dev/shm"

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// KubeletRootDir is the directory holding the simulated kubelets' pod
// directories and volumes ("" without simulated nodes), and whether it is
// on tmpfs (memory of the machine, outside any process's RSS).
func (c *Cluster) KubeletRootDir() (dir string, tmpfs bool) {
	if c.simNodes == nil {
		return "", false
	}
	return c.simNodes.rootDir, c.simNodes.tmpfs
}

// sharedPods is the simulated nodes' pod informer, for the controller
// manager and the scheduler (nil without simulated nodes).
func (c *Cluster) sharedPods() cache.SharedIndexInformer {
	if c.simNodes == nil {
		return nil
	}
	return c.simNodes.pods
}

// imageCredentialProviders reports whether the simulated nodes have
// credential provider plugins (either flag given, as `kubeproof kubelet`
// registers them).
func (cfg Config) imageCredentialProviders() bool {
	return cfg.ImageCredentialProviderConfig != "" || cfg.ImageCredentialProviderBinDir != ""
}

// startKubelets runs cfg.Nodes simulated kubelets named node-1 … node-N,
// each with its own node identity and pod CIDR, on the shared pod source.
func (c *Cluster) startKubelets(ctx context.Context, cfg Config) error {
	cpu, err := resource.ParseQuantity(cfg.NodeCPU)
	if err != nil {
		return fmt.Errorf("node cpu: %w", err)
	}
	mem, err := resource.ParseQuantity(cfg.NodeMemory)
	if err != nil {
		return fmt.Errorf("node memory: %w", err)
	}
	var swap resource.Quantity
	if cfg.NodeSwapCapacity != "" {
		if swap, err = resource.ParseQuantity(cfg.NodeSwapCapacity); err != nil {
			return fmt.Errorf("node swap capacity: %w", err)
		}
	}
	n := c.simNodes
	resolvConf := cfg.NodeResolverConfig
	for i := 0; i < cfg.Nodes; i++ {
		name, cidr := SimulatedNode(i)
		if cfg.DualStackNodes {
			cidr += "," + SimulatedNodeIPv6CIDR(i)
		}
		cs, err := c.nodeClient(name)
		if err != nil {
			return err
		}
		rt, err := sim.New(sim.Config{PodCIDR: cidr, RuntimeHandlers: cfg.SimRuntimeHandlers, MissingImages: cfg.SimMissingImages})
		if err != nil {
			return fmt.Errorf("building runtime of %s: %w", name, err)
		}
		log := cfg.Logger.With("node", name)
		kcfg := kubelet.Config{
			NodeName: name, PodCIDR: cidr, Port: c.kubeletAPI.Port, CPU: cpu, Memory: mem, MaxPods: cfg.NodeMaxPods, HugePages: cfg.NodeHugePages,
			SwapCapacity: swap, MemorySwapBehavior: cfg.NodeMemorySwapBehavior, FailSwapOn: cfg.NodeFailSwapOn, CPUCFSQuota: cfg.NodeCPUCFSQuota,
			SeccompDefault: cfg.NodeSeccompDefault, AllowedUnsafeSysctls: cfg.NodeAllowedUnsafeSysctls, SystemReserved: cfg.NodeSystemReserved, KubeReserved: cfg.NodeKubeReserved,
			ExternalPodSource: true, ServiceReadClient: n.reader, ResolverConfig: &resolvConf,
			RootDir: filepath.Join(n.rootDir, "root"), PodLogsDir: filepath.Join(n.rootDir, "pod-logs"), PullRecordsInMemory: true,
			StateDir: nodeStateDir(cfg.DataDir, name), Logger: log, PodTrace: cfg.PodTrace,
		}
		if cfg.imageCredentialProviders() {
			providers, err := credentialprovider.Register(cfg.ImageCredentialProviderConfig, cfg.ImageCredentialProviderBinDir, nil, log)
			if err != nil {
				return fmt.Errorf("registering image credential provider plugins of %s: %w", name, err)
			}
			kcfg.ImageCredentialProviders = providers
		}
		k, err := kubelet.New(ctx, cs, kcfg, rt)
		if err != nil {
			return fmt.Errorf("building kubelet %s: %w", name, err)
		}
		c.kubelets = append(c.kubelets, k)
		c.kubeletAPI.Mux.Add(k)
		n.dispatcher.Add(k)
		c.goRun(&c.compsWG, "kubelet "+name, func() error { return k.Run(ctx) })
	}
	c.goRun(&c.compsWG, "simulated nodes' pod dispatcher", func() error { return n.dispatcher.Run(ctx) })
	return nil
}
