package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kcv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// `kubeproof kubelet --config FILE` reads a KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) as upstream's kubelet does: the file is
// decoded strictly (an unknown or duplicate field falls back to a lenient
// decode with a warning), its relative paths are made relative to the
// file's directory, the fields kubeproof implements become the values of
// their flags unless the flag was given on the command line (a flag given
// there wins, as upstream's kubeletConfigFlagPrecedence), fields left out
// take upstream's v1beta1 defaults, and the result, the command line's
// values included, is validated with upstream's messages
// (kubeletconfig_validation.go). Fields kubeproof does not implement are
// named in a start-up warning when the file sets them to anything but
// upstream's default.

// kubeletConfigField maps one KubeletConfiguration field onto the flag of
// `kubeproof kubelet` that implements it.
type kubeletConfigField struct {
	// path is the field's JSON path (authentication.x509.clientCAFile).
	path string
	// flag is the flag it sets; aliases are flags of the same variable.
	flag    string
	aliases []string
	// value is the flag's value the configuration gives: the file's, or
	// upstream's v1beta1 default where it differs from the flag's default;
	// false leaves the flag as it is.
	value func(*kcv1beta1.KubeletConfiguration) (string, bool)
	// kind is how the flag's value is written back into the field, to
	// validate the configuration the kubelet runs with (the file's, its
	// drop-ins' and the command line's, as upstream's after
	// kubeletConfigFlagPrecedence); none for a flag upstream does not
	// have whose default is not the field's.
	kind flagKind
	// merge: the command line's value is applied over the file's rather
	// than instead of it (feature gates).
	merge bool
}

// flagKind is the JSON a flag's value is for its field.
type flagKind int

const (
	kindNone       flagKind = iota
	kindText                // a string
	kindInteger             // a number (a fraction dropped)
	kindBool                // true or false
	kindDuration            // a duration, as the flag prints it
	kindSeconds             // a duration flag of a field in whole seconds
	kindList                // comma-separated strings
	kindThresholds          // signal<quantity pairs
	kindPairs               // key=value pairs
	kindGates               // name=bool pairs
)

func durationValue(d time.Duration) (string, bool) { return d.String(), d != 0 }

// orDefault is s, or def when the file leaves the field out.
func orDefault(s, def string) (string, bool) {
	if s == "" {
		return def, true
	}
	return s, true
}

func boolPtr(b *bool) (string, bool) {
	if b == nil {
		return "", false
	}
	return strconv.FormatBool(*b), true
}

func boolPtrOr(b *bool, def bool) (string, bool) {
	if b == nil {
		return strconv.FormatBool(def), true
	}
	return strconv.FormatBool(*b), true
}

func int32Ptr(p *int32) (string, bool) {
	if p == nil {
		return "", false
	}
	return strconv.Itoa(int(*p)), true
}

func nonZero[T int32 | int64](n T) (string, bool) { return strconv.FormatInt(int64(n), 10), n != 0 }

func listValue(l []string) (string, bool) { return strings.Join(l, ","), l != nil }

// pairsValue is m as sep-separated key and value pairs, in key order.
func pairsValue(m map[string]string, sep string) (string, bool) {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+sep+m[k])
	}
	return strings.Join(out, ","), len(m) > 0
}

