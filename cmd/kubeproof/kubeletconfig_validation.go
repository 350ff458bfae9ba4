package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kcv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
)

// The checks upstream's kubelet makes on its configuration once the
// command line is applied over the file and its drop-ins
// (ValidateKubeletConfiguration), with its messages, each naming the
// field (and its flag where it has one). They run on the fields kubeproof
// implements and on the range and option checks of those it does not;
// feature gates are 1.37's defaults (GracefulNodeShutdown and its
// pod-priority variant, KubeletCrashLoopBackOffMax and
// KubeletEnsureSecretPulledImages on, MemoryQoS, NodeLogQuery and
// LoggingAlphaOptions off), CustomCPUCFSQuotaPeriod the configuration's.

// checkKubeletLogFormat is upstream's check of the logging section, made
// when logging is set up, before the configuration's validation: format
// text or json, verbosity (of the whole and of each vmodule item) within
// int32, vmodule only with text and its file patterns given and without
// "=" or ",", and no option of the alpha LoggingAlphaOptions feature
// (splitStream, infoBufferSize), off. A negative flushFrequency is
// kubeproof's own refusal, worded in the same style: upstream's logging
// validation does not look at it, and its kubelet then hands it to klog's
// flush daemon, whose ticker panics on a non-positive interval.
func checkKubeletLogFormat(kc *kcv1beta1.KubeletConfiguration) error {
	c, path := &kc.Logging, field.NewPath("logging")
	var errs field.ErrorList
	// Left out (zero) it is v1beta1's default, 5s; not upstream's check
	// (see above).
	if c.FlushFrequency.Duration.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("flushFrequency"), c.FlushFrequency, "Must be greater than zero"))
	}
	switch c.Format {
	case "", "text", "json":
	default:
		errs = append(errs, field.Invalid(path.Child("format"), c.Format, "Unsupported log format"))
	}
	if c.Verbosity > math.MaxInt32 {
		errs = append(errs, field.Invalid(path.Child("verbosity"), c.Verbosity, fmt.Sprintf("Must be <= %d", math.MaxInt32)))
	}
	vmodule := path.Child("vmodule")
	if len(c.VModule) > 0 && c.Format != "" && c.Format != "text" {
		errs = append(errs, field.Forbidden(vmodule, "Only supported for text log format"))
	}
	for i, item := range c.VModule {
		if item.FilePattern == "" {
			errs = append(errs, field.Required(vmodule.Index(i), "File pattern must not be empty"))
		}
		if strings.ContainsAny(item.FilePattern, "=,") {
			errs = append(errs, field.Invalid(vmodule.Index(i), item.FilePattern, "File pattern must not contain equal sign or comma"))
		}
		if item.Verbosity > math.MaxInt32 {
			errs = append(errs, field.Invalid(vmodule.Index(i), item.Verbosity, fmt.Sprintf("Must be <= %d", math.MaxInt32)))
		}
	}
	const alpha = "Feature LoggingAlphaOptions is disabled"
	for _, o := range []struct {
		name        string
		splitStream bool
		infoBuffer  int64
	}{{"text", c.Options.Text.SplitStream, c.Options.Text.InfoBufferSize.Value()}, {"json", c.Options.JSON.SplitStream, c.Options.JSON.InfoBufferSize.Value()}} {
		if o.splitStream {
			errs = append(errs, field.Forbidden(path.Child("options", o.name, "splitStream"), alpha))
		}
		if o.infoBuffer != 0 {
			errs = append(errs, field.Forbidden(path.Child("options", o.name, "infoBufferSize"), alpha))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("initialize logging: %w", errs.ToAggregate())
	}
	return nil
}

// kubeletPreviousMinor is the only showHiddenMetricsForVersion upstream's
// 1.37 kubelet takes.
const kubeletPreviousMinor = "1.36"

// registerWithTaintsErrors are upstream's checks of registerWithTaints:
// each taint's key a qualified name, its value a label value, its effect
// one of the three (or none), the whole taint printed as Go prints it;
// and no timeAdded.
func registerWithTaintsErrors(taints []v1.Taint) []error {
	var errs []error
	for _, taint := range taints {
		bad := len(validation.IsQualifiedName(taint.Key)) > 0 ||
			taint.Value != "" && len(validation.IsValidLabelValue(taint.Value)) > 0
		switch taint.Effect {
		case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			bad = true
		}
		if bad {
			errs = append(errs, fmt.Errorf("invalid taint: %v", taint))
		}
		if taint.TimeAdded != nil {
			errs = append(errs, fmt.Errorf("invalid configuration: taint.TimeAdded is not nil"))
		}
	}
	return errs
}

