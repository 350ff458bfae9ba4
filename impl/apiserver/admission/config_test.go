package admission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAdmissionConfigurationPodSecurity: PodSecurity's configuration,
// inline (YAML or JSON, each PodSecurityConfiguration version) or in a
// file named relative to the AdmissionConfiguration's directory, sets
// its defaults and exemptions; unset defaults are privileged:latest.
func TestAdmissionConfigurationPodSecurity(t *testing.T) {
	dir := t.TempDir()
	inlineYAML := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: v1.30
      warn: restricted
    exemptions:
      usernames: [alice]
      namespaces: [kube-system]
      runtimeClasses: [kata]
`
	inlineJSON := `{"apiVersion":"apiserver.k8s.io/v1alpha1","kind":"AdmissionConfiguration","plugins":[{"name":"PodSecurity",
"configuration":{"apiVersion":"pod-security.admission.config.k8s.io/v1beta1","kind":"PodSecurityConfiguration",
"defaults":{"enforce":"baseline","enforce-version":"v1.30","warn":"restricted"},
"exemptions":{"usernames":["alice"],"namespaces":["kube-system"],"runtimeClasses":["kata"]}}}]}`
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub"), "psa.yaml", `apiVersion: pod-security.admission.config.k8s.io/v1alpha1
kind: PodSecurityConfiguration
defaults: {enforce: baseline, enforce-version: v1.30, warn: restricted}
exemptions: {usernames: [alice], namespaces: [kube-system], runtimeClasses: [kata]}
`)
	byPath := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: sub/psa.yaml
`
	want := Options{
		PodSecurityDefaultEnforce: "baseline", PodSecurityDefaultEnforceVersion: "v1.30",
		PodSecurityDefaultWarn: "restricted", PodSecurityDefaultWarnVersion: "latest",
		PodSecurityDefaultAudit: "privileged", PodSecurityDefaultAuditVersion: "latest",
		PodSecurityExemptUsers: []string{"alice"}, PodSecurityExemptNamespaces: []string{"kube-system"},
		PodSecurityExemptRuntimeClasses: []string{"kata"},
	}
	for name, content := range map[string]string{"inline yaml": inlineYAML, "inline json": inlineJSON, "path": byPath} {
		t.Run(name, func(t *testing.T) {
			c, err := ReadAdmissionConfiguration(writeFile(t, dir, "admission.cfg", content))
			if err != nil {
				t.Fatal(err)
			}
			var got Options
			ignored, err := c.Apply(DefaultPlugins(), &got)
			if err != nil || len(ignored) > 0 {
				t.Fatalf("Apply: %v (ignored %v)", err, ignored)
			}
			if got.PodSecurityDefaultEnforce != want.PodSecurityDefaultEnforce || got.PodSecurityDefaultEnforceVersion != want.PodSecurityDefaultEnforceVersion ||
				got.PodSecurityDefaultWarn != want.PodSecurityDefaultWarn || got.PodSecurityDefaultWarnVersion != want.PodSecurityDefaultWarnVersion ||
				got.PodSecurityDefaultAudit != want.PodSecurityDefaultAudit || got.PodSecurityDefaultAuditVersion != want.PodSecurityDefaultAuditVersion ||
				!slices.Equal(got.PodSecurityExemptUsers, want.PodSecurityExemptUsers) ||
				!slices.Equal(got.PodSecurityExemptNamespaces, want.PodSecurityExemptNamespaces) ||
				!slices.Equal(got.PodSecurityExemptRuntimeClasses, want.PodSecurityExemptRuntimeClasses) {
				t.Fatalf("options %+v, want %+v", got, want)
			}
		})
	}
}