// kubeletConfigFields is every KubeletConfiguration field kubeproof
// implements, with its flag: the one place the file and the command line
// meet.
var kubeletConfigFields = []kubeletConfigField{
	// enableServer: false is a kubelet without its API, whatever its port.
	{path: "enableServer", flag: "enable-server", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return boolPtr(c.EnableServer) }},
	{path: "port", flag: "port", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return nonZero(c.Port) }},
	{path: "address", flag: "address", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.Address, c.Address != "" }},
	{path: "tlsCertFile", flag: "tls-cert-file", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.TLSCertFile, c.TLSCertFile != "" }},
	{path: "tlsPrivateKeyFile", flag: "tls-private-key-file", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.TLSPrivateKeyFile, c.TLSPrivateKeyFile != ""
	}},
	{path: "authentication.x509.clientCAFile", flag: "client-ca-file", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.Authentication.X509.ClientCAFile, c.Authentication.X509.ClientCAFile != ""
	}},
	// v1beta1's defaults for these three are not the flags': a file
	// without them authenticates tokens, refuses anonymous requests and
	// authorizes every request with a SubjectAccessReview.
	{path: "authentication.webhook.enabled", flag: "authentication-token-webhook", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return boolPtrOr(c.Authentication.Webhook.Enabled, true)
	}},
	{path: "authentication.anonymous.enabled", flag: "anonymous-auth", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return boolPtrOr(c.Authentication.Anonymous.Enabled, false)
	}},
	{path: "authorization.mode", flag: "authorization-mode", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return orDefault(string(c.Authorization.Mode), string(kcv1beta1.KubeletAuthorizationModeWebhook))
	}},
	{path: "syncFrequency", flag: "sync-frequency", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		// kubeproof's flag defaults to 20s; v1beta1's is 1m.
		if c.SyncFrequency.Duration == 0 {
			return time.Minute.String(), true
		}
		return c.SyncFrequency.Duration.String(), true
	}},
	{path: "nodeStatusUpdateFrequency", flag: "node-status-update-frequency", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return durationValue(c.NodeStatusUpdateFrequency.Duration)
	}},
	{path: "nodeStatusReportFrequency", flag: "node-status-report-frequency", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		// As v1beta1's defaulting: left out, it follows an explicit
		// nodeStatusUpdateFrequency.
		if c.NodeStatusReportFrequency.Duration == 0 {
			return durationValue(c.NodeStatusUpdateFrequency.Duration)
		}
		return durationValue(c.NodeStatusReportFrequency.Duration)
	}},
	{path: "nodeLeaseDurationSeconds", flag: "node-lease-duration", kind: kindSeconds, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return durationValue(time.Duration(c.NodeLeaseDurationSeconds) * time.Second)
	}},
	{path: "maxPods", flag: "max-pods", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return nonZero(c.MaxPods) }},
	{path: "podCIDR", flag: "pod-cidr", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.PodCIDR, c.PodCIDR != "" }},
	{path: "podLogsDir", flag: "pod-logs-dir", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.PodLogsDir, c.PodLogsDir != "" }},
	{path: "kubeAPIQPS", flag: "kube-api-qps", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return int32Ptr(c.KubeAPIQPS) }},
	{path: "kubeAPIBurst", flag: "kube-api-burst", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return nonZero(c.KubeAPIBurst) }},
	{path: "clusterDomain", flag: "cluster-domain", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.ClusterDomain, c.ClusterDomain != "" }},
	{path: "clusterDNS", flag: "cluster-dns", kind: kindList, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return listValue(c.ClusterDNS) }},
	{path: "resolvConf", flag: "resolv-conf", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		if c.ResolverConfig == nil {
			return "", false
		}
		return *c.ResolverConfig, true
	}},
	{path: "containerRuntimeEndpoint", flag: "container-runtime-endpoint", aliases: []string{"cri-endpoint"}, kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.ContainerRuntimeEndpoint, c.ContainerRuntimeEndpoint != ""
	}},
	{path: "imageMinimumGCAge", flag: "minimum-image-ttl-duration", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return durationValue(c.ImageMinimumGCAge.Duration)
	}},
	{path: "imageMaximumGCAge", flag: "image-maximum-gc-age", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return durationValue(c.ImageMaximumGCAge.Duration)
	}},
	{path: "imageGCHighThresholdPercent", flag: "image-gc-high-threshold", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return int32Ptr(c.ImageGCHighThresholdPercent)
	}},
	{path: "imageGCLowThresholdPercent", flag: "image-gc-low-threshold", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return int32Ptr(c.ImageGCLowThresholdPercent)
	}},
	{path: "cgroupRoot", flag: "cgroup-root", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return c.CgroupRoot, c.CgroupRoot != "" }},
	{path: "singleProcessOOMKill", flag: "single-process-oom-kill", value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return boolPtr(c.SingleProcessOOMKill)
	}},
	{path: "podPidsLimit", flag: "pod-max-pids", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		if c.PodPidsLimit == nil {
			return "", false
		}
		return strconv.FormatInt(max(*c.PodPidsLimit, -1), 10), true
	}},
	{path: "cpuCFSQuota", flag: "cpu-cfs-quota", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return boolPtr(c.CPUCFSQuota) }},
	{path: "cpuCFSQuotaPeriod", flag: "cpu-cfs-quota-period", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		if c.CPUCFSQuotaPeriod == nil {
			return "", false
		}
		return c.CPUCFSQuotaPeriod.Duration.String(), true
	}},
	{path: "evictionHard", flag: "eviction-hard", kind: kindThresholds, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		// Left out, the flag's default is upstream's; {} is none.
		v, _ := pairsValue(c.EvictionHard, "<")
		return v, c.EvictionHard != nil
	}},
	// Taken up with the file (loadedKubeletConfig), as upstream's.
	{path: "mergeDefaultEvictionSettings", flag: "eviction-hard", value: func(*kcv1beta1.KubeletConfiguration) (string, bool) { return "", false }},
	{path: "evictionSoft", flag: "eviction-soft", kind: kindThresholds, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return pairsValue(c.EvictionSoft, "<") }},
	{path: "evictionSoftGracePeriod", flag: "eviction-soft-grace-period", kind: kindPairs, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return pairsValue(c.EvictionSoftGracePeriod, "=")
	}},
	{path: "evictionMinimumReclaim", flag: "eviction-minimum-reclaim", kind: kindPairs, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return pairsValue(c.EvictionMinimumReclaim, "=")
	}},
	{path: "evictionPressureTransitionPeriod", flag: "eviction-pressure-transition-period", kind: kindDuration, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return durationValue(c.EvictionPressureTransitionPeriod.Duration)
	}},
	{path: "evictionMaxPodGracePeriod", flag: "eviction-max-pod-grace-period", kind: kindInteger, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return nonZero(c.EvictionMaxPodGracePeriod)
	}},
	{path: "failSwapOn", flag: "fail-swap-on", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return boolPtr(c.FailSwapOn) }},
	{path: "memorySwap.swapBehavior", flag: "memory-swap-behavior", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.MemorySwap.SwapBehavior, c.MemorySwap.SwapBehavior != ""
	}},
	{path: "systemReserved", flag: "system-reserved", kind: kindPairs, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return pairsValue(c.SystemReserved, "=") }},
	{path: "kubeReserved", flag: "kube-reserved", kind: kindPairs, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return pairsValue(c.KubeReserved, "=") }},
	{path: "systemReservedCgroup", flag: "system-reserved-cgroup", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.SystemReservedCgroup, c.SystemReservedCgroup != ""
	}},
	{path: "kubeReservedCgroup", flag: "kube-reserved-cgroup", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.KubeReservedCgroup, c.KubeReservedCgroup != ""
	}},
	{path: "enforceNodeAllocatable", flag: "enforce-node-allocatable", kind: kindList, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return listValue(c.EnforceNodeAllocatable)
	}},
	{path: "allowedUnsafeSysctls", flag: "allowed-unsafe-sysctls", kind: kindList, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return listValue(c.AllowedUnsafeSysctls)
	}},
	{path: "seccompDefault", flag: "seccomp-default", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) { return boolPtr(c.SeccompDefault) }},
	// Certificate rotation: the client's (rotateCertificates) and the
	// kubelet API's requested serving certificate (serverTLSBootstrap).
	{path: "rotateCertificates", flag: "rotate-certificates", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return strconv.FormatBool(c.RotateCertificates), c.RotateCertificates
	}},
	{path: "serverTLSBootstrap", flag: "rotate-server-certificates", kind: kindBool, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return strconv.FormatBool(c.ServerTLSBootstrap), c.ServerTLSBootstrap
	}},
	{path: "imagePullCredentialsVerificationPolicy", flag: "image-pull-credentials-verification-policy", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return string(c.ImagePullCredentialsVerificationPolicy), c.ImagePullCredentialsVerificationPolicy != ""
	}},
	{path: "preloadedImagesVerificationAllowlist", flag: "preloaded-images-verification-allowlist", kind: kindList, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return listValue(c.PreloadedImagesVerificationAllowlist)
	}},
	{path: "logging.format", flag: "log-format", kind: kindText, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		return c.Logging.Format, c.Logging.Format != ""
	}},
	{path: "featureGates", flag: "feature-gates", kind: kindGates, merge: true, value: func(c *kcv1beta1.KubeletConfiguration) (string, bool) {
		gates := make(map[string]string, len(c.FeatureGates))
		for k, v := range c.FeatureGates {
			gates[k] = strconv.FormatBool(v)
		}
		return pairsValue(gates, "=")
	}},
}

