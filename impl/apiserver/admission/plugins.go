package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// Starter is a plugin with background work (Start returns when ctx ends).
type Starter interface {
	Start(ctx context.Context)
}

// factory builds one plugin from the server's stores. The plugin is a
// Mutator, a Validator or both, and may be a Starter.
type factory func(d *deps) (any, error)

type registered struct {
	name string
	// defaultOn: enabled when --enable-admission-plugins does not name it,
	// as in kube-apiserver.
	defaultOn bool
	new       factory
}

// plugins is the one registry of admission plugins, in the order they run
// (kube-apiserver's order: mutating ones run in this order, then validating
// ones in this order).
var plugins = []registered{
	{"NamespaceLifecycle", true, newNamespaceLifecycle},
	{"LimitRanger", true, newLimitRanger},
	{"ServiceAccount", true, newServiceAccount},
	{"NodeRestriction", false, newNodeRestriction},
	{"AlwaysPullImages", false, newAlwaysPullImages},
	{"PodSecurity", true, newPodSecurity},
	{"Priority", true, newPriority},
	{"DefaultTolerationSeconds", true, newDefaultTolerationSeconds},
	{"RuntimeClass", true, newRuntimeClassPlugin},
	{"CertificateApproval", true, newCertificateApproval},
	{"CertificateSigning", true, newCertificateSigning},
	{"CertificateSubjectRestriction", true, newCertificateSubjectRestriction},
	{"PodTopologyLabels", true, newPodTopologyLabels},
	{"PodResizeValidator", true, newPodResizeValidator},
	{"MutatingAdmissionWebhook", true, newMutatingWebhook},
	{"ValidatingAdmissionWebhook", true, newValidatingWebhook},
	{"ResourceQuota", true, newResourceQuota},
}

// AllPlugins names every plugin, in the order they run.
func AllPlugins() []string {
	out := make([]string, len(plugins))
	for i, p := range plugins {
		out[i] = p.name
	}
	return out
}

// DefaultPlugins names the plugins enabled by default (kube-apiserver's
// default set, restricted to the plugins kubeproof has).
func DefaultPlugins() []string {
	var out []string
	for _, p := range plugins {
		if p.defaultOn {
			out = append(out, p.name)
		}
	}
	return out
}

// EnabledPlugins resolves --enable-admission-plugins and
// --disable-admission-plugins as kube-apiserver does: the default set plus
// enable, minus disable, in the registry's order. Unknown names, and names
// in both lists, are errors: every one, together, as ValidatePluginFlags
// reports them.
func EnabledPlugins(enable, disable []string) ([]string, error) {
	if err := utilerrors.NewAggregate(ValidatePluginFlags(enable, disable)); err != nil {
		return nil, err
	}
	on := map[string]bool{}
	for _, p := range plugins {
		on[p.name] = p.defaultOn
	}
	for _, n := range enable {
		on[n] = true
	}
	for _, n := range disable {
		on[n] = false
	}
	var out []string
	for _, p := range plugins {
		if on[p.name] {
			out = append(out, p.name)
		}
	}
	return out, nil
}

