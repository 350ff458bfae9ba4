package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/controllermanager"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/scheduler"
)

// Component identities, as Kubernetes names them; issue 8's RBAC defaults
// grant each exactly what it needs.
const (
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	NodeUserPrefix        = "system:node:"
	NodesGroup            = "system:nodes"
)

// maxSimulatedNodes bounds --nodes: SimulatedNode's pod CIDRs stay inside
// 10.244.0.0/14.
const maxSimulatedNodes = 1024

// SimulatedNode is the name and pod CIDR of simulated node i (from 0):
// node-<i+1> and 10.(244+i/256).(i%256).0/24.
func SimulatedNode(i int) (name, podCIDR string) {
	return fmt.Sprintf("node-%d", i+1), fmt.Sprintf("10.%d.%d.0/24", 244+i/256, i%256)
}

// SimulatedNodeIPv6CIDR is simulated node i's IPv6 pod CIDR on a
// dual-stack cluster (Config.DualStackNodes): fd00:10:244:<i in hex>::/64,
// written canonically (node validation wants "fd00:10:244::/64" for 0).
func SimulatedNodeIPv6CIDR(i int) string {
	b := [16]byte{0xfd, 0x00, 0x00, 0x10, 0x02, 0x44, byte(i >> 8), byte(i)}
	return netip.PrefixFrom(netip.AddrFrom16(b), 64).String()
}

// componentClient builds a client for a component with its own client
// certificate (issued once, kept in DataDir/pki) and writes its kubeconfig
// to DataDir/<file> so it can also be run as a separate process.
//
// adjust, when not nil, changes the configuration before the client is
// built (the controller manager's drops warnings).
func (c *Cluster) componentClient(pkiDir, dataDir, certName, user string, groups []string, qps float32, burst int, adjust func(*rest.Config)) (*rest.Config, kubernetes.Interface, error) {
	kp, err := pki.LoadOrIssue(pkiDir, certName, func() (pki.KeyPair, error) { return c.CA.IssueClient(user, groups) })
	if err != nil {
		return nil, nil, err
	}
	if dataDir != "" {
		if err := pki.WriteKubeconfig(filepath.Join(dataDir, certName+".kubeconfig"), pki.Kubeconfig(c.URL, c.CA.CertPEM, user, kp)); err != nil {
			return nil, nil, err
		}
	}
	cfg := pki.RESTConfig(c.URL, c.CA.CertPEM, kp)
	if adjust != nil {
		adjust(cfg)
	}
	cs, err := newComponentClientset(cfg, certName, qps, burst)
	if err != nil {
		return nil, nil, fmt.Errorf("building %s client: %w", user, err)
	}
	return cfg, cs, nil
}

// newComponentClientset sets what every in-process component's client
// shares on cfg (componentConfig) and builds its clientset.
func newComponentClientset(cfg *rest.Config, name string, qps float32, burst int) (kubernetes.Interface, error) {
	componentConfig(cfg, name, qps, burst)
	return kubernetes.NewForConfig(cfg)
}

// componentConfig sets what every in-process component's client shares on
// cfg: rate limits, user agent kubeproof/<name>, content types, the fault
// injection hook.
func componentConfig(cfg *rest.Config, name string, qps float32, burst int) {
	cfg.QPS, cfg.Burst, cfg.UserAgent = qps, burst, "kubeproof/"+name
	// Protobuf, as upstream's components default to (the kubelet's and
	// controller manager's --kube-api-content-type, the scheduler's
	// clientConnection.contentType); JSON where a type has no protobuf
	// form.
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	cfg.Wrap(faults.WrapTransport(name)) // fault injection hook: a no-op unless a test armed it (e2e/props)
}