// defaultEvictionHard is upstream's default evictionHard as a map.
func defaultEvictionHard() map[string]string {
	hard := map[string]string{}
	for stmt := range strings.SplitSeq(eviction.DefaultEvictionHard, ",") {
		if signal, v, ok := strings.Cut(stmt, "<"); ok {
			hard[signal] = v
		}
	}
	return hard
}

// kubeletConfigScheme knows kubelet.config.k8s.io/v1beta1 alone.
func kubeletConfigScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := kcv1beta1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering kubelet.config.k8s.io/v1beta1: %w", err)
	}
	return scheme, nil
}

// decodeKubeletConfig decodes a KubeletConfiguration as upstream's kubelet
// does: strictly, or, when only strictness fails (an unknown or duplicate
// field), leniently with a warning.
func decodeKubeletConfig(data []byte, logger *slog.Logger) (*kcv1beta1.KubeletConfiguration, error) {
	scheme, err := kubeletConfigScheme()
	if err != nil {
		return nil, err
	}
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, fmt.Errorf("failed to decode: %w", err)
		}
		var lenientErr error
		obj, gvk, lenientErr = serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(data, nil, nil)
		if lenientErr != nil {
			return nil, fmt.Errorf("failed lenient decoding: %w", err)
		}
		logger.Warn("using lenient decoding as strict decoding failed", "err", err)
	}
	kc, ok := obj.(*kcv1beta1.KubeletConfiguration)
	if !ok {
		return nil, fmt.Errorf("failed to cast object to KubeletConfiguration, unexpected type: %v", gvk)
	}
	return kc, nil
}

