package credentialprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// TestDecideCaching: upstream's choice of cache key by cacheKeyType and of
// expiry by cacheDuration, or the provider's default when none.
func TestDecideCaching(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	const image = "registry.example.com:5000/team/app"
	for _, tc := range []struct {
		name     string
		keyType  credentialproviderv1.PluginCacheKeyType
		duration *metav1.Duration
		def      time.Duration
		want     Caching
		err      string
	}{
		{"image, own duration", "Image", duration(time.Minute), time.Hour, Caching{true, image, now.Add(time.Minute)}, ""},
		{"registry, default", "Registry", nil, time.Hour, Caching{true, "registry.example.com:5000", now.Add(time.Hour)}, ""},
		{"global", "Global", duration(time.Second), 0, Caching{true, globalCacheKey, now.Add(time.Second)}, ""},
		{"explicit 0: not cached", "Image", duration(0), time.Hour, Caching{false, image, time.Time{}}, ""},
		{"no duration, default 0: not cached", "Registry", nil, 0, Caching{false, "registry.example.com:5000", time.Time{}}, ""},
		{"no key type", "", nil, time.Hour, Caching{}, `credential provider plugin did not return a valid cacheKeyType: ""`},
		{"unknown key type", "Pod", nil, time.Hour, Caching{}, `credential provider plugin did not return a valid cacheKeyType: "Pod"`},
	} {
		got, err := DecideCaching(&credentialproviderv1.CredentialProviderResponse{CacheKeyType: tc.keyType, CacheDuration: tc.duration}, image, tc.def, now)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestImageAllowed: matchImages as upstream's URLsMatchStr: a glob per DNS
// label (same number of labels), the same port, a path prefix.
func TestImageAllowed(t *testing.T) {
	for _, tc := range []struct {
		match, image string
		want         bool
	}{
		{"123456789.dkr.ecr.us-east-1.amazonaws.com", "123456789.dkr.ecr.us-east-1.amazonaws.com/app", true},
		{"*.azurecr.io", "team.azurecr.io/app", true},
		{"*.azurecr.io", "azurecr.io/app", false},
		{"*.azurecr.io", "a.b.azurecr.io/app", false},
		{"*.*.registry.io", "a.b.registry.io/app", true},
		{"gcr.io", "gcr.io/project/app", true},
		{"gcr.io", "eu.gcr.io/project/app", false},
		{"registry.io:8080/path", "registry.io:8080/path/app", true},
		{"registry.io:8080/path", "registry.io/path/app", false},
		{"registry.io:8080/path", "registry.io:8080/other/app", false},
		{"docker.io", "docker.io/library/nginx", true},
	} {
		if got := ImageAllowed([]string{"nomatch.example", tc.match}, tc.image); got != tc.want {
			t.Errorf("ImageAllowed(%q, %q) = %v, want %v", tc.match, tc.image, got, tc.want)
		}
	}
}

// fakePlugin answers with its response and counts its calls by image,
// keeping the tokens and annotations it was given.
type fakePlugin struct {
	mu          sync.Mutex
	resp        credentialproviderv1.CredentialProviderResponse
	err         error
	calls       []string
	tokens      []string
	annotations []map[string]string
}

func (f *fakePlugin) Exec(_ context.Context, image, token string, annotations map[string]string) (*credentialproviderv1.CredentialProviderResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, image)
	f.tokens = append(f.tokens, token)
	f.annotations = append(f.annotations, annotations)
	r := f.resp
	return &r, f.err
}

// TestProviderCachesPerKeyType: a response is reused for what its
// cacheKeyType covers until its duration has passed (by the injected
// clock), then the plugin is asked again; images outside matchImages
// never reach the plugin.
func TestProviderCachesPerKeyType(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	auth := map[string]credentialproviderv1.AuthConfig{"*.example.com": {Username: "u", Password: "p"}}
	cfg := kubeletconfigv1.CredentialProvider{Name: "p", MatchImages: []string{"*.example.com"}, DefaultCacheDuration: duration(time.Hour)}
	for _, tc := range []struct {
		keyType credentialproviderv1.PluginCacheKeyType
		dur     *metav1.Duration
		// images asked in turn, and how many calls the plugin has seen after each
		images []string
		calls  []int
		ttl    time.Duration
	}{
		{"Image", duration(time.Minute), []string{"a.example.com/x", "a.example.com/x", "a.example.com/y", "b.example.com/x"}, []int{1, 1, 2, 3}, time.Minute},
		{"Registry", nil, []string{"a.example.com/x", "a.example.com/y", "b.example.com/x", "b.example.com/z"}, []int{1, 1, 2, 2}, time.Hour},
		{"Global", duration(time.Minute), []string{"a.example.com/x", "b.example.com/y", "c.example.com/z"}, []int{1, 1, 1}, time.Minute},
		{"Image", duration(0), []string{"a.example.com/x", "a.example.com/x"}, []int{1, 2}, 0},
	} {
		now = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
		f := &fakePlugin{resp: credentialproviderv1.CredentialProviderResponse{CacheKeyType: tc.keyType, CacheDuration: tc.dur, Auth: auth}}
		p := NewProvider(cfg, f, clock, nil)
		for i, image := range tc.images {
			got := p.Provide(image)
			if got["*.example.com"].Username != "u" || len(f.calls) != tc.calls[i] {
				t.Fatalf("%s: after %s: %+v and %d calls, want %d", tc.keyType, image, got, len(f.calls), tc.calls[i])
			}
		}
		if tc.ttl == 0 {
			continue
		}
		calls := len(f.calls)
		now = now.Add(tc.ttl) // at the expiry: still cached (expired only after it)
		p.Provide(tc.images[0])
		if len(f.calls) != calls {
			t.Errorf("%s: asked again at the expiry", tc.keyType)
		}
		now = now.Add(time.Nanosecond)
		p.Provide(tc.images[0])
		if len(f.calls) != calls+1 {
			t.Errorf("%s: not asked again after the expiry (%d calls)", tc.keyType, len(f.calls))
		}
	}

	f := &fakePlugin{resp: credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Image", Auth: auth}}
	p := NewProvider(cfg, f, clock, nil)
	if got := p.Provide("other.io/x"); got != nil || len(f.calls) != 0 {
		t.Errorf("image outside matchImages: %+v, %d calls", got, len(f.calls))
	}
	// A failing plugin and an answer without a valid cacheKeyType give
	// nothing, and are not cached.
	f.err = errors.New("boom")
	if got := p.Provide("a.example.com/x"); got != nil {
		t.Errorf("failing plugin gave %+v", got)
	}
	f.err, f.resp.CacheKeyType = nil, "Bogus"
	if got := p.Provide("a.example.com/x"); got != nil || len(f.calls) != 2 {
		t.Errorf("invalid cacheKeyType gave %+v after %d calls", got, len(f.calls))
	}
}

// blockingPlugin answers once released, counting its runs.
type blockingPlugin struct {
	release chan struct{}
	mu      sync.Mutex
	runs    int
}

func (b *blockingPlugin) Exec(context.Context, string, string, map[string]string) (*credentialproviderv1.CredentialProviderResponse, error) {
	b.mu.Lock()
	b.runs++
	b.mu.Unlock()
	<-b.release
	return &credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Image", CacheDuration: duration(0),
		Auth: map[string]credentialproviderv1.AuthConfig{"reg.example.com": {Username: "u"}}}, nil
}

// TestProviderOneRunPerImage: an ask for an image whose plugin run is
// under way waits for that run's answer instead of running the plugin
// again (upstream's singleflight), even when the answer is not cached.
func TestProviderOneRunPerImage(t *testing.T) {
	b := &blockingPlugin{release: make(chan struct{})}
	p := NewProvider(kubeletconfigv1.CredentialProvider{Name: "p", MatchImages: []string{"reg.example.com"}, DefaultCacheDuration: duration(0)}, b, nil, nil)
	results := make(chan string, 2)
	ask := func() { results <- p.Provide("reg.example.com/app")["reg.example.com"].Username }
	go ask()
	waitFor(t, "the first run", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.runs == 1 })
	go ask()
	waitFor(t, "the second ask to wait", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		c := p.inflight["reg.example.com/app"]
		return c != nil && c.waiters == 1
	})
	close(b.release)
	for range 2 {
		if u := <-results; u != "u" {
			t.Errorf("answer %q", u)
		}
	}
	if b.runs != 1 {
		t.Errorf("%d runs, want 1", b.runs)
	}
	// Not cached: a later ask runs the plugin again.
	p.Provide("reg.example.com/app")
	if b.runs != 2 {
		t.Errorf("%d runs after a later ask, want 2", b.runs)
	}
}

