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
// defaultCacheDuration (DecideCaching). The credentials are looked up
// after a pod's pull secrets' (Providers.LookupTracked, upstream's
// external credential provider keyring in MakeDockerKeyring's union);
// outside token mode they are the node's, and an image pulled with them
// is one every pod of the node may use (KubeletEnsureSecretPulledImages'
// NodePodsAccessible).
//
// In service account token mode (tokenAttributes, serviceaccount.go) a
// plugin is asked with a token of the pulling pod's service account, and
// its credentials are that service account's, not the node's: an image
// pulled with them is recorded for the service account, and a pod of
// another one must pull it again.
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

	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// Plugin answers a CredentialProviderRequest for an image, with a service
// account token and annotations in token mode ("" and nil otherwise) (the
// exec plugin; tests may give others).
type Plugin interface {
	Exec(ctx context.Context, image, serviceAccountToken string, serviceAccountAnnotations map[string]string) (*credentialproviderv1.CredentialProviderResponse, error)
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
	token           *tokenMode // nil: not in service account token mode

	mu       sync.Mutex
	cache    cache
	inflight map[string]*call
}

// call is a plugin execution under way, which concurrent asks for the same
// image (and in token mode the same token and annotations) wait for
// (upstream's singleflight).
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
		cache: cache{lastPurge: now()}, token: newTokenMode(cfg, newTokenCache(now))}
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
// tag: "registry.example.com/team/app") for no pod in particular:
// ProvideFor with no pod.
func (p *Provider) Provide(image string) credentials.DockerConfig {
	cfg, _ := p.ProvideFor(credentials.Pod{}, image)
	return cfg
}

// ProvideFor is the provider's credentials for image when pod pulls it,
// and the service account they are for (nil: none, the node's), as
// upstream's pluginProvider.provide: none for an image its matchImages do
// not cover; in token mode (tokenAttributes) none for a pod without
// service account when requireServiceAccount, else the service account
// is read (none when it lacks a required annotation), a token requested
// for it (the provider's audience, bound to the pod), and both go to the
// plugin; the cached answer while it lasts (cached by cacheKeyType and,
// in token mode, ServiceAccountCacheKey), else the plugin's (cached as
// DecideCaching says). A failing plugin, an unusable answer, or in token
// mode an answer whose password is the token itself unless cacheType is
// Token, is logged and gives none.
func (p *Provider) ProvideFor(pod credentials.Pod, image string) (credentials.DockerConfig, *credentials.ServiceAccount) {
	if !ImageAllowed(p.matchImages, image) {
		return nil, nil
	}
	var (
		token, saKey string
		annotations  map[string]string
		sa           *credentials.ServiceAccount
	)
	flightKey := image
	if p.token != nil {
		if pod.ServiceAccountName == "" && p.token.requireServiceAccount {
			p.log.Debug("Service account name is empty for pod", "provider", p.name, "pod", pod.Namespace+"/"+pod.Name)
			return nil, nil
		}
		// A pod without service account (a static pod) asks the plugin
		// without a token when the provider does not require one.
		if pod.ServiceAccountName != "" {
			var err error
			token, annotations, sa, err = p.serviceAccountToken(pod)
			switch {
			case err != nil && isRequiredAnnotationNotFound(err):
				p.log.Debug("Failed to get service account data", "provider", p.name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName, "err", err)
				return nil, nil
			case err != nil:
				p.log.Error("Failed to get a service account token for a credential provider", "provider", p.name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName, "err", err)
				return nil, nil
			}
			hash := tokenHash(token)
			if saKey, err = ServiceAccountCacheKey(sa.Namespace, sa.Name, types.UID(sa.UID), annotations, p.token.cacheType, hash); err == nil {
				flightKey, err = singleFlightKey(image, hash, annotations)
			}
			if err != nil {
				p.log.Error("Error generating service account cache key", "provider", p.name, "err", err)
				return nil, nil
			}
		}
	}
	p.mu.Lock()
	cfg, ok, err := p.cache.lookup(image, saKey, p.now())
	if err != nil || ok {
		p.mu.Unlock()
		if err != nil {
			p.log.Error("Failed to get cached docker config", "provider", p.name, "err", err)
			return nil, nil
		}
		return cfg, sa
	}
	c, running := p.inflight[flightKey]
	if running {
		c.waiters++
	} else {
		c = &call{done: make(chan struct{})}
		if p.inflight == nil {
			p.inflight = map[string]*call{}
		}
		p.inflight[flightKey] = c
	}
	p.mu.Unlock()
	if running {
		<-c.done
	} else {
		c.resp, c.err = p.plugin.Exec(context.Background(), image, token, annotations)
		p.mu.Lock()
		delete(p.inflight, flightKey)
		p.mu.Unlock()
		close(c.done)
	}
	if c.err != nil {
		p.log.Error("Failed getting credential from external registry credential provider", "provider", p.name, "image", image, "err", c.err)
		return nil, nil
	}
	if token != "" && p.token.cacheType != kubeletconfigv1.TokenServiceAccountTokenCacheType {
		for _, a := range c.resp.Auth {
			if a.Password == token {
				p.log.Error("Credential provider plugin returned the service account token as the password, which is not allowed when service account cache type is not set to 'Token'", "provider", p.name, "image", image)
				return nil, nil
			}
		}
	}
	caching, err := DecideCaching(c.resp, image, p.defaultDuration, p.now())
	if err != nil {
		p.log.Error("unusable credential provider response", "provider", p.name, "image", image, "err", err)
		return nil, nil
	}
	cfg = dockerConfig(c.resp)
	if caching.Cache {
		key, err := CacheKey(caching.Key, saKey)
		if err != nil {
			p.log.Error("Error generating cache key", "provider", p.name, "err", err)
			return nil, nil
		}
		p.mu.Lock()
		p.cache.add(key, cfg, caching.ExpiresAt)
		p.mu.Unlock()
	}
	return cfg, sa
}

