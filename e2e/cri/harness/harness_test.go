package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests need no root: they check the files the harness writes and
// the parsing it relies on for teardown.

func TestContainerdConfigAndConflist(t *testing.T) {
	dir := t.TempDir()
	vals := map[string]string{
		"Dir": "/w/c", "Socket": "/w/c/containerd.sock", "SandboxImage": "kubeproof.local/pause:3.10", "CNIBinDir": "/cni/bin",
		"CNIConfDir": "/w/c/cni-conf", "Network": Network, "Bridge": "kp-cni0", "IPAMDir": "/w/ipam", "PodCIDR": "10.244.0.0/24",
	}
	if err := writeTemplate(filepath.Join(dir, "config.toml"), containerdConfig, vals); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config.toml"))
	for _, want := range []string{
		"version = 2", `root = "/w/c/root"`, `address = "/w/c/containerd.sock"`, "restrict_oom_score_adj = true",
		`sandbox_image = "kubeproof.local/pause:3.10"`, "SystemdCgroup = false", `bin_dir = "/cni/bin"`, "max_conf_num = 1",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("containerd config lacks %q:\n%s", want, b)
		}
	}
	if err := writeTemplate(filepath.Join(dir, "net.conflist"), cniConflist, vals); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "net.conflist"))
	var conf struct {
		Name    string
		Plugins []struct {
			Type   string
			Bridge string
			IPAM   struct {
				Type    string
				DataDir string
				Ranges  [][]struct{ Subnet string }
			}
			Capabilities map[string]bool
		}
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatalf("conflist is not JSON: %v\n%s", err, b)
	}
	if conf.Name != Network || len(conf.Plugins) != 2 || conf.Plugins[0].Type != "bridge" || conf.Plugins[0].Bridge != "kp-cni0" ||
		conf.Plugins[0].IPAM.Type != "host-local" || conf.Plugins[0].IPAM.DataDir != "/w/ipam" ||
		conf.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.244.0.0/24" || conf.Plugins[1].Type != "portmap" || !conf.Plugins[1].Capabilities["portMappings"] {
		t.Fatalf("conflist: %+v", conf)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		"/var/tmp/x":       "/var/tmp/x",
		`/var/tmp/a\040b`:  "/var/tmp/a b",
		`/run/a\134b\011c`: `/run/a\b` + "\tc",
		`/trailing\04`:     `/trailing\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := &hostState{IPForward: "0", Chains: map[string][]string{"nat": {"PREROUTING", "POSTROUTING"}},
		ExistingPaths: map[string]bool{"/run/netns": true}, CgroupDirs: map[string]bool{}, Bridges: []string{"kp-cni0"}, PodLogDirs: map[string]bool{}}
	if err := h.save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := loadHostState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.IPForward != "0" || len(got.Chains["nat"]) != 2 || !got.ExistingPaths["/run/netns"] || got.Bridges[0] != "kp-cni0" {
		t.Fatalf("round trip: %+v", got)
	}
}
