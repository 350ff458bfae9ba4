package credentialprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
)

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: ecr
  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example.com:5000/team"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["get-credentials"]
  env:
  - name: AWS_PROFILE
    value: node
`

// TestReadConfig: a file or a directory of them (lexical order, *.json,
// *.yaml, *.yml only), decoded strictly, with upstream's errors.
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ReadConfig(writeFile(t, filepath.Join(dir, "one.yaml"), goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if len(cfg.Providers) != 1 || p.Name != "ecr" || p.DefaultCacheDuration.Duration != 12*time.Hour || p.Args[0] != "get-credentials" || p.Env[0].Value != "node" || len(p.MatchImages) != 2 {
		t.Fatalf("decoded %+v", cfg)
	}

	d := filepath.Join(dir, "d")
	os.Mkdir(d, 0o755)
	writeFile(t, filepath.Join(d, "b.json"), `{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"b","matchImages":["b.io"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`)
	writeFile(t, filepath.Join(d, "a.yml"), strings.Replace(goodConfig, "name: ecr", "name: a", 1))
	writeFile(t, filepath.Join(d, "ignored.txt"), "not a config")
	cfg, err = ReadConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 2 || cfg.Providers[0].Name != "a" || cfg.Providers[1].Name != "b" {
		t.Fatalf("directory gave %+v, want a then b", cfg.Providers)
	}

	// v1beta1 is read too.
	cfg, err = ReadConfig(writeFile(t, filepath.Join(dir, "beta.yaml"), strings.Replace(goodConfig, "kubelet.config.k8s.io/v1\n", "kubelet.config.k8s.io/v1beta1\n", 1)))
	if err != nil || cfg.Providers[0].Name != "ecr" || cfg.Providers[0].DefaultCacheDuration.Duration != 12*time.Hour {
		t.Fatalf("v1beta1: %+v, %v", cfg, err)
	}

	dup := filepath.Join(dir, "dup")
	os.Mkdir(dup, 0o755)
	writeFile(t, filepath.Join(dup, "1.yaml"), goodConfig)
	writeFile(t, filepath.Join(dup, "2.yaml"), goodConfig)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct{ path, want string }{
		{"", "credential provider config path is empty"},
		{filepath.Join(dir, "missing"), `unable to access path "` + filepath.Join(dir, "missing") + `"`},
		{empty, `no configuration files found in directory "` + empty + `"`},
		{dup, `duplicate provider name "ecr" found in configuration file(s)`},
		{writeFile(t, filepath.Join(dir, "kind.yaml"), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"), `failed to decode "KubeletConfiguration" (wrong Kind)`},
		{writeFile(t, filepath.Join(dir, "v2.yaml"), strings.Replace(goodConfig, "kubelet.config.k8s.io/v1\n", "kubelet.config.k8s.io/v2\n", 1)), `no kind "CredentialProviderConfig" is registered for version "kubelet.config.k8s.io/v2"`},
		{writeFile(t, filepath.Join(dir, "unknown.yaml"), goodConfig+"  bogus: 1\n"), `strict decoding error: unknown field "providers[0].bogus"`},
	} {
		_, err := ReadConfig(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadConfig(%q) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestValidateConfigAsUpstream: each of upstream's
// validateCredentialProviderConfig errors, with its path and message.
func TestValidateConfigAsUpstream(t *testing.T) {
	good := func() kubeletconfigv1.CredentialProvider {
		return kubeletconfigv1.CredentialProvider{
			Name: "p", MatchImages: []string{"*.example.com"}, APIVersion: "credentialprovider.kubelet.k8s.io/v1",
			DefaultCacheDuration: &metav1.Duration{Duration: time.Minute},
		}
	}
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		change func(p *kubeletconfigv1.CredentialProvider)
		want   []string
	}{
		{"good", func(*kubeletconfigv1.CredentialProvider) {}, nil},
		{"slash", func(p *kubeletconfigv1.CredentialProvider) { p.Name = "a/b" }, []string{`providers.name: Invalid value: "a/b": provider name cannot contain '/'`}},
		{"space", func(p *kubeletconfigv1.CredentialProvider) { p.Name = "a b" }, []string{`providers.name: Invalid value: "a b": provider name cannot contain spaces`}},
		{"dot", func(p *kubeletconfigv1.CredentialProvider) { p.Name = "." }, []string{`providers.name: Invalid value: ".": provider name cannot be '.'`}},
		{"dotdot", func(p *kubeletconfigv1.CredentialProvider) { p.Name = ".." }, []string{`providers.name: Invalid value: "..": provider name cannot be '..'`}},
		{"no apiVersion", func(p *kubeletconfigv1.CredentialProvider) { p.APIVersion = "" }, []string{`providers.apiVersion: Required value`}},
		{"bad apiVersion", func(p *kubeletconfigv1.CredentialProvider) { p.APIVersion = "v2" }, []string{`providers.apiVersion: Unsupported value: "v2": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"`}},
		{"no matchImages", func(p *kubeletconfigv1.CredentialProvider) { p.MatchImages = nil }, []string{`providers.matchImages: Required value: at least 1 item in matchImages is required`}},
		{"bad matchImage", func(p *kubeletconfigv1.CredentialProvider) { p.MatchImages = []string{"%invalid"} }, []string{`providers.matchImages: Invalid value: "%invalid": match image is invalid: parse "https://%invalid": invalid URL escape "%in"`}},
		{"no defaultCacheDuration", func(p *kubeletconfigv1.CredentialProvider) { p.DefaultCacheDuration = nil }, []string{`providers.defaultCacheDuration: Required value`}},
		{"negative defaultCacheDuration", func(p *kubeletconfigv1.CredentialProvider) { p.DefaultCacheDuration.Duration = -time.Second }, []string{`providers.defaultCacheDuration: Invalid value: "-1s": must be greater than or equal to 0`}},
		{"tokenAttributes empty", func(p *kubeletconfigv1.CredentialProvider) {
			p.TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{}
		}, []string{
			`providers.tokenAttributes.serviceAccountTokenAudience: Required value`,
			`providers.tokenAttributes.requireServiceAccount: Required value`,
			`providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`,
		}},
		{"tokenAttributes wrong", func(p *kubeletconfigv1.CredentialProvider) {
			p.APIVersion = "credentialprovider.kubelet.k8s.io/v1beta1"
			p.TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{
				ServiceAccountTokenAudience: "aud", RequireServiceAccount: &no, CacheType: "Pod",
				RequiredServiceAccountAnnotationKeys: []string{"a.io/x", "a.io/x"},
				OptionalServiceAccountAnnotationKeys: []string{"a.io/x", "bad key"},
			}
		}, []string{
			`providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`,
			`providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`,
			`providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: "a.io/x"`,
			`providers.tokenAttributes.optionalServiceAccountAnnotationKeys: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`providers.tokenAttributes: Invalid value: ["a.io/x"]: annotation keys cannot be both required and optional`,
			`providers.tokenAttributes.cacheType: Unsupported value: "Pod": supported values: "ServiceAccount", "Token"`,
		}},
		{"tokenAttributes good", func(p *kubeletconfigv1.CredentialProvider) {
			p.TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "aud", RequireServiceAccount: &yes, CacheType: "Token"}
		}, nil},
	} {
		p := good()
		tc.change(&p)
		errs := ValidateConfig(&kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{p}})
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	errs := ValidateConfig(&kubeletconfigv1.CredentialProviderConfig{})
	if len(errs) != 1 || errs[0].Error() != "providers: Required value: at least 1 item in plugins is required" {
		t.Errorf("no providers: %v", errs)
	}
	p := good()
	errs = ValidateConfig(&kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{p, p}})
	if len(errs) != 1 || errs[0].Error() != `providers.name: Duplicate value: "p"` {
		t.Errorf("two of a name: %v", errs)
	}
}