// waitFor polls cond with a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProvidersLookupTracked: every provider's answer in one keyring,
// most specific pattern first, none with a source (the node's).
func TestProvidersLookupTracked(t *testing.T) {
	mk := func(name, pattern, user string) *Provider {
		return NewProvider(kubeletconfigv1.CredentialProvider{Name: name, MatchImages: []string{"*.example.com"}, DefaultCacheDuration: duration(0)},
			&fakePlugin{resp: credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Image", Auth: map[string]credentialproviderv1.AuthConfig{pattern: {Username: user}}}}, nil, nil)
	}
	ps := NewProviders(mk("a", "*.example.com", "broad"), mk("b", "reg.example.com/team", "narrow"), mk("c", "other.io", "none"))
	got := ps.LookupTracked(credentials.Pod{}, "reg.example.com/team/app")
	if len(got) != 2 || got[0].Auth.Username != "narrow" || got[1].Auth.Username != "broad" || got[0].Source != nil || got[1].Source != nil {
		t.Fatalf("%+v: want narrow then broad, without source", got)
	}
	// A pattern that does not parse is skipped, not the whole answer, as
	// upstream's keyring skips an invalid entry.
	odd := NewProvider(kubeletconfigv1.CredentialProvider{Name: "odd", MatchImages: []string{"*.example.com"}, DefaultCacheDuration: duration(0)},
		&fakePlugin{resp: credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Image", Auth: map[string]credentialproviderv1.AuthConfig{
			"%zz": {Username: "bad"}, "reg.example.com": {Username: "good"}, "reg.example.com/%zz": {Username: "bad too"}}}}, nil, nil)
	if got := NewProviders(odd).LookupTracked(credentials.Pod{}, "reg.example.com/team/app"); len(got) != 1 || got[0].Auth.Username != "good" {
		t.Errorf("answer with unusable patterns: %+v, want the good one", got)
	}
	var none *Providers
	if got := none.LookupTracked(credentials.Pod{}, "reg.example.com/x"); got != nil {
		t.Errorf("nil providers: %+v", got)
	}
}