// loadKubeletConfigFile reads and decodes the file of --config, its
// relative paths made relative to its directory, with upstream's errors.
func loadKubeletConfigFile(path string, logger *slog.Logger) (*kcv1beta1.KubeletConfiguration, error) {
	kc, err := func() (*kcv1beta1.KubeletConfiguration, error) {
		// As upstream's: the file is named by its absolute path.
		path, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("failed to read kubelet config file %q, error: %w", path, err)
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("kubelet config file %q was empty", path)
		}
		kc, err := decodeKubeletConfig(data, logger)
		if err != nil {
			return nil, err
		}
		dir := filepath.Dir(path)
		for _, p := range []*string{&kc.StaticPodPath, &kc.Authentication.X509.ClientCAFile, &kc.TLSCertFile,
			&kc.TLSPrivateKeyFile, kc.ResolverConfig, &kc.VolumePluginDir, &kc.PodLogsDir} {
			if p != nil && *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
		return kc, nil
	}()
	if err != nil {
		return nil, fmt.Errorf("failed to load kubelet config file, path: %s, error: failed to load Kubelet config file %s, error %w", path, path, err)
	}
	return kc, nil
}

// applyKubeletConfig sets the flags of fs from kc, except those given on
// the command line; merged flags get the command line's value over the
// file's. It returns the flags the file set.
func applyKubeletConfig(fs *pflag.FlagSet, kc *kcv1beta1.KubeletConfiguration) (map[string]bool, error) {
	fromFile := map[string]bool{}
	for _, f := range kubeletConfigFields {
		v, ok := f.value(kc)
		if !ok || fromFile[f.flag] {
			continue
		}
		fl := fs.Lookup(f.flag)
		if fl == nil {
			return nil, fmt.Errorf("kubelet configuration field %s: no flag --%s", f.path, f.flag)
		}
		given := slices.ContainsFunc(append([]string{f.flag}, f.aliases...), fs.Changed)
		if given && !f.merge {
			continue
		}
		cmdline := fl.Value.String()
		if n, ok := fl.Value.(interface{ namedString() string }); ok {
			// Only what the command line named goes over the file's.
			cmdline = n.namedString()
		}
		if sv, isSlice := fl.Value.(pflag.SliceValue); isSlice {
			// A list's Set appends once the flag was set; the file's
			// list replaces the default.
			var items []string
			if v != "" {
				items = strings.Split(v, ",")
			}
			if err := sv.Replace(items); err != nil {
				return nil, fmt.Errorf("kubelet configuration field %s: %w", f.path, err)
			}
		} else if err := fl.Value.Set(v); err != nil {
			return nil, fmt.Errorf("kubelet configuration field %s: %w", f.path, err)
		}
		if given {
			if err := fl.Value.Set(cmdline); err != nil {
				return nil, fmt.Errorf("--%s: %w", f.flag, err)
			}
		}
		fromFile[f.flag] = true
	}
	return fromFile, nil
}

