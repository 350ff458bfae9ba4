// Package config holds the scheduler's configuration: a compatible subset of
// upstream's KubeSchedulerConfiguration (apiVersion
// kubescheduler.config.k8s.io/v1) with the same field names, its defaults, and
// the loader for a configuration file.
//
// Supported: profiles[].schedulerName, profiles[].plugins.<extension
// point>.{enabled,disabled} (with weights on score), profiles[].pluginConfig,
// percentageOfNodesToScore (global and per profile), podInitialBackoffSeconds,
// podMaxBackoffSeconds, parallelism, leaderElection and extenders (filter,
// prioritize, preempt and bind verbs). Unknown fields are
// rejected so that a typo is an error rather than a silently ignored setting.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// APIVersion and Kind identify a configuration file.
const (
	APIVersion = "kubescheduler.config.k8s.io/v1"
	Kind       = "KubeSchedulerConfiguration"

	// DefaultSchedulerName is the schedulerName pods get when they name none.
	DefaultSchedulerName = "default-scheduler"
)

// KubeSchedulerConfiguration is the top-level configuration object.
type KubeSchedulerConfiguration struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`

	// Parallelism bounds the worker pool that filters and scores nodes.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// PercentageOfNodesToScore: 0 (or unset) means the adaptive formula
	// upstream uses (50% - nodes/125, at least 5%, at least 100 nodes).
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds bound the backoff
	// of pods that failed to schedule (1 s and 10 s by default).
	PodInitialBackoffSeconds *int64 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64 `json:"podMaxBackoffSeconds,omitempty"`

	LeaderElection LeaderElectionConfiguration `json:"leaderElection,omitempty"`
	Profiles       []KubeSchedulerProfile      `json:"profiles,omitempty"`
	// ClientConnection is accepted for compatibility; qps and burst apply
	// to the scheduler's API client.
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`
	// Extenders are HTTP scheduler extenders, called after the plugins for
	// every profile: filter, prioritize, preempt and bind.
	Extenders []Extender `json:"extenders,omitempty"`
}

// Extender configures one HTTP scheduler extender (upstream's v1 Extender).
// An empty verb means the extender does not offer that call.
type Extender struct {
	URLPrefix      string `json:"urlPrefix"`
	FilterVerb     string `json:"filterVerb,omitempty"`
	PreemptVerb    string `json:"preemptVerb,omitempty"`
	PrioritizeVerb string `json:"prioritizeVerb,omitempty"`
	// Weight multiplies the extender's scores (0–10, scaled to the
	// plugins' 0–100); it must be positive when prioritizeVerb is set.
	Weight   int64  `json:"weight,omitempty"`
	BindVerb string `json:"bindVerb,omitempty"`

	EnableHTTPS bool               `json:"enableHTTPS,omitempty"`
	TLSConfig   *ExtenderTLSConfig `json:"tlsConfig,omitempty"`
	// HTTPTimeout bounds each call (default 5s).
	HTTPTimeout Duration `json:"httpTimeout,omitempty"`
	// NodeCacheCapable extenders get node names instead of Node objects.
	NodeCacheCapable bool `json:"nodeCacheCapable,omitempty"`
	// ManagedResources: when set, only pods requesting one of these
	// resources are sent to the extender.
	ManagedResources []ExtenderManagedResource `json:"managedResources,omitempty"`
	// Ignorable extenders' errors do not fail scheduling.
	Ignorable bool `json:"ignorable,omitempty"`
}

