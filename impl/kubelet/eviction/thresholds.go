// Package eviction is the kubelet's eviction manager: it observes the
// node's resources (memory.available, allocatableMemory.available,
// nodefs.available, nodefs.inodesFree, imagefs.available,
// imagefs.inodesFree, pid.available) through a Provider, compares them
// with the configured hard and soft thresholds, reports MemoryPressure,
// DiskPressure and PIDPressure (held for the pressure transition period)
// and picks at most one pod per monitoring interval to evict, ranked as
// upstream's kubelet ranks them.
//
// Decide is the pure core (observations, thresholds, time and the
// previous State in; conditions, the new State and the pod to evict out);
// Manager is the thin loop around it that the kubelet runs. For a disk
// signal the Manager first reclaims node-level resources (dead
// containers, unused images: a NodeReclaimer, impl/kubelet/gc), observes
// again and evicts only if ReclaimSuffices says a threshold is still met.
// On a real node HostProvider measures pods with CRI stats.
//
// In the spec this is the kubelet's KubeletEvictPod action: the evicted
// pod ends Failed (reason Evicted) and, by KUBELET-5, stays Failed; the
// kubelet (impl/kubelet/evict.go) carries it out through the pod's worker.
package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
)

// Signal names an observed node resource, as in the kubelet's
// --eviction-hard flag.
type Signal string

// The signals this eviction manager observes.
const (
	SignalMemoryAvailable Signal = "memory.available"
	// SignalAllocatableMemoryAvailable is the pods cgroup's memory limit
	// less its working set (a CRI node's HostProvider): what is left of
	// the node's allocatable memory. Its thresholds are the hard
	// memory.available ones, copied when "pods" is enforced
	// (AllocatableThresholds); it raises MemoryPressure and ranks pods as
	// memory.available does.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
	resourceInodes                          = v1.ResourceName("inodes")
	resourcePIDs                            = v1.ResourceName("pids")
	DefaultPressureTransition               = 5 * time.Minute
	DefaultMonitoringInterval               = 10 * time.Second
)

// Signals are the known signals in a fixed order.
var Signals = []Signal{SignalMemoryAvailable, SignalAllocatableMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable}

// DefaultEvictionHard is the kubelet's default --eviction-hard (Linux).
// As upstream, giving the flag replaces all of it: signals left out have
// no hard threshold.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%,imagefs.inodesFree<5%"

// signalResource is the resource a signal starves (named in eviction
// messages); signalCondition the node condition it raises.
var (
	signalResource = map[Signal]v1.ResourceName{
		SignalMemoryAvailable: v1.ResourceMemory, SignalAllocatableMemoryAvailable: v1.ResourceMemory, SignalNodeFsAvailable: v1.ResourceEphemeralStorage,
		SignalImageFsAvailable: v1.ResourceEphemeralStorage, SignalNodeFsInodesFree: resourceInodes, SignalImageFsInodesFree: resourceInodes,
		SignalPIDAvailable: resourcePIDs,
	}
	signalCondition = map[Signal]v1.NodeConditionType{
		SignalMemoryAvailable: v1.NodeMemoryPressure, SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure, SignalNodeFsAvailable: v1.NodeDiskPressure,
		SignalImageFsAvailable: v1.NodeDiskPressure, SignalNodeFsInodesFree: v1.NodeDiskPressure, SignalImageFsInodesFree: v1.NodeDiskPressure,
		SignalPIDAvailable: v1.NodePIDPressure,
	}
)

// Value is a threshold amount: an absolute quantity or a fraction of
// capacity (Percentage in (0,1]).
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// amount is the value in the signal's units given the capacity.
func (v Value) amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(v.Percentage * float64(capacity))
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return fmt.Sprintf("%g%%", v.Percentage*100)
}

// Threshold is one eviction threshold: the signal is met when its
// available amount is below Value. GracePeriod 0 is a hard threshold; a
// soft one must hold for GracePeriod before pods are evicted.
// MinReclaim, once the threshold was met, keeps it met until the
// available amount is at least Value+MinReclaim.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	MinReclaim  *Value
}

