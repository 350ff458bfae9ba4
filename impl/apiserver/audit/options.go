package audit

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// Backend modes (--audit-log-mode, --audit-webhook-mode), as
// kube-apiserver's.
const (
	// ModeBatch queues events and sends them in batches from a goroutine
	// (Buffered); a full buffer drops events.
	ModeBatch = "batch"
	// ModeBlocking sends each event before the request goes on; a
	// failure is logged and counted, never seen by the client.
	ModeBlocking = "blocking"
	// ModeBlockingStrict is ModeBlocking, except that a failure at stage
	// RequestReceived fails the request (500).
	ModeBlockingStrict = "blocking-strict"
)

// AllowedModes are the backend modes.
var AllowedModes = []string{ModeBatch, ModeBlocking, ModeBlockingStrict}

// AllowedFormats are the log formats.
var AllowedFormats = []string{FormatLegacy, FormatJSON}

// GroupVersion is the only --audit-log-version and --audit-webhook-version.
const GroupVersion = APIVersion

// LogOptions are the --audit-log-* flags. Path "" is no log backend.
type LogOptions struct {
	Path       string
	MaxAge     int
	MaxBackups int
	MaxSize    int
	Compress   bool
	Format     string
	Mode       string
	Batch      BatchConfig
	Truncate   TruncateConfig
	Version    string
}

// WebhookOptions are the --audit-webhook-* flags. ConfigFile "" is no
// webhook backend.
type WebhookOptions struct {
	ConfigFile     string
	InitialBackoff time.Duration
	Mode           string
	Batch          BatchConfig
	Truncate       TruncateConfig
	Version        string
}

// DefaultLogOptions are the --audit-log-* defaults: json, blocking.
func DefaultLogOptions() LogOptions {
	return LogOptions{Format: FormatJSON, Mode: ModeBlocking, Batch: DefaultLogBatchConfig(), Truncate: DefaultTruncateConfig(), Version: GroupVersion}
}

// DefaultWebhookOptions are the --audit-webhook-* defaults: batch mode,
// 10s initial backoff.
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{InitialBackoff: DefaultWebhookInitialBackoff, Mode: ModeBatch, Batch: DefaultWebhookBatchConfig(),
		Truncate: DefaultTruncateConfig(), Version: GroupVersion}
}

// withDefaults gives options built in code with no mode, batch, truncate
// or version settings (the zero value but for the path, rotation and
// format) the flags' defaults. Options from the flags always have them,
// so an empty --audit-log-mode stays empty and is refused, as
// kube-apiserver's.
func (o LogOptions) withDefaults() LogOptions {
	if o.Mode != "" || o.Version != "" || o.Batch != (BatchConfig{}) || o.Truncate != (TruncateConfig{}) {
		return o
	}
	d := DefaultLogOptions()
	d.Path, d.MaxAge, d.MaxBackups, d.MaxSize, d.Compress = o.Path, o.MaxAge, o.MaxBackups, o.MaxSize, o.Compress
	if o.Format != "" {
		d.Format = o.Format
	}
	return d
}

// withDefaults is LogOptions.withDefaults for the webhook: the config
// file and initial backoff are kept.
func (o WebhookOptions) withDefaults() WebhookOptions {
	if o.Mode != "" || o.Version != "" || o.Batch != (BatchConfig{}) || o.Truncate != (TruncateConfig{}) {
		return o
	}
	d := DefaultWebhookOptions()
	d.ConfigFile = o.ConfigFile
	if o.InitialBackoff != 0 {
		d.InitialBackoff = o.InitialBackoff
	}
	return d
}

// Validate returns kube-apiserver's errors for the log options (none
// when there is no log path).
func (o LogOptions) Validate() []error {
	o = o.withDefaults()
	if o.Path == "" {
		return nil
	}
	var errs []error
	if err := validateBatch(PluginLog, o.Mode, o.Batch); err != nil {
		errs = append(errs, err)
	}
	if err := validateTruncate(PluginLog, o.Truncate); err != nil {
		errs = append(errs, err)
	}
	if err := validateVersion(o.Version); err != nil {
		errs = append(errs, err)
	}
	if !contains(AllowedFormats, o.Format) {
		errs = append(errs, fmt.Errorf("invalid audit log format %s, allowed formats are %q", o.Format, strings.Join(AllowedFormats, ",")))
	}
	if o.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxage %v can't be a negative number", o.MaxAge))
	}
	if o.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxbackup %v can't be a negative number", o.MaxBackups))
	}
	if o.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxsize %v can't be a negative number", o.MaxSize))
	}
	return errs
}

