package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdmissionConfigurationOddFiles: files that are no
// AdmissionConfiguration, or name plugin configuration that cannot be
// read, are errors (kube-apiserver's start-up errors), never a panic nor
// an empty configuration.
func TestAdmissionConfigurationOddFiles(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	withPlugin := func(name, rest string) string {
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: " + name + "\n" + rest
	}
	tests := []struct{ name, content, path, want string }{
		{"empty file", "", "", "Object 'Kind' is missing in ''"},
		{"a list", "- a\n- b\n", "", "cannot unmarshal array"},
		{"JSON null", "null", "", "Object 'Kind' is missing in 'null'"},
		{"a string", `"AdmissionConfiguration"`, "", "cannot unmarshal string"},
		{"not YAML", "kind: [\n", "", "yaml"},
		{"plugins not a list", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: 5\n", "", "cannot unmarshal number"},
		{"symlink loop", "", loop, "too many levels of symbolic links"},
		{"directory", "", sub, "is a directory"},
		{"PodSecurity path a loop", withPlugin("PodSecurity", "  path: loop\n"), "", "Couldn't open admission plugin configuration " + loop},
		{"PodSecurity path a directory", withPlugin("PodSecurity", "  path: sub\n"), "", "Couldn't open admission plugin configuration " + sub},
		{"PodSecurity configuration a list", withPlugin("PodSecurity", "  configuration: [1, 2]\n"), "", `couldn't init admission plugin "PodSecurity"`},
		{"PodSecurity configuration null typed", withPlugin("PodSecurity", "  configuration: {}\n"), "", `couldn't init admission plugin "PodSecurity": Object 'Kind' is missing in '{}'`},
		{"ResourceQuota empty configuration file", withPlugin("ResourceQuota", "  path: empty.yaml\n"), "", `couldn't init admission plugin "ResourceQuota": Object 'Kind' is missing in ''`},
		{"ResourceQuota configuration a string", withPlugin("ResourceQuota", "  configuration: x\n"), "", `couldn't init admission plugin "ResourceQuota"`},
	}
	writeFile(t, dir, "empty.yaml", "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = writeFile(t, dir, "admission.yaml", tc.content)
			}
			c, err := ReadAdmissionConfiguration(path)
			if err == nil {
				var o Options
				_, err = c.Apply(DefaultPlugins(), &o)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPodSecurityConfigurationDuplicateYAMLKey: a PodSecurityConfiguration
// file (YAML) that sets a field twice is refused, as kube-apiserver's
// strict decoder, which reads YAML through the strict converter too (the
// plain one keeps the last value silently); inline configuration is JSON
// by then, as kube-apiserver's.
func TestPodSecurityConfigurationDuplicateYAMLKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "psa.yaml", "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults:\n  enforce: baseline\n  enforce: restricted\n")
	c, err := ReadAdmissionConfiguration(writeFile(t, dir, "a.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: psa.yaml\n"))
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	_, err = c.Apply(DefaultPlugins(), &o)
	want := `couldn't init admission plugin "PodSecurity": strict decoding error: yaml: unmarshal errors:` + "\n" + `  line 5: key "enforce" already set in map`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestConfigurationTypeMetaAnyCase: kube-apiserver finds a configuration's
// apiVersion and kind case-insensitively (apimachinery's meta factory reads
// them with encoding/json) and decodes the rest case-sensitively, so
// "APIVersion" and "Kind" keys name the type of an AdmissionConfiguration
// and of ResourceQuota's configuration; PodSecurity's strict decoder still
// refuses them as unknown fields.
func TestConfigurationTypeMetaAnyCase(t *testing.T) {
	dir := t.TempDir()
	c, err := ReadAdmissionConfiguration(writeFile(t, dir, "a.yaml", `APIVersion: apiserver.config.k8s.io/v1
Kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    APIVERSION: apiserver.config.k8s.io/v1
    KIND: ResourceQuotaConfiguration
    limitedResources: [{resource: pods, matchContains: [cpu]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if _, err := c.Apply(DefaultPlugins(), &o); err != nil || len(o.QuotaLimitedResources) != 1 {
		t.Fatalf("Apply: %v, limited %+v", err, o.QuotaLimitedResources)
	}
	c, err = ReadAdmissionConfiguration(writeFile(t, dir, "b.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration: {apiVersion: pod-security.admission.config.k8s.io/v1, Kind: PodSecurityConfiguration}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(DefaultPlugins(), &o); err == nil || !strings.Contains(err.Error(), `strict decoding error: unknown field "Kind"`) {
		t.Fatalf("PodSecurity with a Kind key: %v", err)
	}
}