// Hard reports whether the threshold is a hard one.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// key identifies a threshold across monitoring intervals: its signal,
// whether it is hard, and its value, as upstream's hasThreshold tells
// thresholds apart (signal, grace period, value). A signal has two hard
// thresholds when --eviction-hard names allocatableMemory.available and
// a hard memory.available threshold is copied to it
// (AllocatableThresholds).
func (t Threshold) key() string {
	kind := "soft"
	if t.Hard() {
		kind = "hard"
	}
	value := fmt.Sprintf("%g%%", t.Value.Percentage*100)
	if t.Value.Quantity != nil {
		value = strconv.FormatInt(t.Value.Quantity.Value(), 10)
	}
	return string(t.Signal) + "/" + kind + "/" + value
}

// Config is the eviction manager's configuration, from the kubelet's
// flags.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays
	// True after its threshold stopped being met (5 m).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps the grace period of pods evicted for a
	// soft threshold (0: the pod's own).
	MaxPodGracePeriodSeconds int64
	// MonitoringInterval is how often the node is observed (10 s).
	MonitoringInterval time.Duration
	// ImageGC is the periodic image garbage collection policy (the zero
	// policy: none; the reclaim before disk evictions happens regardless).
	ImageGC gc.Policy
	// DisableLocalStorageCapacityIsolation turns off the local storage
	// limit evictions (upstream's localStorageCapacityIsolation: false;
	// on by default).
	DisableLocalStorageCapacityIsolation bool
}

// Flags are the kubelet's eviction flags as given on the command line.
type Flags struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim string
	// HardSet: --eviction-hard was given (even empty); otherwise the
	// default applies.
	HardSet                  bool
	PressureTransitionPeriod time.Duration
	MaxPodGracePeriod        int64
	MonitoringInterval       time.Duration
	// ImageGCHighThresholdPercent, ImageGCLowThresholdPercent,
	// MinimumImageTTLDuration and ImageMaximumGCAge are
	// --image-gc-high-threshold, --image-gc-low-threshold,
	// --minimum-image-ttl-duration and --image-maximum-gc-age (the command
	// line's defaults are upstream's 85, 80, 2m and 0, off; all zero, as in
	// Flags{}, turns periodic image GC off).
	ImageGCHighThresholdPercent, ImageGCLowThresholdPercent int
	MinimumImageTTLDuration, ImageMaximumGCAge              time.Duration
}

// ParseConfig turns the kubelet's eviction flags into a Config, with the
// kubelet's errors for bad input. The four threshold flags are read as
// upstream's kubelet reads its maps (ParseThresholdConfig): a signal named
// twice keeps its last value; the hard thresholds, the soft ones, the
// grace periods and the minimum reclaims are parsed in that order, then
// every soft threshold needs its grace period. A threshold, grace period
// or minimum reclaim upstream refuses is a *ThresholdError carrying
// upstream's error.
func ParseConfig(f Flags) (Config, error) {
	hardText := f.Hard
	if !f.HardSet {
		hardText = DefaultEvictionHard
	}
	hard, err := parseThresholdMap("--eviction-hard", hardText)
	if err != nil {
		return Config{}, err
	}
	soft, err := parseThresholdMap("--eviction-soft", f.Soft)
	if err != nil {
		return Config{}, err
	}
	grace, err := parseGracePeriods(f.SoftGracePeriod)
	if err != nil {
		return Config{}, err
	}
	reclaim, err := parseMinimumReclaims(f.MinimumReclaim)
	if err != nil {
		return Config{}, err
	}
	for _, s := range sortedSignals(soft) {
		if _, ok := grace[s]; !ok {
			return Config{}, &ThresholdError{Text: fmt.Sprintf("--eviction-soft: no grace period in --eviction-soft-grace-period for signal %s", s),
				Kubelet: fmt.Errorf("grace period must be specified for the soft eviction threshold %s", s)}
		}
	}
	cfg := Config{PressureTransitionPeriod: f.PressureTransitionPeriod, MaxPodGracePeriodSeconds: f.MaxPodGracePeriod, MonitoringInterval: f.MonitoringInterval,
		ImageGC: gc.Policy{HighThresholdPercent: f.ImageGCHighThresholdPercent, LowThresholdPercent: f.ImageGCLowThresholdPercent, MinAge: f.MinimumImageTTLDuration, MaxAge: f.ImageMaximumGCAge}}
	if err := cfg.ImageGC.Validate(); err != nil {
		return Config{}, err
	}
	if cfg.PressureTransitionPeriod < 0 || cfg.MaxPodGracePeriodSeconds < 0 || cfg.MonitoringInterval < 0 {
		return Config{}, fmt.Errorf("eviction: negative --eviction-pressure-transition-period, --eviction-max-pod-grace-period or monitoring interval")
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransition
	}
	if cfg.MonitoringInterval == 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	for _, s := range sortedSignals(hard) {
		cfg.Thresholds = append(cfg.Thresholds, Threshold{Signal: s, Value: hard[s]})
	}
	// A grace period of a signal without a soft threshold is unused, and
	// a zero one makes the soft threshold a hard one, as upstream's.
	for _, s := range sortedSignals(soft) {
		cfg.Thresholds = append(cfg.Thresholds, Threshold{Signal: s, Value: soft[s], GracePeriod: grace[s]})
	}
	for i := range cfg.Thresholds {
		if v, ok := reclaim[cfg.Thresholds[i].Signal]; ok {
			cfg.Thresholds[i].MinReclaim = &v
		}
	}
	return cfg, nil
}