// TestAdmissionConfigurationIgnored: configuration of a plugin that is
// not enabled is not read at all (even a missing file); an enabled
// plugin kubeproof reads no configuration of is reported as ignored; no
// file is no configuration; a legacy unversioned file configures nothing.
func TestAdmissionConfigurationIgnored(t *testing.T) {
	dir := t.TempDir()
	c, err := ReadAdmissionConfiguration(writeFile(t, dir, "a.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  path: missing.yaml
- name: PodSecurity
  path: also-missing.yaml
- name: LimitRanger
  configuration:
    apiVersion: example.com/v1
    kind: LimitRangerConfiguration
`))
	if err != nil {
		t.Fatal(err)
	}
	enabled := slices.DeleteFunc(DefaultPlugins(), func(n string) bool { return n == "PodSecurity" })
	var o Options
	ignored, err := c.Apply(enabled, &o)
	if err != nil || !slices.Equal(ignored, []string{"LimitRanger"}) {
		t.Fatalf("Apply: %v, ignored %v", err, ignored)
	}
	if _, err := c.Apply(DefaultPlugins(), &o); err == nil || !strings.Contains(err.Error(), "Couldn't open admission plugin configuration "+filepath.Join(dir, "also-missing.yaml")) {
		t.Fatalf("enabled PodSecurity's missing file: %v", err)
	}
	// Field names are case-sensitive: "Plugins" is an unknown field,
	// ignored.
	capital := writeFile(t, dir, "capital.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nPlugins:\n- name: PodSecurity\n  path: missing.yaml\n")
	for _, empty := range []string{"", writeFile(t, dir, "legacy.yaml", "imagePolicy:\n  kubeConfigFile: x\n"), capital} {
		c, err := ReadAdmissionConfiguration(empty)
		if err != nil {
			t.Fatalf("%q: %v", empty, err)
		}
		o := Options{}
		if ignored, err := c.Apply(DefaultPlugins(), &o); err != nil || len(ignored) > 0 || o.PodSecurityDefaultEnforce != "privileged" {
			t.Fatalf("%q: %v %v %+v", empty, err, ignored, o)
		}
	}
}

// TestAdmissionConfigurationErrors: bad files and bad PodSecurity
// configurations are refused with kube-apiserver's words.
func TestAdmissionConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	admissionFile := func(psa string) string {
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n" +
			"    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n" + psa
	}
	tests := []struct {
		name, content, want string
	}{
		{"missing file", "", `unable to read admission control configuration from "` + filepath.Join(dir, "nothere") + `" [open `},
		{"missing kind", "apiVersion: apiserver.config.k8s.io/v1\nplugins: []\n", "Object 'Kind' is missing in 'apiVersion: apiserver.config.k8s.io/v1\nplugins: []\n'"},
		{"missing apiVersion", "kind: AdmissionConfiguration\n", "Object 'apiVersion' is missing in"},
		{"unknown version", "apiVersion: apiserver.config.k8s.io/v2\nkind: AdmissionConfiguration\n",
			`no kind "AdmissionConfiguration" is registered for version "apiserver.config.k8s.io/v2"`},
		{"unknown PodSecurity version",
			"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v99\n    kind: PodSecurityConfiguration\n",
			`couldn't init admission plugin "PodSecurity": no kind "PodSecurityConfiguration" is registered for version "pod-security.admission.config.k8s.io/v99"`},
		{"unknown field", admissionFile("    deflaults: {enforce: baseline}\n"),
			`couldn't init admission plugin "PodSecurity": strict decoding error: unknown field "deflaults"`},
		{"unknown nested field", admissionFile("    defaults: {enforcee: baseline}\n"),
			`couldn't init admission plugin "PodSecurity": strict decoding error: unknown field "defaults.enforcee"`},
		{"bad level", admissionFile("    defaults: {enforce: strict, warn-version: v2.0}\n"),
			`failed to initialize admission plugin "PodSecurity": PodSecurity configuration error: [Enforce.Level: must be one of privileged, baseline, restricted, Warn.Version: must be "latest" or "v1.x"]`},
		{"bad exemptions", admissionFile("    exemptions: {namespaces: [Bad_NS, ok, ok], runtimeClasses: [\"a b\"], usernames: [\"\", bob, bob]}\n"),
			`failed to initialize admission plugin "PodSecurity": PodSecurity invalid: [exemptions.namespaces[0]: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of`},
		{"bad exemptions: the rest", admissionFile("    exemptions: {namespaces: [Bad_NS, ok, ok], runtimeClasses: [\"a b\"], usernames: [\"\", bob, bob]}\n"),
			`, exemptions.namespaces[2]: Duplicate value: "ok", exemptions.runtimeClasses[0]: Invalid value: "a b": a lowercase RFC 1123 subdomain must consist of`},
		{"bad exemptions: usernames", admissionFile("    exemptions: {namespaces: [Bad_NS, ok, ok], runtimeClasses: [\"a b\"], usernames: [\"\", bob, bob]}\n"),
			`, exemptions.usernames[0]: Required value, exemptions.usernames[2]: Duplicate value: "bob"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "nothere")
			if tc.content != "" {
				path = writeFile(t, dir, "cfg.yaml", tc.content)
			}
			c, err := ReadAdmissionConfiguration(path)
			if err == nil {
				var o Options
				_, err = c.Apply(DefaultPlugins(), &o)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