// Options configure plugins as kube-apiserver's flags and admission
// configuration file do; the zero value is kube-apiserver's defaults.
type Options struct {
	// NotReadyTolerationSeconds and UnreachableTolerationSeconds are
	// --default-not-ready-toleration-seconds and
	// --default-unreachable-toleration-seconds (0: 300).
	NotReadyTolerationSeconds, UnreachableTolerationSeconds int64
	// PodSecurityDefault{Enforce,Warn,Audit} are the levels ("":
	// privileged) and PodSecurityDefault*Version the policy versions ("":
	// latest; else "latest" or "v1.N") of namespaces without pod-security
	// labels: PodSecurityConfiguration's defaults.
	PodSecurityDefaultEnforce, PodSecurityDefaultWarn, PodSecurityDefaultAudit                      string
	PodSecurityDefaultEnforceVersion, PodSecurityDefaultWarnVersion, PodSecurityDefaultAuditVersion string
	// PodSecurityExempt* are PodSecurityConfiguration's exemptions.
	PodSecurityExemptUsers, PodSecurityExemptNamespaces, PodSecurityExemptRuntimeClasses []string
	// QuotaLimitedResources are ResourceQuota's limitedResources.
	QuotaLimitedResources []LimitedResource
	// Authorizer is the API server's authorizer (kube-apiserver's
	// WantsAuthorizer): NodeRestriction asks it whether a node may request
	// tokens for an audience its pod does not use, CertificateApproval and
	// CertificateSigning whether a user may approve or sign for a signer
	// (nil: nobody may).
	Authorizer auth.Authorizer
	// EnableAggregatorRouting is --enable-aggregator-routing: webhooks
	// addressed by service are called at one of the service's ready
	// endpoints rather than at its ClusterIP.
	EnableAggregatorRouting bool
	// MutatingWebhookCredentials and ValidatingWebhookCredentials are the
	// users of the webhook plugins' kubeConfigFile, the credentials their
	// webhooks are called with (nil: none).
	MutatingWebhookCredentials, ValidatingWebhookCredentials *WebhookCredentials
}

// NewPlugins builds the named plugins (in the registry's order, whatever
// the order of names) on the server's stores with default Options. Each
// plugin lands in mutators, validators or both; starters are the
// background loops (the plugins' caches) the server must run with its
// lifetime context.
func NewPlugins(names []string, stores StoreGetter) (mutators []Mutator, validators []Validator, starters []func(context.Context), err error) {
	return NewPluginsWithOptions(names, stores, Options{})
}

// NewPluginsWithOptions is NewPlugins with configuration.
func NewPluginsWithOptions(names []string, stores StoreGetter, opts Options) (mutators []Mutator, validators []Validator, starters []func(context.Context), err error) {
	for _, l := range []string{opts.PodSecurityDefaultEnforce, opts.PodSecurityDefaultWarn, opts.PodSecurityDefaultAudit} {
		if l != "" && !validLevel(l) {
			return nil, nil, nil, fmt.Errorf("pod security default level %q: must be one of privileged, baseline, restricted", l)
		}
	}
	for _, v := range []string{opts.PodSecurityDefaultEnforceVersion, opts.PodSecurityDefaultWarnVersion, opts.PodSecurityDefaultAuditVersion} {
		if _, ok := parsePolicyVersion(v); v != "" && !ok {
			return nil, nil, nil, fmt.Errorf(`pod security default version %q: must be "latest" or "v1.x"`, v)
		}
	}
	want := map[string]bool{}
	for _, n := range names {
		if !slices.ContainsFunc(plugins, func(p registered) bool { return p.name == n }) {
			return nil, nil, nil, fmt.Errorf("admission plugin %q is unknown (known: %s)", n, strings.Join(AllPlugins(), ", "))
		}
		want[n] = true
	}
	d := &deps{stores: stores, opts: opts}
	for _, p := range plugins {
		if !want[p.name] {
			continue
		}
		plugin, err := p.new(d)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("building admission plugin %s: %w", p.name, err)
		}
		if m, ok := plugin.(Mutator); ok {
			mutators = append(mutators, m)
		}
		if v, ok := plugin.(Validator); ok {
			validators = append(validators, v)
		}
		if s, ok := plugin.(Starter); ok {
			starters = append(starters, s.Start)
		}
	}
	for _, c := range d.order {
		starters = append(starters, c.run)
	}
	return mutators, validators, starters, nil
}

func newNamespaceLifecycle(d *deps) (any, error) {
	get, err := d.namespaces()
	if err != nil {
		return nil, err
	}
	return &NamespaceLifecycle{Get: get, Immortal: ImmortalNamespaces}, nil
}

// ImmortalNamespaces may not be deleted (kube-apiserver's default,
// kube-system and kube-public).
var ImmortalNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}
