// Package credentials is the kubelet's image pull keyring: registry
// credentials read from a pod's imagePullSecrets (kubernetes.io/dockerconfigjson
// and kubernetes.io/dockercfg secrets) and matched against the image being
// pulled the way the kubelet's docker keyring does: by registry host (with
// "*" globs per DNS label), port and path prefix, the longest key first;
// credentials for Docker Hub ("index.docker.io") apply to images without a
// registry host. The node's credentials (WithNode: the image credential
// provider plugins') follow the pod's, as upstream's. The matches become CRI AuthConfigs for PullImage, each
// tracked with the secret it came from and a hash of its contents
// (upstream's TrackedAuthConfig), for the kubelet's records of which
// credentials pulled an image (impl/kubelet/pullrecords).
package credentials

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultRegistryHost is where credentials for Docker Hub are kept.
const defaultRegistryHost = "index.docker.io"

// Entry is one registry's credentials in a docker config file.
type Entry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// DockerConfig maps a registry location ("https://index.docker.io/v1/",
// "registry.example.com:5000/team") to its credentials: the contents of a
// kubernetes.io/dockercfg secret, and the "auths" of a
// kubernetes.io/dockerconfigjson one.
type DockerConfig map[string]Entry

// Keyring holds credentials by registry key. The zero value is empty.
type Keyring struct {
	index []string // keys, sorted so that longer (more specific) keys come first
	creds map[string][]Tracked
	node  NodeCredentials // looked up after the keyring's own; nil: none
	pod   Pod             // the pod node is asked for
}

// NodeCredentials is where credentials that are not read from a pod's
// secrets come from: upstream's node keyring, the image credential
// provider plugins (impl/kubelet/credentialprovider). LookupTracked is
// given the pod pulling (plugins in service account token mode ask for
// its service account's token) and the image's repository
// ("registry.example.com/team/app", "docker.io/library/nginx").
type NodeCredentials interface {
	LookupTracked(pod Pod, repo string) []Tracked
}

// Pod is the pod whose image is pulled, as upstream's per-pod credential
// provider keyring knows it: its coordinates and its service account
// (spec.serviceAccountName, "" for none), and API, the kubelet's access
// to that service account and its tokens (nil: none).
type Pod struct {
	Namespace, Name, UID string
	ServiceAccountName   string
	API                  ServiceAccountAPI
}

// ServiceAccountAPI is what credential provider plugins in service
// account token mode need of the API server, through the kubelet's
// client: a service account (a get, which the Node authorizer allows for
// the service accounts of the node's pods) and a token for it
// (TokenRequest), as upstream's GetServiceAccountFunc and
// getServiceAccountTokenFunc.
type ServiceAccountAPI interface {
	ServiceAccount(namespace, name string) (*v1.ServiceAccount, error)
	CreateToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// WithNode makes kr's lookups return node's credentials for pod after its
// own, as upstream's MakeDockerKeyring unions a pod's pull secrets with
// the node's keyring (secrets first); kr nil is an empty keyring. It
// returns kr.
func (kr *Keyring) WithNode(node NodeCredentials, pod Pod) *Keyring {
	if kr == nil {
		kr = &Keyring{}
	}
	kr.node, kr.pod = node, pod
	return kr
}

// Source is the secret a credential was read from.
type Source struct {
	UID, Namespace, Name string
}

// ServiceAccount is the service account whose token a credential
// provider plugin exchanged for a credential (upstream's
// ServiceAccountCoordinates).
type ServiceAccount struct {
	UID, Namespace, Name string
}

// Tracked is a credential with where it came from, as upstream's
// TrackedAuthConfig: Source is the secret it was read from, ServiceAccount
// the service account whose token a plugin answered it for (AddFor), both
// nil for the node's own credentials (Add's); Hash a hash of the
// credential's contents (HashAuth).
type Tracked struct {
	Auth           *runtimeapi.AuthConfig
	Source         *Source
	ServiceAccount *ServiceAccount
	Hash           string
}

// HashAuth is a hash of a credential's contents (hex SHA-256 of its
// fields), so that records of the credentials that pulled an image keep no
// secret and notice when a secret's contents change. Upstream hashes its
// own serialization; the hash is the kubelet's own business.
func HashAuth(a *runtimeapi.AuthConfig) string {
	h := sha256.New()
	for _, f := range []string{a.Username, a.Password, a.Auth, a.ServerAddress, a.IdentityToken, a.RegistryToken} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FromSecrets builds a keyring from the pod's image pull secrets, in order.
// Secrets of other types are ignored, as the kubelet does; a malformed
// dockercfg or dockerconfigjson is an error naming the secret.
func FromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	kr := &Keyring{}
	for _, s := range secrets {
		var cfg DockerConfig
		switch s.Type {
		case v1.SecretTypeDockerConfigJson:
			data, ok := s.Data[v1.DockerConfigJsonKey]
			if !ok {
				continue
			}
			var file struct {
				Auths DockerConfig `json:"auths"`
			}
			if err := json.Unmarshal(data, &file); err != nil {
				return nil, fmt.Errorf("reading %s of secret %s/%s: %w", v1.DockerConfigJsonKey, s.Namespace, s.Name, err)
			}
			cfg = file.Auths
		case v1.SecretTypeDockercfg:
			data, ok := s.Data[v1.DockerConfigKey]
			if !ok {
				continue
			}
			if err := json.Unmarshal(data, &cfg); err != nil {
				return nil, fmt.Errorf("reading %s of secret %s/%s: %w", v1.DockerConfigKey, s.Namespace, s.Name, err)
			}
		default:
			continue
		}
		src := &Source{UID: string(s.UID), Namespace: s.Namespace, Name: s.Name}
		if err := kr.add(cfg, src, nil); err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return kr, nil
}

// Add adds a docker config's credentials. A location's scheme is dropped,
// and so is a leading /v1/ or /v2/ of its path ("https://index.docker.io/v1/"
// is key "index.docker.io"); the key is host[:port][/path].
func (kr *Keyring) Add(cfg DockerConfig) error { return kr.add(cfg, nil, nil) }

// AddFor is Add of credentials a plugin answered for sa's token (nil: the
// node's, as Add).
func (kr *Keyring) AddFor(cfg DockerConfig, sa *ServiceAccount) error { return kr.add(cfg, nil, sa) }

// add adds cfg's credentials as read from src (nil: not from a secret),
// or answered for sa's token.
func (kr *Keyring) add(cfg DockerConfig, src *Source, sa *ServiceAccount) error {
	if kr.creds == nil {
		kr.creds = map[string][]Tracked{}
	}
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs) // deterministic order among equal keys
	for _, loc := range locs {
		e := cfg[loc]
		user, pass := e.Username, e.Password
		if e.Auth != "" {
			u, p, err := decodeAuth(e.Auth)
			if err != nil {
				return fmt.Errorf("credentials for %q: %w", loc, err)
			}
			user, pass = u, p
		}
		value := loc
		if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
			value = "https://" + value
		}
		u, err := url.Parse(value)
		if err != nil {
			return fmt.Errorf("registry location %q: %w", loc, err)
		}
		path := u.Path
		if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
			path = path[3:]
		}
		key := u.Host
		if path != "" && path != "/" {
			key += path
		}
		if _, ok := kr.creds[key]; !ok {
			kr.index = append(kr.index, key)
		}
		// No ServerAddress, as upstream's keyring: containerd drops
		// credentials whose ServerAddress is not a URL of the pulled host,
		// which a location without scheme or a glob is not; the keyring
		// has already matched the host.
		a := &runtimeapi.AuthConfig{
			Username: user, Password: pass,
			IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
		}
		kr.creds[key] = append(kr.creds[key], Tracked{Auth: a, Source: src, ServiceAccount: sa, Hash: HashAuth(a)})
	}
	// Reverse lexical order puts a longer key before any key it extends
	// ("reg.io/team/app" before "reg.io/team" before "reg.io").
	sort.Sort(sort.Reverse(sort.StringSlice(kr.index)))
	return nil
}