// startControllerManager runs the controller manager in-process. Its client
// allows more than a stock kube-controller-manager's 20 QPS, which would
// otherwise cap pod creation at 20 pods/s.
func (c *Cluster) startControllerManager(ctx context.Context, cfg Config) error {
	restCfg, cs, err := c.componentClient(filepath.Join(cfg.DataDir, "pki"), cfg.DataDir, "controller-manager", ControllerManagerUser, nil, 1000, 2000,
		controllermanager.QuietWarnings) // as kube-controller-manager: no warnings logged
	if err != nil {
		return err
	}
	cmCfg := controllermanager.DefaultConfig()
	// As kubeadm runs kube-controller-manager: each controller writes as
	// its own kube-system service account, which the default RBAC policy
	// grants exactly its system:controller:<name> role; and the cluster CA
	// is published to every namespace as kube-root-ca.crt.
	cmCfg.UseServiceAccountCredentials = true
	// With simulated nodes, the controllers' pod cache is their shared
	// pod informer (nodes.go).
	cmCfg.PodInformer = c.sharedPods()
	cmCfg.RootCA = c.CA.CertPEM
	// The serviceaccount-token controller signs with the API server's
	// key (kubeadm: --service-account-private-key-file=sa.key).
	cmCfg.ServiceAccountPrivateKey = c.saSigningKey
	// The cluster CA also signs kubelet client certificates (TLS
	// bootstrapping), as kubeadm passes --cluster-signing-cert-file and
	// --cluster-signing-key-file.
	caKey, err := os.ReadFile(filepath.Join(cfg.DataDir, "pki", "ca.key"))
	if err != nil {
		return fmt.Errorf("reading the cluster CA key for the csrsigning controller: %w", err)
	}
	cmCfg.ClusterSigningCert, cmCfg.ClusterSigningKey = c.CA.CertPEM, caKey
	if cfg.PodEvictionTimeout > 0 {
		secs := int64(cfg.PodEvictionTimeout / time.Second)
		cmCfg.DefaultNotReadyTolerationSeconds, cmCfg.DefaultUnreachableTolerationSeconds = secs, secs
	}
	if cfg.NodeMonitorGracePeriod > 0 {
		cmCfg.NodeMonitorGracePeriod = cfg.NodeMonitorGracePeriod
	}
	cmCfg.EndpointUpdatesBatchPeriod = cfg.EndpointUpdatesBatchPeriod
	if err := c.ensureNodeBootstrapBindings(ctx); err != nil {
		return err
	}
	c.goRunRestarting(ctx, &c.compsWG, "controller-manager", cfg.Logger, func() (func() error, error) {
		return c.cmHealthz.track(func() error { return controllermanager.Run(ctx, cs, restCfg, cmCfg) }), nil
	})
	return nil
}

// ensureNodeBootstrapBindings creates, as kubeadm does (they are not
// Kubernetes' defaults), the bindings that let a kubelet holding a
// bootstrap token ask for its client certificate and have it
// auto-approved, and let nodes renew theirs.
func (c *Cluster) ensureNodeBootstrapBindings(ctx context.Context) error {
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return fmt.Errorf("building admin client: %w", err)
	}
	for _, b := range bootstrappolicy.NodeBootstrapBindings() {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", b.Name, err)
		}
	}
	return nil
}

// startScheduler runs the default scheduler in-process. Its client is not
// throttled the way a stock kube-scheduler's is (50 QPS): binding
// throughput is what it is measured on.
func (c *Cluster) startScheduler(ctx context.Context, cfg Config) error {
	_, cs, err := c.componentClient(filepath.Join(cfg.DataDir, "pki"), cfg.DataDir, "scheduler", SchedulerUser, nil, 5000, 10000, nil)
	if err != nil {
		return err
	}
	// With simulated nodes, the scheduler's pod cache is their shared pod
	// informer (nodes.go).
	build := func() (func() error, error) {
		s, err := scheduler.New(ctx, cs, scheduler.Config{Logger: cfg.Logger, PodInformer: c.sharedPods(), PodTrace: cfg.PodTrace})
		if err != nil {
			return nil, fmt.Errorf("building scheduler: %w", err)
		}
		return c.schedulerHealthz.track(func() error { return s.Run(ctx) }), nil
	}
	run, err := build()
	if err != nil {
		return err
	}
	first := true
	c.goRunRestarting(ctx, &c.compsWG, "scheduler", cfg.Logger, func() (func() error, error) {
		if first { // built above, so that a configuration error stops Start
			first = false
			return run, nil
		}
		return build()
	})
	return nil
}

// Kubelet returns the simulated kubelet of node name, or nil.
func (c *Cluster) Kubelet(name string) *kubelet.Kubelet {
	for _, k := range c.kubelets {
		if k.NodeName() == name {
			return k
		}
	}
	return nil
}

// goRunRestarting runs a leader-elected component as its supervisor would
// in a kubeadm cluster (a static pod the kubelet restarts): when it stops
// because it lost its Lease — under CPU starvation a renewal can miss its
// 10 s deadline with no other candidate around — start builds it again and
// the new instance rejoins the election on fresh caches, instead of the
// whole cluster stopping. Any other error stops the cluster, as goRun's.
// Restarts wait restartDelay, doubling to 10 s as the kubelet's back-off
// does but starting lower, and log at Warn.
func (c *Cluster) goRunRestarting(ctx context.Context, wg *sync.WaitGroup, name string, log *slog.Logger, start func() (run func() error, err error)) {
	c.goRun(wg, name, func() error {
		delay := restartDelay
		for {
			run, err := start()
			if err != nil {
				return err
			}
			err = run()
			if ctx.Err() != nil || !lostLeadership(err) {
				return err
			}
			log.Warn("component lost its leader election; restarting it", "component", name, "after", delay)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			delay = min(2*delay, 10*time.Second)
		}
	})
}

// restartDelay is goRunRestarting's first wait.
var restartDelay = time.Second

// lostLeadership reports whether err says a component lost its Lease.
func lostLeadership(err error) bool {
	return errors.Is(err, scheduler.ErrLostLeadership) || errors.Is(err, controllermanager.ErrLostLeadership)
}