// serviceAccountToken reads pod's service account and requests a token of
// it for the plugin, as upstream's getServiceAccountData and
// getServiceAccountToken: the token, the annotations the plugin is given
// and the service account's coordinates.
func (p *Provider) serviceAccountToken(pod credentials.Pod) (string, map[string]string, *credentials.ServiceAccount, error) {
	if pod.API == nil {
		return "", nil, nil, fmt.Errorf("no API access to read service account %s/%s", pod.Namespace, pod.ServiceAccountName)
	}
	obj, err := pod.API.ServiceAccount(pod.Namespace, pod.ServiceAccountName)
	if err != nil {
		return "", nil, nil, fmt.Errorf("getting service account %s/%s: %w", pod.Namespace, pod.ServiceAccountName, err)
	}
	annotations, err := ServiceAccountAnnotations(obj, p.token.required, p.token.optional)
	if err != nil {
		return "", nil, nil, err
	}
	tr := TokenRequest(p.token.audience, pod.Name, types.UID(pod.UID), obj.UID)
	token, err := p.token.tokens.token(pod.API, pod.Namespace, pod.ServiceAccountName, tr)
	if err != nil {
		return "", nil, nil, fmt.Errorf("getting a token of service account %s/%s: %w", pod.Namespace, pod.ServiceAccountName, err)
	}
	return token, annotations, &credentials.ServiceAccount{UID: string(obj.UID), Namespace: pod.Namespace, Name: pod.ServiceAccountName}, nil
}

// Providers is the node's credential providers, in configuration order.
// Nil or empty has no credentials.
type Providers struct {
	list []*Provider
}

// NewProviders is a set of providers.
func NewProviders(ps ...*Provider) *Providers { return &Providers{list: ps} }

// LookupTracked is the providers' credentials for image (a repository:
// "registry.example.com/team/app", "docker.io/library/nginx") when pod
// pulls it, as upstream's external credential provider keyring: every
// provider's answer in one keyring, looked up most specific pattern
// first. None has a Source (they are not read from a pod's secret); those
// a plugin in token mode gave for the pod's service account name it.
func (ps *Providers) LookupTracked(pod credentials.Pod, image string) []credentials.Tracked {
	if ps == nil || len(ps.list) == 0 {
		return nil
	}
	kr := &credentials.Keyring{}
	for _, p := range ps.list {
		cfg, sa := p.ProvideFor(pod, image)
		// One pattern at a time: one that does not parse is skipped with
		// a log, as upstream's keyring skips an invalid entry.
		for pattern, e := range cfg {
			if err := kr.AddFor(credentials.DockerConfig{pattern: e}, sa); err != nil {
				p.log.Error("ignoring a credential provider's pattern", "provider", p.name, "image", image, "err", err)
			}
		}
	}
	return kr.LookupTracked(image)
}

// ForgetPod drops what the providers hold for the pod uid once it is
// removed from the kubelet: the service account tokens requested bound to
// it for plugins in token mode, as upstream's kubelet drops a pod's tokens
// from its token manager (DeleteServiceAccountToken). Answers cached by
// cacheKeyType stay until they expire, as upstream's (with cacheType
// Token they are keyed by a pod's token, and unused once it is gone).
func (ps *Providers) ForgetPod(uid types.UID) {
	if ps == nil {
		return
	}
	var last *tokenCache
	for _, p := range ps.list {
		if p.token != nil && p.token.tokens != last {
			last = p.token.tokens
			last.forgetPod(uid)
		}
	}
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
	tokens := newTokenCache(now)
	for _, pc := range cfg.Providers {
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
		p := NewProvider(pc, plugin, now, log)
		if p.token != nil {
			p.token.tokens = tokens // one token cache for the node, as upstream's token manager
		}
		ps.list = append(ps.list, p)
	}
	return ps, nil
}