// kubeletConfigDefaults are upstream's v1beta1 defaults of the fields
// kubeproof does not implement, as their JSON leaves: a file setting one
// of them to its default changes nothing.
var kubeletConfigDefaults = map[string]any{
	"fileCheckFrequency":                         "20s",
	"httpCheckFrequency":                         "20s",
	"authentication.webhook.cacheTTL":            "2m0s",
	"authorization.webhook.cacheAuthorizedTTL":   "5m0s",
	"authorization.webhook.cacheUnauthorizedTTL": "30s",
	"registryPullQPS":                            5.0,
	"registryBurst":                              10.0,
	"eventRecordQPS":                             50.0,
	"eventBurst":                                 100.0,
	"enableDebuggingHandlers":                    true,
	"healthzPort":                                10248.0,
	"healthzBindAddress":                         "127.0.0.1",
	"oomScoreAdj":                                -999.0,
	"streamingConnectionIdleTimeout":             "4h0m0s",
	"volumeStatsAggPeriod":                       "1m0s",
	"cgroupsPerQOS":                              true,
	"cgroupDriver":                               "cgroupfs",
	"cpuManagerPolicy":                           "none",
	"cpuManagerReconcilePeriod":                  "10s",
	"memoryManagerPolicy":                        "None",
	"topologyManagerPolicy":                      "none",
	"topologyManagerScope":                       "container",
	"runtimeRequestTimeout":                      "2m0s",
	"hairpinMode":                                "promiscuous-bridge",
	"nodeStatusMaxImages":                        50.0,
	"maxOpenFiles":                               1000000.0,
	"contentType":                                "application/vnd.kubernetes.protobuf",
	"serializeImagePulls":                        true,
	"enableControllerAttachDetach":               true,
	"makeIPTablesUtilChains":                     true,
	"iptablesMasqueradeBit":                      14.0,
	"iptablesDropBit":                            15.0,
	"containerLogMaxSize":                        "10Mi",
	"containerLogMaxFiles":                       5.0,
	"containerLogMaxWorkers":                     1.0,
	"containerLogMonitorInterval":                "10s",
	"configMapAndSecretChangeDetectionStrategy":  "Watch",
	"volumePluginDir":                            "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
	"logging.format":                             "text",
	"logging.flushFrequency":                     "5s",
	"logging.verbosity":                          0.0,
	"logging.options.json.infoBufferSize":        "0",
	"logging.options.text.infoBufferSize":        "0",
	"enableSystemLogHandler":                     true,
	"enableProfilingHandler":                     true,
	"enableDebugFlagsHandler":                    true,
	"failCgroupV1":                               false,
	"memoryThrottlingFactor":                     0.9,
	"registerNode":                               true,
	"localStorageCapacityIsolation":              true,
	"crashLoopBackOff.maxContainerRestartPeriod": "5m0s",
	"shutdownGracePeriod":                        "0s",
	"shutdownGracePeriodCriticalPods":            "0s",
	"imageServiceEndpoint":                       "",
	"memoryReservationPolicy":                    "None",
}

// kubeletConfigRefused are the fields whose being ignored would leave the
// kubelet less secure than the file asks: set to anything but upstream's
// default, the kubelet does not start.
var kubeletConfigRefused = []string{"tlsMinVersion", "tlsCipherSuites", "tlsCurvePreferences", "enableDebuggingHandlers"}

// ignoredKubeletConfigFields are the fields kc sets, other than to
// upstream's default, that kubeproof does not implement: path=value, in
// path order.
func ignoredKubeletConfigFields(kc *kcv1beta1.KubeletConfiguration) ([]string, error) {
	data, err := json.Marshal(kc)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubelet configuration: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("encoding the kubelet configuration: %w", err)
	}
	delete(doc, "apiVersion")
	delete(doc, "kind")
	var out []string
	var walk func(prefix string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, sub := range m {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, sub)
			}
			return
		}
		// logging.flushFrequency marshals a zero (unset) duration as 0.
		if kubeletConfigMapped(path) || unsetLeaf(v) || (path == "logging.flushFrequency" && v == 0.0) {
			return
		}
		if def, ok := kubeletConfigDefaults[path]; ok && reflect.DeepEqual(def, v) {
			return
		}
		enc, _ := json.Marshal(v)
		out = append(out, path+"="+string(enc))
	}
	walk("", doc)
	slices.Sort(out)
	return out, nil
}

// kubeletConfigMapped: the field at path (or the map or structure it is
// in) is one of kubeletConfigFields.
func kubeletConfigMapped(path string) bool {
	return slices.ContainsFunc(kubeletConfigFields, func(f kubeletConfigField) bool {
		return path == f.path || strings.HasPrefix(path, f.path+".")
	})
}