// ExtenderTLSConfig is how to reach an HTTPS extender.
type ExtenderTLSConfig struct {
	Insecure   bool   `json:"insecure,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	CAFile     string `json:"caFile,omitempty"`
	CertData   []byte `json:"certData,omitempty"`
	KeyData    []byte `json:"keyData,omitempty"`
	CAData     []byte `json:"caData,omitempty"`
}

// ExtenderManagedResource is an extended resource an extender manages.
type ExtenderManagedResource struct {
	Name               string `json:"name"`
	IgnoredByScheduler bool   `json:"ignoredByScheduler,omitempty"`
}

// ClientConnection carries the API client's rate limits.
type ClientConnection struct {
	Kubeconfig  string  `json:"kubeconfig,omitempty"`
	QPS         float32 `json:"qps,omitempty"`
	Burst       int32   `json:"burst,omitempty"`
	ContentType string  `json:"contentType,omitempty"`
}

// LeaderElectionConfiguration mirrors component-base's type (subset).
type LeaderElectionConfiguration struct {
	LeaderElect       *bool    `json:"leaderElect,omitempty"`
	LeaseDuration     Duration `json:"leaseDuration,omitempty"`
	RenewDeadline     Duration `json:"renewDeadline,omitempty"`
	RetryPeriod       Duration `json:"retryPeriod,omitempty"`
	ResourceLock      string   `json:"resourceLock,omitempty"`
	ResourceName      string   `json:"resourceName,omitempty"`
	ResourceNamespace string   `json:"resourceNamespace,omitempty"`
}

// Duration is a time.Duration written as "15s" in files.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"15s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// KubeSchedulerProfile is one scheduling profile: a schedulerName and the
// plugins that serve it.
type KubeSchedulerProfile struct {
	SchedulerName            string         `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins lists, per extension point, the plugins to enable and disable.
// MultiPoint enables a plugin at every extension point it implements.
type Plugins struct {
	PreEnqueue PluginSet `json:"preEnqueue,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
}

// PluginSet is an enabled and a disabled list. "*" in Disabled disables
// every default plugin of that extension point.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin; Weight applies to score plugins only.
type Plugin struct {
	Name   string `json:"name"`
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig carries one plugin's arguments as raw JSON, decoded by the
// plugin's factory.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// DefaultPlugin is an entry of the default multi-point plugin list.
type DefaultPlugin struct {
	Name   string
	Weight int32
}

// DefaultMultiPoint is upstream's default plugin set (v1) in upstream's
// order and weights, minus the plugins kubeproof does not implement:
// NodeVolumeLimits, VolumeBinding and VolumeZone (they need
// PersistentVolumes and PersistentVolumeClaims, which kubeproof's API server
// does not serve), DynamicResources and DefaultBinder (binding is the
// scheduler's own POST).
var DefaultMultiPoint = []DefaultPlugin{
	{Name: "PrioritySort"},
	{Name: "NodeUnschedulable"},
	{Name: "NodeName"},
	{Name: "TaintToleration", Weight: 3},
	{Name: "NodeAffinity", Weight: 2},
	{Name: "NodePorts"},
	{Name: "NodeResourcesFit", Weight: 1},
	{Name: "VolumeRestrictions"},
	{Name: "PodTopologySpread", Weight: 2},
	{Name: "InterPodAffinity", Weight: 2},
	{Name: "DefaultPreemption"},
	{Name: "NodeResourcesBalancedAllocation", Weight: 1},
	{Name: "ImageLocality", Weight: 1},
}

// Default returns the configuration used when no file is given: one profile
// named default-scheduler with the default plugins.
func Default() *KubeSchedulerConfiguration {
	c := &KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind}
	SetDefaults(c)
	return c
}

// SetDefaults fills unset fields the way upstream's defaulting does.
func SetDefaults(c *KubeSchedulerConfiguration) {
	if c.Parallelism == nil {
		c.Parallelism = ptr[int32](16)
	}
	if c.PercentageOfNodesToScore == nil {
		c.PercentageOfNodesToScore = ptr[int32](0)
	}
	if c.PodInitialBackoffSeconds == nil {
		c.PodInitialBackoffSeconds = ptr[int64](1)
	}
	if c.PodMaxBackoffSeconds == nil {
		c.PodMaxBackoffSeconds = ptr[int64](10)
	}
	le := &c.LeaderElection
	if le.LeaderElect == nil {
		le.LeaderElect = ptr(true)
	}
	if le.LeaseDuration.Duration == 0 {
		le.LeaseDuration.Duration = 15 * time.Second
	}
	if le.RenewDeadline.Duration == 0 {
		le.RenewDeadline.Duration = 10 * time.Second
	}
	if le.RetryPeriod.Duration == 0 {
		le.RetryPeriod.Duration = 2 * time.Second
	}
	if le.ResourceLock == "" {
		le.ResourceLock = "leases"
	}
	if le.ResourceName == "" {
		le.ResourceName = "kube-scheduler"
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = "kube-system"
	}
	if c.ClientConnection.QPS == 0 {
		c.ClientConnection.QPS = 50
	}
	if c.ClientConnection.Burst == 0 {
		c.ClientConnection.Burst = 100
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []KubeSchedulerProfile{{}}
	}
	for i := range c.Extenders {
		if c.Extenders[i].HTTPTimeout.Duration == 0 {
			c.Extenders[i].HTTPTimeout.Duration = 5 * time.Second
		}
	}
	for i := range c.Profiles {
		if c.Profiles[i].SchedulerName == "" {
			c.Profiles[i].SchedulerName = DefaultSchedulerName
		}
	}
}

// Validate reports configuration errors a user must fix.
func Validate(c *KubeSchedulerConfiguration) error {
	if c.APIVersion != "" && c.APIVersion != APIVersion {
		return fmt.Errorf("unsupported apiVersion %q: want %q", c.APIVersion, APIVersion)
	}
	if c.Kind != "" && c.Kind != Kind {
		return fmt.Errorf("unsupported kind %q: want %q", c.Kind, Kind)
	}
	if p := c.PercentageOfNodesToScore; p != nil && (*p < 0 || *p > 100) {
		return fmt.Errorf("percentageOfNodesToScore: %d not in valid range [0-100]", *p)
	}
	if p := c.Parallelism; p != nil && *p <= 0 {
		return fmt.Errorf("parallelism: %d should be greater than 0", *p)
	}
	if c.PodInitialBackoffSeconds != nil && *c.PodInitialBackoffSeconds <= 0 {
		return fmt.Errorf("podInitialBackoffSeconds must be greater than 0")
	}
	if c.PodMaxBackoffSeconds != nil && c.PodInitialBackoffSeconds != nil && *c.PodMaxBackoffSeconds < *c.PodInitialBackoffSeconds {
		return fmt.Errorf("podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds")
	}
	binders := 0
	for i, e := range c.Extenders {
		if e.URLPrefix == "" {
			return fmt.Errorf("extenders[%d].urlPrefix: required", i)
		}
		if e.PrioritizeVerb != "" && e.Weight <= 0 {
			return fmt.Errorf("extenders[%d].weight: %d must have a positive weight applied to it", i, e.Weight)
		}
		if e.BindVerb != "" {
			binders++
		}
	}
	if binders > 1 {
		return fmt.Errorf("extenders: found %d extenders implementing bind; only one extender can implement bind", binders)
	}
	seen := map[string]bool{}
	for i, p := range c.Profiles {
		if seen[p.SchedulerName] {
			return fmt.Errorf("profiles[%d].schedulerName: duplicate value %q", i, p.SchedulerName)
		}
		seen[p.SchedulerName] = true
		if v := p.PercentageOfNodesToScore; v != nil && (*v < 0 || *v > 100) {
			return fmt.Errorf("profiles[%d].percentageOfNodesToScore: %d not in valid range [0-100]", i, *v)
		}
	}
	return nil
}

// Load reads, defaults and validates a configuration file (YAML or JSON).
func Load(path string) (*KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler configuration: %w", err)
	}
	return Parse(data)
}

// Parse decodes, defaults and validates configuration bytes.
func Parse(data []byte) (*KubeSchedulerConfiguration, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decoding scheduler configuration: %w", err)
	}
	c := &KubeSchedulerConfiguration{}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("decoding scheduler configuration: %w", err)
	}
	if c.APIVersion == "" || c.Kind == "" {
		return nil, fmt.Errorf("scheduler configuration needs apiVersion %q and kind %q", APIVersion, Kind)
	}
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration: %w", err)
	}
	SetDefaults(c)
	return c, nil
}

func ptr[T any](v T) *T { return &v }