func sortedSignals[T any](m map[Signal]T) []Signal {
	out := make([]Signal, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func knownSignal(s Signal) bool {
	_, ok := signalResource[s]
	return ok
}

// parseThresholdMap reads "signal<value,signal<value", a signal named
// twice taking its last value. "0%" and "100%" are no threshold, as
// upstream's kubelet ignores them.
func parseThresholdMap(flag, text string) (map[Signal]Value, error) {
	items, err := keyValues(flag, text, "<")
	if err != nil {
		return nil, err
	}
	out := map[Signal]Value{}
	for _, s := range sortedSignals(items) {
		text := items[s]
		if !knownSignal(s) {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: unsupported eviction signal %s", flag, s), Kubelet: kubeletThresholdError(s, text)}
		}
		if text == "0%" || text == "100%" {
			continue
		}
		v, err := parseValue(text)
		if err != nil {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: signal %s: %v", flag, s, err), Kubelet: kubeletThresholdError(s, text)}
		}
		if v.Quantity != nil && v.Quantity.Sign() <= 0 {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: signal %s: eviction threshold must be positive: %s", flag, s, v.Quantity), Kubelet: kubeletThresholdError(s, text)}
		}
		if v.Quantity == nil && v.Percentage == 0 {
			continue // never met
		}
		out[s] = v
	}
	return out, nil
}

// parseGracePeriods reads --eviction-soft-grace-period,
// "signal=duration,...", with upstream's errors.
func parseGracePeriods(text string) (map[Signal]time.Duration, error) {
	const flag = "--eviction-soft-grace-period"
	items, err := keyValues(flag, text, "=")
	if err != nil {
		return nil, err
	}
	out := map[Signal]time.Duration{}
	for _, s := range sortedSignals(items) {
		if !knownSignal(s) {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: unsupported eviction signal %s", flag, s), Kubelet: fmt.Errorf("unsupported eviction signal %s", s)}
		}
		d, err := time.ParseDuration(items[s])
		if err != nil {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: signal %s: %v", flag, s, err), Kubelet: err}
		}
		if d < 0 {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: signal %s: negative grace period %s", flag, s, items[s]),
				Kubelet: fmt.Errorf("invalid eviction grace period specified: %s, must be a positive value", items[s])}
		}
		out[s] = d
	}
	return out, nil
}

// parseMinimumReclaims reads --eviction-minimum-reclaim,
// "signal=quantity or percentage,...", with upstream's errors: a
// percentage must be above 0 (above 100% is taken, as upstream's), a
// quantity not negative.
func parseMinimumReclaims(text string) (map[Signal]Value, error) {
	const flag = "--eviction-minimum-reclaim"
	items, err := keyValues(flag, text, "=")
	if err != nil {
		return nil, err
	}
	out := map[Signal]Value{}
	for _, s := range sortedSignals(items) {
		text := items[s]
		bad := func(kubelet error) error {
			return &ThresholdError{Text: fmt.Sprintf("%s: signal %s: %v", flag, s, kubelet), Kubelet: kubelet}
		}
		if !knownSignal(s) {
			return nil, &ThresholdError{Text: fmt.Sprintf("%s: unsupported eviction signal %s", flag, s), Kubelet: fmt.Errorf("unsupported eviction signal %s", s)}
		}
		if p, ok := strings.CutSuffix(text, "%"); ok {
			f, err := strconv.ParseFloat(p, 32)
			if err != nil {
				return nil, bad(err)
			}
			if f <= 0 {
				return nil, bad(fmt.Errorf("eviction percentage minimum reclaim %s must be positive: %s", s, text))
			}
			out[s] = Value{Percentage: f / 100}
			continue
		}
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return nil, bad(err)
		}
		if q.Sign() < 0 {
			return nil, bad(fmt.Errorf("negative eviction minimum reclaim specified for %s", s))
		}
		out[s] = Value{Quantity: &q}
	}
	return out, nil
}