// decodeAuth decodes a docker config "auth" value: base64 of "user:password".
func decodeAuth(s string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", fmt.Errorf("auth is not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", fmt.Errorf("auth is not user:password")
	}
	return user, strings.Trim(pass, "\x00"), nil
}

// Repository is the repository an image is pulled from, without tag or
// digest, with Docker Hub's implied host and "library/" made explicit
// ("nginx:1.25" is "docker.io/library/nginx").
func Repository(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	return named.Name(), nil
}

// Lookup returns the credentials for an image, most specific key first;
// nil if none match. image may carry a tag or digest.
func (kr *Keyring) Lookup(image string) []*runtimeapi.AuthConfig {
	tracked := kr.LookupTracked(image)
	if len(tracked) == 0 {
		return nil
	}
	out := make([]*runtimeapi.AuthConfig, len(tracked))
	for i, t := range tracked {
		out[i] = t.Auth
	}
	return out
}

// LookupTracked is Lookup with each credential's source and hash: the
// keyring's own, then its node credentials' (WithNode).
func (kr *Keyring) LookupTracked(image string) []Tracked {
	if kr == nil || (len(kr.index) == 0 && kr.node == nil) {
		return nil
	}
	repo, err := Repository(image)
	if err != nil {
		repo = image
	}
	var out []Tracked
	for _, key := range kr.index {
		if Matches(key, repo) {
			out = append(out, kr.creds[key]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repo) {
		out = append(out, kr.creds[defaultRegistryHost]...)
	}
	if kr.node != nil {
		out = append(out, kr.node.LookupTracked(kr.pod, repo)...)
	}
	return out
}

// Matches reports whether a keyring key (host[:port][/path], the host's
// DNS labels may be "*" globs) covers the repository: same number of
// labels each matching its glob, the same port, and the key's path a
// prefix of the repository's.
func Matches(key, repo string) bool {
	k, err := parseSchemeless(key)
	if err != nil {
		return false
	}
	r, err := parseSchemeless(repo)
	if err != nil {
		return false
	}
	kHost, kPort := splitHostPort(k.Host)
	rHost, rPort := splitHostPort(r.Host)
	if kPort != rPort {
		return false
	}
	kParts, rParts := strings.Split(kHost, "."), strings.Split(rHost, ".")
	if len(kParts) != len(rParts) {
		return false
	}
	for i := range kParts {
		if ok, _ := filepath.Match(kParts[i], rParts[i]); !ok {
			return false
		}
	}
	return strings.HasPrefix(r.Path, k.Path)
}

func parseSchemeless(s string) (*url.URL, error) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, err
	}
	u.Host = strings.ToLower(u.Host)
	return u, nil
}

func splitHostPort(hostport string) (string, string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return hostport, ""
}

// isDefaultRegistry reports whether a repository lives on Docker Hub.
func isDefaultRegistry(repo string) bool {
	host, _, _ := strings.Cut(repo, "/")
	return host == "docker.io" || host == defaultRegistryHost
}
