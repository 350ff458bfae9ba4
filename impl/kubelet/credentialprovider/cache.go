package credentialprovider

import (
	"fmt"
	"strings"
	"time"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// globalCacheKey is the cache key of a Global response, in angle brackets
// so that no image or registry has it (as upstream's).
const globalCacheKey = "<global>"

// registry is an image's registry host (and port): what precedes its first
// "/", as upstream's parseRegistry.
func registry(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}

// cacheCandidates are the keys a cached response for image may be under,
// in the order upstream's getCachedCredentials tries them: the image, its
// registry, then the global key.
func cacheCandidates(image string) [3]string {
	return [3]string{image, registry(image), globalCacheKey}
}

// Caching is what is to be done with a plugin's response: cached under Key
// until ExpiresAt when Cache.
type Caching struct {
	Cache     bool
	Key       string
	ExpiresAt time.Time
}

// DecideCaching is upstream's pluginProvider.provide after a plugin
// answered for image: the cacheKeyType picks the key (Image: the image as
// asked, Registry: its registry, Global: one key for all; anything else is
// an error and the response is not used), an explicit cacheDuration of 0
// is not cached, none means the provider's defaultCacheDuration (not
// cached when that is 0), and an entry expires that long after now.
func DecideCaching(resp *credentialproviderv1.CredentialProviderResponse, image string, defaultDuration time.Duration, now time.Time) (Caching, error) {
	var key string
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		key = image
	case credentialproviderv1.RegistryPluginCacheKeyType:
		key = registry(image)
	case credentialproviderv1.GlobalPluginCacheKeyType:
		key = globalCacheKey
	default:
		return Caching{}, fmt.Errorf("credential provider plugin did not return a valid cacheKeyType: %q", resp.CacheKeyType)
	}
	d := defaultDuration
	if resp.CacheDuration != nil {
		d = resp.CacheDuration.Duration
	}
	if d == 0 {
		return Caching{Key: key}, nil
	}
	return Caching{Cache: true, Key: key, ExpiresAt: now.Add(d)}, nil
}

// dockerConfig is a response's credentials as a docker config: its auth
// keys are match patterns (host globs, port, path prefix) like a
// dockercfg's locations.
func dockerConfig(resp *credentialproviderv1.CredentialProviderResponse) credentials.DockerConfig {
	cfg := make(credentials.DockerConfig, len(resp.Auth))
	for pattern, a := range resp.Auth {
		cfg[pattern] = credentials.Entry{Username: a.Username, Password: a.Password}
	}
	return cfg
}

// cacheEntry is one cached response's credentials.
type cacheEntry struct {
	config    credentials.DockerConfig
	expiresAt time.Time
}

// expired: upstream's cacheExpirationPolicy, expired once now is after
// the expiry (not at it).
func (e cacheEntry) expired(now time.Time) bool { return now.After(e.expiresAt) }

// cache is a provider's cached responses by key. Expired entries are
// dropped when looked up, and all of them at most every purgeInterval (as
// upstream's expiration store and its 15 minute List).
type cache struct {
	entries   map[string]cacheEntry
	lastPurge time.Time
}

const purgeInterval = 15 * time.Minute

// lookup returns image's cached credentials, trying cacheCandidates in
// order, each with saKey (ServiceAccountCacheKey; "" outside token mode)
// as CacheKey combines them.
func (c *cache) lookup(image, saKey string, now time.Time) (credentials.DockerConfig, bool, error) {
	if now.After(c.lastPurge.Add(purgeInterval)) {
		for k, e := range c.entries {
			if e.expired(now) {
				delete(c.entries, k)
			}
		}
		c.lastPurge = now
	}
	for _, base := range cacheCandidates(image) {
		k, err := CacheKey(base, saKey)
		if err != nil {
			return nil, false, err
		}
		e, ok := c.entries[k]
		if !ok {
			continue
		}
		if e.expired(now) {
			delete(c.entries, k)
			continue
		}
		return e.config, true, nil
	}
	return nil, false, nil
}

func (c *cache) add(key string, cfg credentials.DockerConfig, expiresAt time.Time) {
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	c.entries[key] = cacheEntry{config: cfg, expiresAt: expiresAt}
}