// reservedMemoryErrors are upstream's checks of reservedMemory: per NUMA
// node, each limit memory or a huge page size, not zero, named once (a
// node's limits in name order; upstream goes through them in map order).
func reservedMemoryErrors(reserved []kcv1beta1.MemoryReservation) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("invalid configuration: "+format, args...))
	}
	seen := map[int32]map[v1.ResourceName]bool{}
	for _, r := range reserved {
		if seen[r.NumaNode] == nil {
			seen[r.NumaNode] = map[v1.ResourceName]bool{}
		}
		for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
			if name != v1.ResourceMemory && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				add("the limit type %q for NUMA node %d is not supported, only %v is accepted", name, r.NumaNode,
					[]v1.ResourceName{v1.ResourceMemory, v1.ResourceHugePagesPrefix + "<HugePageSize>"})
			}
			if q := r.Limits[name]; q.IsZero() {
				add("reserved memory may not be zero for NUMA node %d and resource %q", r.NumaNode, name)
			}
			if seen[r.NumaNode][name] {
				add("the reserved memory has a duplicate value for NUMA node %d and resource %q", r.NumaNode, name)
			}
			seen[r.NumaNode][name] = true
		}
	}
	return errs
}

// tracingErrors are upstream's checks of tracing: samplingRatePerMillion
// within 0 and a million, the endpoint a URL (dns:// when it names no
// scheme) of scheme dns, unix or unix-abstract.
func tracingErrors(kc *kcv1beta1.KubeletConfiguration) []error {
	t := kc.Tracing
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	path := field.NewPath("tracing")
	if r := t.SamplingRatePerMillion; r != nil {
		if *r < 0 {
			errs = append(errs, field.Invalid(path.Child("samplingRatePerMillion"), *r, "sampling rate must be positive"))
		}
		if *r > 1000000 {
			errs = append(errs, field.Invalid(path.Child("samplingRatePerMillion"), *r, "sampling rate per million must be less than or equal to one million"))
		}
	}
	if t.Endpoint != nil {
		endpoint := *t.Endpoint
		if !strings.Contains(endpoint, "//") {
			endpoint = "dns://" + endpoint
		}
		u, err := url.Parse(endpoint)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(path.Child("endpoint"), endpoint, err.Error()))
		case u.Scheme != "dns" && u.Scheme != "unix" && u.Scheme != "unix-abstract":
			errs = append(errs, field.Invalid(path.Child("endpoint"), endpoint,
				fmt.Sprintf("unsupported scheme: %v.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md", u.Scheme)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs.ToAggregate().Errors()
}

// orDefault32 is *p, or def when the field is left out.
func orDefault32(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// validateKubeletConfig checks kc as upstream's
// ValidateKubeletConfiguration: every error found, in upstream's order,
// one aggregate. Fields left out (nil or zero) are v1beta1's defaults.
func validateKubeletConfig(kc *kcv1beta1.KubeletConfiguration) error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("invalid configuration: "+format, args...))
		}
	}
	outside := func(v, lo, hi int32) bool { return v < lo || v > hi }

	check(kc.NodeLeaseDurationSeconds <= 0, "nodeLeaseDurationSeconds must be greater than 0")
	check(kc.SystemCgroups != "" && kc.CgroupRoot == "", "systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified")
	check(kc.EventBurst < 0, "eventBurst (--event-burst) %v must not be a negative number", kc.EventBurst)
	eventQPS := orDefault32(kc.EventRecordQPS, 50)
	check(eventQPS < 0, "eventRecordQPS (--event-qps) %v must not be a negative number", eventQPS)
	healthz := orDefault32(kc.HealthzPort, 10248)
	check(healthz != 0 && outside(healthz, 1, 65535), "healthzPort (--healthz-port) %v must be between 1 and 65535, inclusive", healthz)
	cfsPeriod := 100 * time.Millisecond
	if kc.CPUCFSQuotaPeriod != nil {
		cfsPeriod = kc.CPUCFSQuotaPeriod.Duration
	}
	customPeriod := kc.FeatureGates["CustomCPUCFSQuotaPeriod"]
	// Upstream prints the period as the metav1.Duration it is: {100ms}.
	check(!customPeriod && cfsPeriod != 100*time.Millisecond, "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {%v} requires feature gate CustomCPUCFSQuotaPeriod", cfsPeriod)
	check(customPeriod && (cfsPeriod < time.Millisecond || cfsPeriod > time.Second), "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {%v} must be between 1ms and 1sec, inclusive", cfsPeriod)
	high, low := orDefault32(kc.ImageGCHighThresholdPercent, 85), orDefault32(kc.ImageGCLowThresholdPercent, 80)
	check(outside(high, 0, 100), "imageGCHighThresholdPercent (--image-gc-high-threshold) %v must be between 0 and 100, inclusive", high)
	check(outside(low, 0, 100), "imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be between 0 and 100, inclusive", low)
	check(low >= high, "imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %v", low, high)
	minAge, maxAge := kc.ImageMinimumGCAge.Duration, kc.ImageMaximumGCAge.Duration
	if minAge == 0 {
		minAge = 2 * time.Minute
	}
	check(minAge < 0, "imageMinimumGCAge %v must not be negative", minAge)
	check(maxAge < 0, "imageMaximumGCAge %v must not be negative", maxAge)
	check(maxAge > 0 && maxAge <= minAge, "imageMaximumGCAge %v must be greater than imageMinimumGCAge %v", maxAge, minAge)
	dropBit, masqBit := orDefault32(kc.IPTablesDropBit, 15), orDefault32(kc.IPTablesMasqueradeBit, 14)
	check(outside(dropBit, 0, 31), "iptablesDropBit (--iptables-drop-bit) %v must be between 0 and 31, inclusive", dropBit)
	check(outside(masqBit, 0, 31), "iptablesMasqueradeBit (--iptables-masquerade-bit) %v must be between 0 and 31, inclusive", masqBit)
	check(kc.KubeAPIBurst < 0, "kubeAPIBurst (--kube-api-burst) %v must not be a negative number", kc.KubeAPIBurst)
	apiQPS := orDefault32(kc.KubeAPIQPS, 50)
	check(apiQPS < 0, "kubeAPIQPS (--kube-api-qps) %v must not be a negative number", apiQPS)
	maxImages := orDefault32(kc.NodeStatusMaxImages, 50)
	check(maxImages < -1, "nodeStatusMaxImages (--node-status-max-images) %v must be -1 or greater", maxImages)
	check(kc.MaxOpenFiles < 0, "maxOpenFiles (--max-open-files) %v must not be a negative number", kc.MaxOpenFiles)
	check(kc.MaxPods < 0, "maxPods (--max-pods) %v must not be a negative number", kc.MaxPods)
	oomScoreAdj := orDefault32(kc.OOMScoreAdj, -999)
	check(outside(oomScoreAdj, -1000, 1000), "oomScoreAdj (--oom-score-adj) %v must be between -1000 and 1000, inclusive", oomScoreAdj)
	check(kc.PodsPerCore < 0, "podsPerCore (--pods-per-core) %v must not be a negative number", kc.PodsPerCore)
	check(outside(kc.Port, 1, 65535), "port (--port) %v must be between 1 and 65535, inclusive", kc.Port)
	check(kc.ReadOnlyPort != 0 && outside(kc.ReadOnlyPort, 1, 65535), "readOnlyPort (--read-only-port) %v must be between 0 and 65535, inclusive", kc.ReadOnlyPort)
	check(kc.RegistryBurst < 0, "registryBurst (--registry-burst) %v must not be a negative number", kc.RegistryBurst)
	pullQPS := orDefault32(kc.RegistryPullQPS, 5)
	check(pullQPS < 0, "registryPullQPS (--registry-qps) %v must not be a negative number", pullQPS)
	if p := kc.MaxParallelImagePulls; p != nil {
		check(*p < 1, "maxParallelImagePulls %v must be a positive number", *p)
		serialize := kc.SerializeImagePulls == nil && *p < 2 || kc.SerializeImagePulls != nil && *kc.SerializeImagePulls
		check(serialize && *p > 1, "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false")
	}
	check(kc.RunOnce, "runOnce (--runOnce) %v, Runonce mode has been deprecated and should not be set", kc.RunOnce)
	errs = append(errs, registerWithTaintsErrors(kc.RegisterWithTaints)...)
	policies := []string{"none", "best-effort", "restricted", "single-numa-node"}
	if policy := kc.TopologyManagerPolicy; policy != "" {
		check(!slices.Contains(policies, policy), "topologyManagerPolicy (--topology-manager-policy) %q must be one of: %q", policy, policies)
	}
	if scope := kc.TopologyManagerScope; scope != "" {
		check(scope != "container" && scope != "pod", "topologyManagerScope (--topology-manager-scope) %q must be one of: %q, or %q", scope, "container", "pod")
	}
	grace, critical := kc.ShutdownGracePeriod, kc.ShutdownGracePeriodCriticalPods
	check(critical.Duration > grace.Duration, "shutdownGracePeriodCriticalPods %v must be <= shutdownGracePeriod %v", critical, grace)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"shutdownGracePeriod", grace.Duration}, {"shutdownGracePeriodCriticalPods", critical.Duration}} {
		check(d.v < 0 || d.v > 0 && d.v < time.Second, "%s %v must be either zero or otherwise >= 1 sec", d.name, d.v)
	}
	check(len(kc.ShutdownGracePeriodByPodPriority) != 0 && (grace.Duration > 0 || critical.Duration > 0),
		"Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
	switch kc.MemorySwap.SwapBehavior {
	case "", "NoSwap", "LimitedSwap":
	default:
		check(true, "memorySwap.swapBehavior %q must be one of: \"\", %q or %q", kc.MemorySwap.SwapBehavior, "LimitedSwap", "NoSwap")
	}
	// KubeletCrashLoopBackOffMax is on (beta, on by default since 1.35):
	// left out, the period is v1beta1's default, 300s.
	if p := kc.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil {
		ms := p.Milliseconds()
		check(ms < 1000 || ms > 300000, "CrashLoopBackOff.MaxContainerRestartPeriod (got: %v seconds) must be set between 1s and 300s", p.Seconds())
	}
	errs = append(errs, enforceNodeAllocatableErrors(kc)...)
	switch kc.HairpinMode {
	case "", "none", "hairpin-veth", "promiscuous-bridge":
	default:
		check(true, "option %q specified for hairpinMode (--hairpin-mode). Valid options are %q, %q or %q", kc.HairpinMode, "none", "hairpin-veth", "promiscuous-bridge")
	}
	pullPolicy := pullrecords.Policy(cmp.Or(kc.ImagePullCredentialsVerificationPolicy, kcv1beta1.ImagePullCredentialsVerificationPolicy(pullrecords.DefaultPolicy)))
	errs = append(errs, pullrecords.ValidationErrors(pullPolicy, kc.PreloadedImagesVerificationAllowlist)...)
	if cpus := kc.ReservedSystemCPUs; cpus != "" {
		check(kc.SystemReservedCgroup != "" || kc.KubeReservedCgroup != "",
			"can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
		if _, err := cpuset.Parse(cpus); err != nil {
			errs = append(errs, fmt.Errorf("invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) %v, error: %w", cpus, err))
		}
	}
	errs = append(errs, reservedMemoryErrors(kc.ReservedMemory)...)
	// Upstream's OS-specific checks (Windows only) come here.
	if v := kc.ShowHiddenMetricsForVersion; v != "" && v != kubeletPreviousMinor {
		errs = append(errs, fmt.Errorf("invalid showHiddenMetricsForVersion: %w",
			field.Invalid(field.NewPath("showHiddenMetricsForVersion"), v, fmt.Sprintf("must be omitted or have the value '%v'; only the previous minor version is allowed", kubeletPreviousMinor))))
	}
	// Upstream checks logging again here; checkKubeletLogFormat refused
	// what it would refuse before the validation.
	errs = append(errs, tracingErrors(kc)...)
	if f := kc.MemoryThrottlingFactor; f != nil {
		check(*f <= 0 || *f > 1.0, "memoryThrottlingFactor %v must be greater than 0 and less than or equal to 1.0", *f)
	}
	switch policy := kc.MemoryReservationPolicy; policy {
	case "", kcv1beta1.NoneMemoryReservationPolicy:
	case kcv1beta1.TieredReservationMemoryReservationPolicy:
		check(true, "memoryReservationPolicy %q requires MemoryQoS feature gate to be enabled", policy)
	default:
		check(true, "option %q specified for memoryReservationPolicy. Valid options are %q or %q", policy,
			kcv1beta1.NoneMemoryReservationPolicy, kcv1beta1.TieredReservationMemoryReservationPolicy)
	}
	check(kc.ContainerRuntimeEndpoint == "", "the containerRuntimeEndpoint was not specified or empty")
	// NodeLogQuery is beta and off by default; the system log handler is
	// on unless the configuration turns it off.
	check(kc.EnableSystemLogQuery != nil && *kc.EnableSystemLogQuery && !kc.FeatureGates["NodeLogQuery"], "NodeLogQuery feature gate is required for enableSystemLogQuery")
	check(kc.EnableSystemLogQuery != nil && *kc.EnableSystemLogQuery && kc.EnableSystemLogHandler != nil && !*kc.EnableSystemLogHandler, "enableSystemLogHandler is required for enableSystemLogQuery")
	check(orDefault32(kc.ContainerLogMaxWorkers, 1) < 1, "containerLogMaxWorkers must be greater than or equal to 1")
	monitor := 10 * time.Second
	if kc.ContainerLogMonitorInterval != nil {
		monitor = kc.ContainerLogMonitorInterval.Duration
	}
	check(monitor < 3*time.Second, "containerLogMonitorInterval must be a positive time duration greater than or equal to 3s")
	check(orDefault32(kc.ContainerLogMaxFiles, 5) <= 1, "containerLogMaxFiles must be greater than 1")
	errs = append(errs, podLogsDirErrors(kc.PodLogsDir)...)
	return utilerrors.NewAggregate(errs)
}

// enforceNodeAllocatableErrors are upstream's checks of
// enforceNodeAllocatable: known levels, each once, none alone, the
// reservations' cgroups given, cgroups per QoS class on.
func enforceNodeAllocatableErrors(kc *kcv1beta1.KubeletConfiguration) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("invalid configuration: "+format, args...))
	}
	levels := kc.EnforceNodeAllocatable
	for _, pair := range [][2]string{{"system-reserved", "system-reserved-compressible"}, {"kube-reserved", "kube-reserved-compressible"}} {
		if slices.Contains(levels, pair[0]) && slices.Contains(levels, pair[1]) {
			add("both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", pair[0], pair[1])
		}
	}
	perQOS := kc.CgroupsPerQOS == nil || *kc.CgroupsPerQOS
	for i, level := range levels {
		if slices.Contains(levels[:i], level) {
			add("duplicated enforcements %q in enforceNodeAllocatable (--enforce-node-allocatable)", level)
			continue
		}
		switch level {
		case "pods":
		case "system-reserved", "system-reserved-compressible":
			if kc.SystemReservedCgroup == "" {
				add("systemReservedCgroup (--system-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", "system-reserved", "system-reserved-compressible")
			}
		case "kube-reserved", "kube-reserved-compressible":
			if kc.KubeReservedCgroup == "" {
				add("kubeReservedCgroup (--kube-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", "kube-reserved", "kube-reserved-compressible")
			}
		case "none":
			if len(levels) > 1 {
				add("enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", "none")
			}
			continue
		default:
			add("option %q specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are %q, %q, %q, %q, %q or %q", level,
				"pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible", "none")
			continue
		}
		if !perQOS {
			add("cgroupsPerQOS (--cgroups-per-qos) must be set to true when %q contained in enforceNodeAllocatable (--enforce-node-allocatable)", level)
		}
	}
	return errs
}

// podLogsDirErrors are upstream's checks of podLogsDir: given, absolute,
// clean, ASCII (it names metrics).
func podLogsDirErrors(dir string) []error {
	var errs []error
	if dir == "" {
		errs = append(errs, fmt.Errorf("invalid configuration: podLogsDir was not specified"))
	}
	if !filepath.IsAbs(dir) {
		errs = append(errs, fmt.Errorf("invalid configuration: pod logs path %q must be absolute path", dir))
	}
	if filepath.Clean(dir) != dir {
		errs = append(errs, fmt.Errorf("invalid configuration: pod logs path %q must be normalized", dir))
	}
	for _, c := range dir {
		if c > unicode.MaxASCII {
			errs = append(errs, fmt.Errorf("invalid configuration: pod logs path %q mut contains ASCII characters only", dir))
			break
		}
	}
	return errs
}