// Validate returns kube-apiserver's errors for the webhook options
// (none when there is no config file).
func (o WebhookOptions) Validate() []error {
	o = o.withDefaults()
	if o.ConfigFile == "" {
		return nil
	}
	var errs []error
	if err := validateBatch(PluginWebhook, o.Mode, o.Batch); err != nil {
		errs = append(errs, err)
	}
	if err := validateTruncate(PluginWebhook, o.Truncate); err != nil {
		errs = append(errs, err)
	}
	if err := validateVersion(o.Version); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func validateBatch(plugin, mode string, c BatchConfig) error {
	if !contains(AllowedModes, mode) {
		return fmt.Errorf("invalid audit %s mode %s, allowed modes are %q", plugin, mode, strings.Join(AllowedModes, ","))
	}
	if mode != ModeBatch {
		return nil
	}
	if c.BufferSize <= 0 {
		return fmt.Errorf("invalid audit batch %s buffer size %v, must be a positive number", plugin, c.BufferSize)
	}
	if c.MaxBatchSize <= 0 {
		return fmt.Errorf("invalid audit batch %s max batch size %v, must be a positive number", plugin, c.MaxBatchSize)
	}
	if c.ThrottleEnable {
		if c.ThrottleQPS <= 0 {
			return fmt.Errorf("invalid audit batch %s throttle QPS %v, must be a positive number", plugin, c.ThrottleQPS)
		}
		if c.ThrottleBurst <= 0 {
			return fmt.Errorf("invalid audit batch %s throttle burst %v, must be a positive number", plugin, c.ThrottleBurst)
		}
	}
	return nil
}

// validateVersion parses v as a group version first, so a malformed one
// gets apimachinery's "unexpected GroupVersion string" as kube-apiserver's.
func validateVersion(v string) error {
	gv, err := schema.ParseGroupVersion(v)
	if err != nil {
		return err
	}
	if gv.String() != GroupVersion {
		return fmt.Errorf("invalid group version, allowed versions are %q", []string{GroupVersion})
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// wrapMode puts delegate in mode: blocking-strict as it is, blocking
// with its failures ignored, batch behind a Buffered.
func wrapMode(mode string, delegate Backend, cfg BatchConfig, m *Metrics, clk clock.Clock) Backend {
	switch mode {
	case ModeBlockingStrict:
		return delegate
	case ModeBatch:
		bb, ok := delegate.(BatchBackend)
		if !ok {
			bb = eachEvent{delegate}
		}
		return NewBuffered(bb, cfg, m, clk)
	}
	return ignoreErrors{delegate}
}

// NewBackends builds the log and webhook backends the options ask for,
// each in its mode, and fans them out (Union) as kube-apiserver: nil
// when neither is configured. Close the result (an io.Closer) on
// shutdown: batch backends send what they hold, files are closed.
func NewBackends(logOpts LogOptions, webhookOpts WebhookOptions, m *Metrics) (Backend, error) {
	logOpts, webhookOpts = logOpts.withDefaults(), webhookOpts.withDefaults()
	if err := ValidateOptions(logOpts, webhookOpts); err != nil {
		return nil, err
	}
	var logBackend, webhookBackend Backend
	if webhookOpts.ConfigFile != "" {
		w, err := NewWebhookBackend(webhookOpts.ConfigFile, webhookOpts.InitialBackoff, m)
		if err != nil {
			return nil, err
		}
		webhookBackend = wrapTruncate(wrapMode(webhookOpts.Mode, w, webhookOpts.Batch, m, nil), webhookOpts.Truncate, m)
	}
	if logOpts.Path != "" {
		l, err := NewLogBackend(logOpts, m)
		if err != nil {
			if c, ok := webhookBackend.(interface{ Close() error }); ok {
				_ = c.Close()
			}
			return nil, err
		}
		logBackend = wrapTruncate(wrapMode(logOpts.Mode, l, logOpts.Batch, m, nil), logOpts.Truncate, m)
	}
	return Union(logBackend, webhookBackend), nil
}
