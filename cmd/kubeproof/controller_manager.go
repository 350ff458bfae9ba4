package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
	"github.com/kubeproof/kubeproof/impl/secureserving"
)

// newControllerManagerCommand is `kubeproof controller-manager`: the
// Deployment, ReplicaSet, garbage-collector, namespace and node-lifecycle
// controllers as their own process against any API server. Flag names are
// kube-controller-manager's.
func newControllerManagerCommand() *cobra.Command {
	cfg := controllermanager.DefaultConfig()
	var (
		kubeconfig string
		rootCAFile string
		saKeyFile  string
		signCert   string
		signKey    string
		qps        float32
		burst      int
		logOpts    logOptions
		secure     = secureserving.NewOptions(10257, "kube-controller-manager")
		// Node IPAM's flags, which kubeadm passes: accepted, and
		// --allocate-node-cidrs warned about (no node-ipam-controller).
		allocateNodeCIDRs                          bool
		clusterCIDR, clusterName, serviceClusterIP string
	)
	cmd := &cobra.Command{
		Use:   "controller-manager --kubeconfig FILE",
		Short: "Run the controllers: deployment, replicaset, garbagecollector, namespace, nodelifecycle, resourcequota, disruption, serviceaccount-token, legacy-service-account-token-cleaner, serviceaccount, root-ca-cert-publisher, csrapproving, csrsigning, csrcleaner",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logOpts.logger()
			if err != nil {
				return err
			}
			controllers, unimplemented, errs := controllermanager.NormalizeControllers(cfg.Controllers)
			if err := utilerrors.NewAggregate(errs); err != nil {
				return err
			}
			if allocateNodeCIDRs {
				logger.Warn("--allocate-node-cidrs: kubeproof has no node-ipam-controller, nodes get no spec.podCIDRs from --cluster-cidr", "clusterCIDR", clusterCIDR)
			}
			if len(unimplemented) > 0 {
				logger.Warn("--controllers names controllers kube-controller-manager runs and kubeproof does not have; starting the others", "controllers", unimplemented)
			}
			cfg.Controllers = controllers
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			// The bundle published as kube-root-ca.crt: --root-ca-file, or
			// the CA the kubeconfig trusts for the API server.
			switch {
			case rootCAFile != "":
				if cfg.RootCA, err = os.ReadFile(rootCAFile); err != nil {
					return fmt.Errorf("reading --root-ca-file: %w", err)
				}
			case len(restConfig.CAData) > 0:
				cfg.RootCA = restConfig.CAData
			case restConfig.CAFile != "":
				if cfg.RootCA, err = os.ReadFile(restConfig.CAFile); err != nil {
					return fmt.Errorf("reading the kubeconfig's certificate authority: %w", err)
				}
			}
			if cfg.LegacyServiceAccountTokenCleanUpPeriod <= 0 {
				return fmt.Errorf("invalid --legacy-service-account-token-clean-up-period %v: must be positive", cfg.LegacyServiceAccountTokenCleanUpPeriod)
			}
			if saKeyFile != "" {
				if cfg.ServiceAccountPrivateKey, err = auth.LoadSigningKey(saKeyFile); err != nil {
					return fmt.Errorf("reading --service-account-private-key-file: %w", err)
				}
			}
			if signCert != "" || signKey != "" {
				if cfg.ClusterSigningCert, err = os.ReadFile(signCert); err != nil {
					return fmt.Errorf("reading --cluster-signing-cert-file: %w", err)
				}
				if cfg.ClusterSigningKey, err = os.ReadFile(signKey); err != nil {
					return fmt.Errorf("reading --cluster-signing-key-file: %w", err)
				}
			}
			restConfig.QPS, restConfig.Burst = qps, burst
			restConfig.UserAgent = "kubeproof-controller-manager"
			controllermanager.QuietWarnings(restConfig)
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return fmt.Errorf("creating client: %w", err)
			}
			if cfg.SecureServing, err = secureserving.New(cmd.Context(), secure, logger); err != nil {
				return err
			}
			return controllermanager.Run(cmd.Context(), client, restConfig, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig file for the API server (empty: in-cluster config)")
	f.StringSliceVar(&cfg.Controllers, "controllers", cfg.Controllers, "controllers to enable: '*' all on-by-default controllers, 'foo' the controller named 'foo', '-foo' not it (the first entry naming a controller decides). Names are kube-controller-manager's canonical names and aliases, all accepted; kubeproof runs "+strings.Join(controllermanager.AllControllers, ", ")+" and warns about the others an entry enables.\nAll controllers: "+strings.Join(controllermanager.UpstreamControllerNames(), ", ")+"\nDisabled-by-default controllers: "+strings.Join(controllermanager.UpstreamControllersDisabledByDefault(), ", "))
	f.BoolVar(&cfg.UseServiceAccountCredentials, "use-service-account-credentials", cfg.UseServiceAccountCredentials, "each controller writes as its own kube-system service account (tokens from the TokenRequest API), so RBAC grants it only its system:controller:<name> role")
	f.StringVar(&rootCAFile, "root-ca-file", "", "PEM bundle published to every namespace as the kube-root-ca.crt ConfigMap and written as ca.crt into service account token secrets (default: the kubeconfig's certificate authority)")
	f.StringVar(&saKeyFile, "service-account-private-key-file", "", "PEM private key that signs the tokens of kubernetes.io/service-account-token Secrets (without it the serviceaccount-token controller does not run)")
	f.IntVar(&cfg.ConcurrentSATokenSyncs, "concurrent-serviceaccount-token-syncs", cfg.ConcurrentSATokenSyncs, "service account token secrets synced at once")
	f.DurationVar(&cfg.LegacyServiceAccountTokenCleanUpPeriod, "legacy-service-account-token-clean-up-period", cfg.LegacyServiceAccountTokenCleanUpPeriod, "how long an auto-generated legacy service account token goes unused before it is labelled invalid, and then before it is deleted")
	f.StringVar(&signCert, "cluster-signing-cert-file", "", "PEM CA certificate the csrsigning controller issues kubelet client certificates with (with --cluster-signing-key-file; without both it does not run)")
	f.StringVar(&signKey, "cluster-signing-key-file", "", "PEM private key of --cluster-signing-cert-file")
	f.DurationVar(&cfg.ClusterSigningDuration, "cluster-signing-duration", 365*24*time.Hour, "longest lifetime of an issued certificate")
	f.IntVar(&cfg.ConcurrentServiceAccountSyncs, "concurrent-serviceaccount-syncs", cfg.ConcurrentServiceAccountSyncs, "namespaces whose default ServiceAccount and kube-root-ca.crt are synced at once")
	f.IntVar(&cfg.ConcurrentResourceQuotaSyncs, "concurrent-resource-quota-syncs", cfg.ConcurrentResourceQuotaSyncs, "resource quotas synced at once")
	f.IntVar(&cfg.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", cfg.TerminatedPodGCThreshold, "terminated pods that may exist before the pod garbage collector deletes the oldest (0 or less: never)")
	f.DurationVar(&cfg.ResourceQuotaSyncPeriod, "resource-quota-sync-period", cfg.ResourceQuotaSyncPeriod, "how often every quota's usage is recounted")
	f.BoolVar(&cfg.LeaderElect, "leader-elect", cfg.LeaderElect, "elect a leader through a coordination.k8s.io Lease before running the controllers")
	f.DurationVar(&cfg.Election.LeaseDuration, "leader-elect-lease-duration", cfg.Election.LeaseDuration, "how long a non-leader waits before trying to take an unrenewed lease")
	f.DurationVar(&cfg.Election.RenewDeadline, "leader-elect-renew-deadline", cfg.Election.RenewDeadline, "how long the leader retries renewing before giving up")
	f.DurationVar(&cfg.Election.RetryPeriod, "leader-elect-retry-period", cfg.Election.RetryPeriod, "how long candidates wait between attempts")
	f.StringVar(&cfg.Election.Namespace, "leader-elect-resource-namespace", cfg.Election.Namespace, "namespace of the leader-election Lease")
	f.StringVar(&cfg.Election.Name, "leader-elect-resource-name", cfg.Election.Name, "name of the leader-election Lease")
	f.IntVar(&cfg.ConcurrentDeploymentSyncs, "concurrent-deployment-syncs", cfg.ConcurrentDeploymentSyncs, "Deployments synced at once")
	f.IntVar(&cfg.ConcurrentReplicaSetSyncs, "concurrent-replicaset-syncs", cfg.ConcurrentReplicaSetSyncs, "ReplicaSets synced at once")
	f.IntVar(&cfg.ConcurrentGCSyncs, "concurrent-gc-syncs", cfg.ConcurrentGCSyncs, "garbage collector workers")
	f.IntVar(&cfg.ConcurrentEndpointSyncs, "concurrent-endpoint-syncs", cfg.ConcurrentEndpointSyncs, "services whose Endpoints are synced at once")
	f.IntVar(&cfg.ConcurrentServiceEndpointSyncs, "concurrent-service-endpoint-syncs", cfg.ConcurrentServiceEndpointSyncs, "services whose EndpointSlices are synced at once")
	f.IntVar(&cfg.MaxEndpointsPerSlice, "max-endpoints-per-slice", cfg.MaxEndpointsPerSlice, "the most endpoints one EndpointSlice holds (1-1000)")
	f.IntVar(&cfg.MirroringConcurrentServiceEndpointSyncs, "mirroring-concurrent-service-endpoint-syncs", cfg.MirroringConcurrentServiceEndpointSyncs, "Endpoints mirrored into EndpointSlices at once")
	f.IntVar(&cfg.MirroringMaxEndpointsPerSubset, "mirroring-max-endpoints-per-subset", cfg.MirroringMaxEndpointsPerSubset, "the most addresses of one Endpoints subset mirrored into EndpointSlices")
	f.DurationVar(&cfg.EndpointSliceUpdatesBatchPeriod, "endpointslice-updates-batch-period", cfg.EndpointSliceUpdatesBatchPeriod, "how long the EndpointSlice controller delays the sync a pod change causes, writing the pod changes of that window together (0: no delay)")
	f.DurationVar(&cfg.MirroringEndpointSliceUpdatesBatchPeriod, "mirroring-endpointslice-updates-batch-period", cfg.MirroringEndpointSliceUpdatesBatchPeriod, "how long the EndpointSliceMirroring controller delays the sync an Endpoints change causes (0: no delay)")
	f.DurationVar(&cfg.EndpointUpdatesBatchPeriod, "endpoint-updates-batch-period", cfg.EndpointUpdatesBatchPeriod, "how long the endpoints controller delays the sync a pod change causes, writing the pod changes of that window in one update (0: no delay)")
	f.IntVar(&cfg.ConcurrentNamespaceSyncs, "concurrent-namespace-syncs", cfg.ConcurrentNamespaceSyncs, "namespaces deleted at once")
	f.DurationVar(&cfg.NodeMonitorPeriod, "node-monitor-period", cfg.NodeMonitorPeriod, "how often node health is checked")
	f.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", cfg.NodeMonitorGracePeriod, "how long a node may go without a Lease renewal or status heartbeat before it is Unknown")
	f.DurationVar(&cfg.NodeStartupGracePeriod, "node-startup-grace-period", cfg.NodeStartupGracePeriod, "the same for a node that never posted status")
	f.Int64Var(&cfg.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", cfg.DefaultNotReadyTolerationSeconds, "tolerationSeconds assumed for pods with no toleration for node.kubernetes.io/not-ready:NoExecute (as the DefaultTolerationSeconds admission adds; negative: none)")
	f.Int64Var(&cfg.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", cfg.DefaultUnreachableTolerationSeconds, "the same for node.kubernetes.io/unreachable:NoExecute")
	f.Float32Var(&cfg.NodeEvictionRate, "node-eviction-rate", cfg.NodeEvictionRate, "nodes per second per zone that get a NoExecute taint (and so lose their pods) when the zone is healthy")
	f.Float32Var(&cfg.SecondaryNodeEvictionRate, "secondary-node-eviction-rate", cfg.SecondaryNodeEvictionRate, "the same when the zone is unhealthy (zones of at most --large-cluster-size-threshold nodes stop instead)")
	f.Float32Var(&cfg.UnhealthyZoneThreshold, "unhealthy-zone-threshold", cfg.UnhealthyZoneThreshold, "fraction of not-Ready nodes (at least 3) that makes a zone unhealthy")
	f.Int32Var(&cfg.LargeClusterSizeThreshold, "large-cluster-size-threshold", cfg.LargeClusterSizeThreshold, "zones larger than this keep evicting at the secondary rate when unhealthy")
	f.DurationVar(&cfg.ResyncPeriod, "min-resync-period", 0, "informer resync period (0: none)")
	f.BoolVar(&allocateNodeCIDRs, "allocate-node-cidrs", false, "kube-controller-manager's node IPAM switch; accepted, but kubeproof has no node-ipam-controller (a warning when true)")
	f.StringVar(&clusterCIDR, "cluster-cidr", "", "CIDR range of pods, for node IPAM (accepted, unused: no node-ipam-controller)")
	f.StringVar(&clusterName, "cluster-name", "kubernetes", "instance prefix of the cluster, for cloud providers (accepted, unused)")
	f.StringVar(&serviceClusterIP, "service-cluster-ip-range", "", "CIDR range of services, for node IPAM (accepted, unused: no node-ipam-controller)")
	secure.AddFlags(f)
	f.StringVar(&cfg.MetricsAddr, "metrics-bind-address", "", "kubeproof only (kube-controller-manager has no such flag): also serve /metrics and /healthz over plain HTTP, unauthenticated, at this address; empty: not")
	f.Float32Var(&qps, "kube-api-qps", 50, "API client queries per second")
	f.IntVar(&burst, "kube-api-burst", 100, "API client burst")
	logOpts.addFlags(f)
	return cmd
}