// plugin is a credential provider executable for the tests: it appends its
// arguments, $PLUGIN_ENV and its request to $CALLS and answers with the
// file $RESPONSE; argument "fail" fails with a message on stderr, "hang"
// does not answer.
const plugin = `#!/bin/sh
case "$1" in
fail) echo "no credentials today" >&2; exit 3;;
hang) exec sleep 600;;
esac
{ echo "args=$* env=$PLUGIN_ENV"; cat; echo; } >> "$CALLS"
cat "$RESPONSE"
`

// installPlugin writes the test plugin as dir/name.
func installPlugin(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExecPlugin: the request on stdin in the provider's apiVersion, the
// configured arguments and environment, the response decoded; upstream's
// errors for a failing run (with its stderr), a hung one (the timeout), a
// response of another version and one that does not decode.
func TestExecPlugin(t *testing.T) {
	dir := t.TempDir()
	path := installPlugin(t, dir, "test-plugin")
	calls, response := filepath.Join(dir, "calls"), filepath.Join(dir, "response")
	env := []kubeletconfigv1.ExecEnvVar{{Name: "CALLS", Value: calls}, {Name: "RESPONSE", Value: response}, {Name: "PLUGIN_ENV", Value: "set"}}
	e := &ExecPlugin{Name: "test-plugin", Path: path, APIVersion: "credentialprovider.kubelet.k8s.io/v1", Args: []string{"get", "--flag"}, Env: env}
	writeFile(t, response, `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"reg.example.com":{"username":"robot","password":"s3cret"}}}`)
	resp, err := e.Exec(context.Background(), "reg.example.com/team/app", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.CacheKeyType != "Registry" || resp.CacheDuration.Duration != 5*time.Minute || resp.Auth["reg.example.com"].Password != "s3cret" {
		t.Fatalf("response %+v", resp)
	}
	got, _ := os.ReadFile(calls)
	want := `args=get --flag env=set
{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"reg.example.com/team/app"}`
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("plugin saw\n%s\nwant\n%s", got, want)
	}

	// v1beta1 both ways.
	os.Remove(calls)
	beta := *e
	beta.APIVersion = "credentialprovider.kubelet.k8s.io/v1beta1"
	writeFile(t, response, `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"reg.example.com":{"username":"b","password":"p"}}}`)
	if resp, err := beta.Exec(context.Background(), "reg.example.com/app", "", nil); err != nil || resp.Auth["reg.example.com"].Username != "b" {
		t.Fatalf("v1beta1: %+v, %v", resp, err)
	}
	if got, _ := os.ReadFile(calls); !strings.Contains(string(got), `"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1"`) {
		t.Errorf("v1beta1 request %s", got)
	}

	for _, tc := range []struct {
		name, response string
		args           []string
		timeout        time.Duration
		want           string
	}{
		{"other version", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1","kind":"CredentialProviderResponse","cacheKeyType":"Image"}`, nil, 0,
			"apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1alpha1"},
		{"unknown field", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","token":"s3cret"}`, nil, 0,
			"error decoding credential provider plugin response from stdout"},
		{"wrong kind", `{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderRequest","image":"x"}`, nil, 0,
			"error decoding credential provider plugin response from stdout"},
		{"not JSON", `credentials!`, nil, 0, "error reading GVK from response: "},
		{"failing", "", []string{"fail"}, 0, "error execing credential provider plugin test-plugin for image reg.example.com/app: exit status 3: no credentials today\n"},
		{"hung", "", []string{"hang"}, 100 * time.Millisecond, "error execing credential provider plugin test-plugin for image reg.example.com/app: context deadline exceeded: "},
	} {
		writeFile(t, response, tc.response)
		c := *e
		c.Args, c.Timeout = tc.args, tc.timeout
		_, err := c.Exec(context.Background(), "reg.example.com/app", "", nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || (strings.HasSuffix(tc.want, "\n") && err.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error shows the response: %v", tc.name, err)
		}
	}
}

// TestRegister: upstream's checks of the binary directory, the
// configuration and each provider's executable; tokenAttributes puts a
// provider in service account token mode.
func TestRegister(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	cfgFile := writeFile(t, filepath.Join(dir, "config.yaml"), strings.Replace(goodConfig, "name: ecr", "name: test-plugin", 1))
	if _, err := Register(cfgFile, filepath.Join(dir, "nobin"), nil, nil); err == nil || err.Error() != "plugin binary directory "+filepath.Join(dir, "nobin")+" did not exist" {
		t.Errorf("missing bin dir: %v", err)
	}
	if _, err := Register(cfgFile, bin, nil, nil); err == nil || err.Error() != "plugin binary executable "+filepath.Join(bin, "test-plugin")+" did not exist" {
		t.Errorf("missing plugin: %v", err)
	}
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), strings.Replace(goodConfig, "defaultCacheDuration: 12h", "defaultCacheDuration: -1s", 1))
	if _, err := Register(bad, bin, nil, nil); err == nil || err.Error() != `failed to validate credential provider config: providers.defaultCacheDuration: Invalid value: "-1s": must be greater than or equal to 0` {
		t.Errorf("invalid config: %v", err)
	}
	installPlugin(t, bin, "test-plugin")
	ps, err := Register(cfgFile, bin, nil, nil)
	if err != nil || len(ps.list) != 1 || ps.list[0].name != "test-plugin" || ps.list[0].defaultDuration != 12*time.Hour {
		t.Fatalf("Register: %+v, %v", ps, err)
	}
	if ep := ps.list[0].plugin.(*ExecPlugin); ep.Path != filepath.Join(bin, "test-plugin") || fmt.Sprint(ep.Args) != "[get-credentials]" || ep.Env[0].Name != "AWS_PROFILE" {
		t.Errorf("exec plugin %+v", ep)
	}
	sa := writeFile(t, filepath.Join(dir, "sa.yaml"), strings.Replace(goodConfig, "name: ecr", "name: test-plugin", 1)+
		"  tokenAttributes:\n    serviceAccountTokenAudience: aud\n    requireServiceAccount: true\n    cacheType: Token\n")
	ps, err = Register(sa, bin, nil, nil)
	if err != nil || ps.list[0].token == nil || ps.list[0].token.audience != "aud" || !ps.list[0].token.requireServiceAccount || ps.list[0].token.cacheType != "Token" {
		t.Errorf("tokenAttributes: %+v, %v", ps, err)
	}
}