// unsetLeaf: a value v1beta1's defaulting replaces (or an empty one).
func unsetLeaf(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == "" || v == "0s"
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// checkIgnoredKubeletConfig warns of each field kubeproof ignores, and
// refuses those of kubeletConfigRefused.
func checkIgnoredKubeletConfig(kc *kcv1beta1.KubeletConfiguration, logger *slog.Logger) error {
	ignored, err := ignoredKubeletConfigFields(kc)
	if err != nil {
		return err
	}
	var refused []string
	for _, f := range ignored {
		path, value, _ := strings.Cut(f, "=")
		if slices.Contains(kubeletConfigRefused, path) {
			refused = append(refused, f)
			continue
		}
		logger.Warn("kubelet configuration field not implemented by kubeproof, ignored", "field", path, "value", value)
	}
	if len(refused) > 0 {
		return fmt.Errorf("kubelet configuration fields not implemented by kubeproof, which would leave the kubelet less secure than configured: %s", strings.Join(refused, ", "))
	}
	return nil
}

// useKubeletConfigFile is --config and --config-dir, as upstream's
// kubelet: the file loaded, the directory's drop-ins merged over it, the
// command line over both, the result checked once, and its values given
// to the flags the command line did not set. It returns the flags the
// configuration set.
func useKubeletConfigFile(fs *pflag.FlagSet, path, dropInDir string, logger *slog.Logger) (map[string]bool, error) {
	var kc *kcv1beta1.KubeletConfiguration
	if path != "" {
		var err error
		if kc, err = loadKubeletConfigFile(path, logger); err != nil {
			return nil, err
		}
		kc = loadedKubeletConfig(kc)
	} else {
		// As upstream's: without --config the drop-ins go over the
		// flags' configuration, whose defaults are not all v1beta1's.
		kc = flagsKubeletConfig(fs)
	}
	if dropInDir != "" {
		merged, err := mergeKubeletConfigDropIns(kc, dropInDir)
		if err != nil {
			return nil, fmt.Errorf("failed to merge kubelet configs: %w", err)
		}
		kc = merged
	}
	name := path
	if name == "" {
		name = dropInDir
	}
	fromFile, err := applyKubeletConfig(fs, kc)
	if err != nil {
		return nil, fmt.Errorf("kubelet configuration %s: %w", name, err)
	}
	// The flags now hold what the kubelet runs with: the configuration
	// with the command line over it, checked as upstream checks it.
	final, err := kubeletConfigOfFlags(kc, fs)
	if err != nil {
		return nil, fmt.Errorf("kubelet configuration %s: %w", name, err)
	}
	if err := checkKubeletConfig(final); err != nil {
		return nil, err
	}
	if err := checkIgnoredKubeletConfig(final, logger); err != nil {
		return nil, fmt.Errorf("kubelet configuration %s: %w", name, err)
	}
	return fromFile, nil
}

// checkKubeletConfig is upstream's kubelet's check of the configuration
// it runs with, whether or not it came from --config or --config-dir: its
// logging format, then ValidateKubeletConfiguration inside its wrapper.
func checkKubeletConfig(kc *kcv1beta1.KubeletConfiguration) error {
	if err := checkKubeletLogFormat(kc); err != nil {
		return err
	}
	if err := validateKubeletConfig(kc); err != nil {
		// Upstream's kubelet formats its configuration object as the
		// "path", which prints as the object's empty TypeMeta.
		return fmt.Errorf("failed to validate kubelet configuration, error: %w, path: %s", err, &metav1.TypeMeta{})
	}
	return nil
}

// validateFlagsKubeletConfig is the check of a kubelet without --config
// or --config-dir, as upstream's, which validates the configuration of
// its flags in every case: the flags' configuration (flagsKubeletConfig,
// with every flag of kubeletConfigFields written into its field) checked
// as a file's is.
func validateFlagsKubeletConfig(fs *pflag.FlagSet) error {
	kc, err := kubeletConfigOfFlags(flagsKubeletConfig(fs), fs)
	if err != nil {
		return err
	}
	return checkKubeletConfig(kc)
}

// loadedKubeletConfig is kc as upstream's kubelet loads its file, before
// any drop-in: evictionHard upstream's defaults where the file leaves it
// out, or the file's with the defaults' other signals added when
// mergeDefaultEvictionSettings is true (loadConfigFile);
// nodeStatusReportFrequency v1beta1's default, from the file's
// nodeStatusUpdateFrequency (or 5m).
func loadedKubeletConfig(kc *kcv1beta1.KubeletConfiguration) *kcv1beta1.KubeletConfiguration {
	kc = kc.DeepCopy()
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = defaultEvictionHard()
	case kc.MergeDefaultEvictionSettings != nil && *kc.MergeDefaultEvictionSettings:
		for signal, v := range defaultEvictionHard() {
			if _, set := kc.EvictionHard[signal]; !set {
				kc.EvictionHard[signal] = v
			}
		}
	}
	if kc.NodeStatusReportFrequency.Duration == 0 {
		kc.NodeStatusReportFrequency.Duration = cmp.Or(kc.NodeStatusUpdateFrequency.Duration, 5*time.Minute)
	}
	return kc
}

