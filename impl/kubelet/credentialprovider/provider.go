// Package credentialprovider is the kubelet's image credential provider
// plugins, as upstream's pkg/credentialprovider/plugin: executables named
// by a CredentialProviderConfig (kubelet.config.k8s.io/v1, the file or
// directory of --image-credential-provider-config, validated as upstream's
// validateCredentialProviderConfig) in --image-credential-provider-bin-dir,
// each asked for the registry credentials of an image its matchImages
// cover (host globs per DNS label, port, path prefix; credentials.Matches)
// with a CredentialProviderRequest on stdin, answering with a
// CredentialProviderResponse on stdout (the provider's apiVersion, one
// minute at most). A response's auth is keyed by match patterns like a
// docker config's, and is cached per its cacheKeyType (the image, its
// registry or everything) for its cacheDuration or the provider's
// defaultCacheDuration (DecideCaching). The credentials are the node's:
// looked up after a pod's pull secrets' (Providers.LookupTracked, upstream's
// external credential provider keyring in MakeDockerKeyring's union), and
// an image pulled with them is one every pod of the node may use
// (KubeletEnsureSecretPulledImages' NodePodsAccessible).
//
// Not done: service-account token mode (tokenAttributes) is validated as
// upstream and then refused by Register.
package credentialprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// Plugin answers a CredentialProviderRequest for an image (the exec
// plugin; tests may give others).
type Plugin interface {
	Exec(ctx context.Context, image string) (*credentialproviderv1.CredentialProviderResponse, error)
}

// Provider is one configured credential provider: its plugin, the images
// it is asked about and its cache of answers.
type Provider struct {
	name            string
	matchImages     []string
	defaultDuration time.Duration
	plugin          Plugin
	now             func() time.Time
	log             *slog.Logger

	mu       sync.Mutex
	cache    cache
	inflight map[string]*call
}

// call is a plugin execution under way, which concurrent asks for the same
// image wait for (upstream's singleflight).
type call struct {
	done    chan struct{}
	resp    *credentialproviderv1.CredentialProviderResponse
	err     error
	waiters int // asks waiting for this run (under Provider.mu)
}

// NewProvider is a provider of cfg's name, matchImages and
// defaultCacheDuration that asks plugin; now is the clock of its cache.
func NewProvider(cfg kubeletconfigv1.CredentialProvider, plugin Plugin, now func() time.Time, log *slog.Logger) *Provider {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var d time.Duration
	if cfg.DefaultCacheDuration != nil {
		d = cfg.DefaultCacheDuration.Duration
	}
	return &Provider{name: cfg.Name, matchImages: cfg.MatchImages, defaultDuration: d, plugin: plugin, now: now, log: log,
		cache: cache{lastPurge: now()}}
}

// ImageAllowed reports whether any of matchImages covers image, as
// upstream's isImageAllowed.
func ImageAllowed(matchImages []string, image string) bool {
	for _, m := range matchImages {
		if credentials.Matches(m, image) {
			return true
		}
	}
	return false
}

// Provide is the provider's credentials for image (a repository without
// tag: "registry.example.com/team/app"), as upstream's provide: none for
// an image its matchImages do not cover, the cached ones while they last,
// else the plugin's answer (cached as DecideCaching says). A failing
// plugin or an unusable answer is logged and gives none.
func (p *Provider) Provide(image string) credentials.DockerConfig {
	if !ImageAllowed(p.matchImages, image) {
		return nil
	}
	p.mu.Lock()
	if cfg, ok := p.cache.lookup(image, p.now()); ok {
		p.mu.Unlock()
		return cfg
	}
	c, running := p.inflight[image]
	if running {
		c.waiters++
	} else {
		c = &call{done: make(chan struct{})}
		if p.inflight == nil {
			p.inflight = map[string]*call{}
		}
		p.inflight[image] = c
	}
	p.mu.Unlock()
	if running {
		<-c.done
	} else {
		c.resp, c.err = p.plugin.Exec(context.Background(), image)
		p.mu.Lock()
		delete(p.inflight, image)
		p.mu.Unlock()
		close(c.done)
	}
	if c.err != nil {
		p.log.Error("Failed getting credential from external registry credential provider", "provider", p.name, "image", image, "err", c.err)
		return nil
	}
	caching, err := DecideCaching(c.resp, image, p.defaultDuration, p.now())
	if err != nil {
		p.log.Error("unusable credential provider response", "provider", p.name, "image", image, "err", err)
		return nil
	}
	cfg := dockerConfig(c.resp)
	if caching.Cache {
		p.mu.Lock()
		p.cache.add(caching.Key, cfg, caching.ExpiresAt)
		p.mu.Unlock()
	}
	return cfg
}

// Providers is the node's credential providers, in configuration order.
// Nil or empty has no credentials.
type Providers struct {
	list []*Provider
}

// NewProviders is a set of providers.
func NewProviders(ps ...*Provider) *Providers { return &Providers{list: ps} }

// LookupTracked is the providers' credentials for image (a repository:
// "registry.example.com/team/app", "docker.io/library/nginx"), as
// upstream's external credential provider keyring: every provider's
// answer in one keyring, looked up most specific pattern first. None has
// a Source: they are the node's, not a pod's.
func (ps *Providers) LookupTracked(image string) []credentials.Tracked {
	if ps == nil || len(ps.list) == 0 {
		return nil
	}
	kr := &credentials.Keyring{}
	for _, p := range ps.list {
		cfg := p.Provide(image)
		// One pattern at a time: one that does not parse is skipped with
		// a log, as upstream's keyring skips an invalid entry.
		for pattern, e := range cfg {
			if err := kr.Add(credentials.DockerConfig{pattern: e}); err != nil {
				p.log.Error("ignoring a credential provider's pattern", "provider", p.name, "image", image, "err", err)
			}
		}
	}
	return kr.LookupTracked(image)
}

// Register reads and validates the configuration at configPath (a file or
// a directory) and makes a provider of each entry, executing binDir's
// executable of its name, as upstream's RegisterCredentialProviderPlugins;
// now is the clock of their caches.
func Register(configPath, binDir string, now func() time.Time, log *slog.Logger) (*Providers, error) {
	if _, err := os.Stat(binDir); err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("plugin binary directory %s did not exist", binDir)
		}
		return nil, fmt.Errorf("error inspecting binary directory %s: %w", binDir, err)
	}
	cfg, err := ReadConfig(configPath)
	if err != nil {
		return nil, err
	}
	if errs := ValidateConfig(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("failed to validate credential provider config: %v", errs.ToAggregate())
	}
	ps := &Providers{}
	for _, pc := range cfg.Providers {
		if pc.TokenAttributes != nil {
			return nil, fmt.Errorf("credential provider %s: tokenAttributes (service account token mode) is not supported by this kubelet", pc.Name)
		}
		// Upstream's message names the path LookPath returned, which is
		// empty when it fails; this one names the path looked for.
		bin := filepath.Join(binDir, pc.Name)
		if _, err := exec.LookPath(bin); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
				return nil, fmt.Errorf("plugin binary executable %s did not exist", bin)
			}
			return nil, fmt.Errorf("error inspecting binary executable %s: %w", bin, err)
		}
		plugin := &ExecPlugin{Name: pc.Name, Path: bin, APIVersion: pc.APIVersion, Args: pc.Args, Env: pc.Env}
		ps.list = append(ps.list, NewProvider(pc, plugin, now, log))
	}
	return ps, nil
}