// ThresholdError is a threshold of --eviction-hard or --eviction-soft
// that does not parse: Text names the flag and the signal; Kubelet is the
// error upstream's kubelet gives for it (ParseThresholdConfig's, naming
// neither), nil where upstream takes the threshold.
type ThresholdError struct {
	Text    string
	Kubelet error
}

func (e *ThresholdError) Error() string { return e.Text }

// kubeletThresholdError is the error upstream's kubelet gives for the
// threshold signal<text (parseThresholdStatement): an unknown signal, a
// percentage strconv does not parse or outside 0-100%, a quantity that
// does not parse (resource.ParseQuantity's error) or is not positive.
func kubeletThresholdError(s Signal, text string) error {
	if !knownSignal(s) {
		return fmt.Errorf("unsupported eviction signal %s", s)
	}
	if p, ok := strings.CutSuffix(text, "%"); ok {
		f, err := strconv.ParseFloat(p, 32)
		switch {
		case err != nil:
			return err
		case f < 0:
			return fmt.Errorf("eviction percentage threshold %s must be >= 0%%: %s", s, text)
		case f > 100:
			return fmt.Errorf("eviction percentage threshold %s must be <= 100%%: %s", s, text)
		}
		return nil
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return err
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("eviction threshold %s must be positive: %s", s, &q)
	}
	return nil
}

// keyValues reads "key<sep>value,..." as upstream's map flags do: key
// and value trimmed, empty items skipped, a key named twice keeping its
// last value.
func keyValues(flag, text, sep string) (map[Signal]string, error) {
	out := map[Signal]string{}
	for _, part := range splitList(text) {
		k, v, ok := strings.Cut(part, sep)
		if !ok {
			return nil, fmt.Errorf("%s: %q: want <signal>%s<value>", flag, part, sep)
		}
		out[Signal(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out, nil
}

func splitList(text string) []string {
	var out []string
	for _, p := range strings.Split(text, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseValue reads a quantity ("100Mi") or a percentage ("10%").
func parseValue(text string) (Value, error) {
	if p, ok := strings.CutSuffix(text, "%"); ok {
		var f float64
		if _, err := fmt.Sscanf(p, "%g", &f); err != nil || strings.TrimSpace(p) != p {
			return Value{}, fmt.Errorf("invalid percentage %q", text)
		}
		if f < 0 || f > 100 {
			return Value{}, fmt.Errorf("invalid percentage %q: must be between 0%% and 100%%", text)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return Value{}, fmt.Errorf("invalid quantity %q: %w", text, err)
	}
	return Value{Quantity: &q}, nil
}

// memorySignal reports whether s is a memory signal (memory.available,
// allocatableMemory.available): acted on before the others, as upstream's
// byEvictionPriority.
func memorySignal(s Signal) bool {
	return s == SignalMemoryAvailable || s == SignalAllocatableMemoryAvailable
}

// AllocatableThresholds are ts with, for each hard memory.available
// threshold, an allocatableMemory.available one of the same value and
// minimum reclaim after them, as upstream's kubelet adds them when
// --enforce-node-allocatable includes "pods" (ParseThresholdConfig,
// addAllocatableThresholds). ts is not changed.
func AllocatableThresholds(ts []Threshold) []Threshold {
	out := append([]Threshold(nil), ts...)
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			out = append(out, Threshold{Signal: SignalAllocatableMemoryAvailable, Value: t.Value, MinReclaim: t.MinReclaim})
		}
	}
	return out
}

// HardEvictionReservation is what a node keeps back from allocatable for
// its hard thresholds, as upstream's kubelet does (allocatable = capacity
// - reservations - hard eviction): memory.available's threshold from
// memory, nodefs.available's from ephemeral storage. Otherwise a node the
// scheduler filled to allocatable would sit below its threshold and evict.
func (c Config) HardEvictionReservation(capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range c.Thresholds {
		if !t.Hard() {
			continue
		}
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		c, ok := capacity[name]
		if !ok {
			continue
		}
		out[name] = *resource.NewQuantity(t.Value.amount(c.Value()), resource.BinarySI)
	}
	return out
}