// flagsKubeletConfig is the configuration of the flags whose v1beta1
// defaults are not the flags' (kubeletConfigFields' defaulted ones, the
// report frequency, which v1beta1 would take from a drop-in's update
// frequency, and the hard eviction thresholds, which v1beta1 leaves
// out): the base of drop-ins without --config.
func flagsKubeletConfig(fs *pflag.FlagSet) *kcv1beta1.KubeletConfiguration {
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	kc := &kcv1beta1.KubeletConfiguration{}
	anonymous, webhook := get("anonymous-auth") == "true", get("authentication-token-webhook") == "true"
	kc.Authentication.Anonymous.Enabled, kc.Authentication.Webhook.Enabled = &anonymous, &webhook
	kc.Authorization.Mode = kcv1beta1.KubeletAuthorizationMode(get("authorization-mode"))
	if d, err := time.ParseDuration(get("sync-frequency")); err == nil {
		kc.SyncFrequency.Duration = d
	}
	if d, err := time.ParseDuration(get("node-status-update-frequency")); err == nil {
		kc.NodeStatusUpdateFrequency.Duration = d
	}
	if d, err := time.ParseDuration(get("node-status-report-frequency")); err == nil {
		kc.NodeStatusReportFrequency.Duration = d
	}
	kc.EvictionHard = map[string]string{}
	for stmt := range strings.SplitSeq(get("eviction-hard"), ",") {
		if signal, v, ok := strings.Cut(stmt, "<"); ok {
			kc.EvictionHard[signal] = v
		}
	}
	return kc
}

// kubeletConfigOfFlags is kc with the values of kubeletConfigFields'
// flags written back into their fields: the configuration the kubelet
// runs with.
func kubeletConfigOfFlags(kc *kcv1beta1.KubeletConfiguration, fs *pflag.FlagSet) (*kcv1beta1.KubeletConfiguration, error) {
	doc, err := kubeletConfigJSON(kc)
	if err != nil {
		return nil, err
	}
	for _, f := range kubeletConfigFields {
		if f.kind == kindNone {
			continue
		}
		fl := fs.Lookup(f.flag)
		if fl == nil {
			return nil, fmt.Errorf("kubelet configuration field %s: no flag --%s", f.path, f.flag)
		}
		v, err := flagJSON(f.kind, flagString(fl))
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", f.flag, err)
		}
		setJSONPath(doc, strings.Split(f.path, "."), v)
	}
	return kubeletConfigOfJSON(doc)
}

// flagString is a flag's value as it is given: a list's items
// comma-separated, feature gates as pairs.
func flagString(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// flagJSON is a flag's value s as the JSON of its field.
func flagJSON(kind flagKind, s string) (any, error) {
	items := func() []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	switch kind {
	case kindInteger:
		f, err := strconv.ParseFloat(s, 64)
		return math.Trunc(f), err
	case kindBool:
		return strconv.ParseBool(s)
	case kindSeconds:
		d, err := time.ParseDuration(s)
		return math.Trunc(d.Seconds()), err
	case kindList:
		out := []any{}
		for _, item := range items() {
			out = append(out, item)
		}
		return out, nil
	case kindThresholds, kindPairs, kindGates:
		sep := map[flagKind]string{kindThresholds: "<", kindPairs: "=", kindGates: "="}[kind]
		out := map[string]any{}
		for _, item := range items() {
			// As upstream's map flags: blank items skipped (the flag
			// refused those it does not take), key and value trimmed.
			if strings.TrimSpace(item) == "" {
				continue
			}
			k, v, ok := strings.Cut(item, sep)
			if !ok {
				return nil, fmt.Errorf("%q: want key%svalue", item, sep)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			out[k] = v
			if kind == kindGates {
				on, err := strconv.ParseBool(v)
				if err != nil {
					return nil, err
				}
				out[k] = on
			}
		}
		return out, nil
	}
	return s, nil // kindText, kindDuration
}

// setJSONPath sets the member at path of doc, making the objects on the
// way.
func setJSONPath(doc map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := doc[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[k] = next
		}
		doc = next
	}
	doc[path[len(path)-1]] = v
}

// kubeletConfigJSON is kc as a JSON object (v1beta1's field names).
func kubeletConfigJSON(kc *kcv1beta1.KubeletConfiguration) (map[string]any, error) {
	data, err := json.Marshal(kc)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal base config: %w", err)
	}
	doc := map[string]any{}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("failed to marshal base config: %w", err)
	}
	return doc, nil
}

