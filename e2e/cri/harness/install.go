package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Packages maps each binary the suite needs to the Debian package that
// provides it.
var Packages = map[string]string{
	"containerd": "containerd",
	"ctr":        "containerd",
	"runc":       "runc",
	"iptables":   "iptables",
	"busybox":    "busybox-static",
	"ip":         "iproute2",
	"nsenter":    "util-linux",
}

// ensurePackages installs, with apt-get, the packages whose binaries are
// missing from the PATH; it does nothing when every binary is there.
func ensurePackages(ctx context.Context, logf func(string, ...any)) error {
	var missing []string
	seen := map[string]bool{}
	for bin, pkg := range Packages {
		if _, err := exec.LookPath(bin); err != nil && !seen[pkg] {
			missing, seen[pkg] = append(missing, pkg), true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing packages %v and no apt-get to install them", missing)
	}
	logf("installing %s with apt-get", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(out, 2000))
		}
	}
	for bin := range Packages {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s still missing after apt-get install", bin)
		}
	}
	return nil
}

// CNIPluginsVersion is the github.com/containernetworking/plugins release
// the suite builds.
const CNIPluginsVersion = "v1.9.1"

// cniPlugins are the plugin packages built, relative to the module.
var cniPlugins = []string{"plugins/main/bridge", "plugins/ipam/host-local", "plugins/main/loopback", "plugins/meta/portmap"}

// cniCacheDir is where the built plugins are kept across runs: beside the
// Go build cache (e.g. ~/.cache/kubeproof-e2e/cni-v1.9.1).
func cniCacheDir(goTool string) (string, error) {
	out, err := exec.Command(goTool, "env", "GOCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOCACHE: %w", err)
	}
	gocache := strings.TrimSpace(string(out))
	if gocache == "" || gocache == "off" {
		return os.MkdirTemp("", "kubeproof-cni-")
	}
	return filepath.Join(filepath.Dir(gocache), "kubeproof-e2e", "cni-"+CNIPluginsVersion), nil
}

// buildCNIPlugins builds the CNI plugins into the cache dir unless they are
// already there, and returns the dir.
func buildCNIPlugins(ctx context.Context, goTool string, logf func(string, ...any)) (string, error) {
	dir, err := cniCacheDir(goTool)
	if err != nil {
		return "", err
	}
	var pkgs []string
	for _, p := range cniPlugins {
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(p))); err != nil {
			pkgs = append(pkgs, "github.com/containernetworking/plugins/"+p+"@"+CNIPluginsVersion)
		}
	}
	if len(pkgs) == 0 {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	logf("building CNI plugins %s into %s", CNIPluginsVersion, dir)
	cmd := exec.CommandContext(ctx, goTool, append([]string{"install"}, pkgs...)...)
	// Outside any module, so the project's go.mod does not constrain them.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+dir, "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install CNI plugins: %w\n%s", err, tail(out, 2000))
	}
	return dir, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// GoTool is the go command: the one on the PATH, or GOROOT/bin/go.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}