// kubeletConfigOfJSON decodes a JSON object into a KubeletConfiguration.
func kubeletConfigOfJSON(doc map[string]any) (*kcv1beta1.KubeletConfiguration, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("failed to unmarshal merged JSON into kubelet configuration: %w", err)
	}
	kc := &kcv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(data, kc); err != nil {
		return nil, fmt.Errorf("failed to unmarshal merged JSON into kubelet configuration: %w", err)
	}
	return kc, nil
}

// mergeKubeletConfigDropIns merges the drop-ins of dir (its files, in
// subdirectories too, named *.conf, in lexical order) over kc as
// upstream's --config-dir: kc written as v1beta1 JSON, each drop-in
// (loadKubeletConfigDropIn), which must be a kubelet.config.k8s.io/v1beta1
// KubeletConfiguration, applied to it as a JSON merge patch (objects and
// maps merged key by key, a null removing the member whoever set it,
// anything else replaced), the result decoded once and defaulted again,
// so a field a drop-in nulls or zeroes is v1beta1's default, a field
// v1beta1 does not have is dropped, and a value of the wrong type fails
// only if no later drop-in replaced it. evictionHard has no v1beta1
// default: taken away, there is no hard threshold.
func mergeKubeletConfigDropIns(kc *kcv1beta1.KubeletConfiguration, dir string) (*kcv1beta1.KubeletConfiguration, error) {
	doc, err := kubeletConfigJSON(kc)
	if err != nil {
		return nil, err
	}
	want := kcv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration")
	err = filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(d.Name()) != ".conf" {
			return nil
		}
		patch, gvk, err := loadKubeletConfigDropIn(path)
		switch {
		case err != nil:
			return fmt.Errorf("failed to load kubelet dropin file, path: %s, error: %w", path, err)
		case gvk.Empty():
			return fmt.Errorf("failed to load kubelet dropin file, path: %s, no apiVersion/kind", path)
		case gvk != want:
			return fmt.Errorf("failed to load kubelet dropin file, path: %s, unknown apiVersion/kind: %v", path, gvk)
		}
		doc, _ = mergePatch(doc, patch).(map[string]any)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to walk through kubelet dropin directory %q: %w", dir, err)
	}
	merged, err := kubeletConfigOfJSON(doc)
	if err != nil {
		return nil, err
	}
	// kubeletConfigFields' values give the other defaults.
	if merged.EvictionHard == nil {
		merged.EvictionHard = map[string]string{}
	}
	return merged, nil
}

// loadKubeletConfigDropIn reads a drop-in as upstream's kubelet does:
// decoded, YAML or JSON, into an unstructured object, so any field is
// taken (v1beta1's are picked once the drop-ins are merged) but a
// duplicate one is a strict decoding error; its apiVersion and kind are
// returned for the caller to check.
func loadKubeletConfigDropIn(path string) (map[string]any, schema.GroupVersionKind, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("failed to load drop-in kubelet config file %s, error %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("failed to read kubelet config file %q, error: %w", abs, err)
	}
	if len(data) == 0 {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("kubelet config file %q was empty", abs)
	}
	scheme, err := kubeletConfigScheme()
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	obj := &unstructured.Unstructured{}
	_, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, obj)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	if gvk == nil {
		return obj.Object, schema.GroupVersionKind{}, nil
	}
	return obj.Object, *gvk, nil
}

// mergePatch applies patch to doc as a JSON merge patch (RFC 7386): an
// object's members merged one by one, null removing one, anything else
// replacing.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}
