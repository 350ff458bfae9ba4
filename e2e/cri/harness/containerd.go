package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
)

// containerd is one containerd process with the CRI plugin, everything it
// owns under dir.
type containerd struct {
	dir     string // work dir of this containerd
	socket  string
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile *os.File
}

// containerdConfig is containerd 1.6's config (version 2) with every path
// under the work dir. restrict_oom_score_adj is required on machines whose
// root lacks CAP_SYS_RESOURCE (runc fails to set oom_score_adj otherwise).
var containerdConfig = template.Must(template.New("config").Parse(`version = 2
root = "{{.Dir}}/root"
state = "{{.Dir}}/state"
oom_score = 0

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[debug]
  level = "info"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "{{.Dir}}/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "{{.SandboxImage}}"
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    enable_selinux = false
    stream_server_address = "{{.StreamAddress}}"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "{{.Dir}}/runc"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "{{.CNIBinDir}}"
      conf_dir = "{{.CNIConfDir}}"
      max_conf_num = 1
`))

// cniConflist is the pod network: a bridge with host-local addresses from
// the node's pod CIDR, masquerading traffic leaving the subnet, and
// portmap for hostPorts.
var cniConflist = template.Must(template.New("conflist").Parse(`{
  "cniVersion": "1.0.0",
  "name": "{{.Network}}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.Bridge}}",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "{{.IPAMDir}}",
        "ranges": [[{"subnet": "{{.PodCIDR}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
  ]
}
`))

// startContainerd writes the configuration and CNI config under dir, starts
// containerd (in network namespace netns when non-empty, entered with
// nsenter, which unlike `ip netns exec` keeps the host's mounts and so
// /sys/fs/cgroup), and waits until
// its CRI plugin answers and reports NetworkReady.
func startContainerd(ctx context.Context, dir, cniBinDir, bridge, network, podCIDR, ipamDir, logDir, netns, streamAddress string) (*containerd, *cri.Runtime, error) {
	c := &containerd{dir: dir, socket: filepath.Join(dir, "containerd.sock"), exited: make(chan struct{})}
	confDir := filepath.Join(dir, "cni-conf")
	for _, d := range []string{dir, confDir, ipamDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	vals := map[string]string{
		"Dir": dir, "Socket": c.socket, "SandboxImage": images.PauseRef, "CNIBinDir": cniBinDir, "CNIConfDir": confDir,
		"Network": network, "Bridge": bridge, "IPAMDir": ipamDir, "PodCIDR": podCIDR, "StreamAddress": streamAddress,
	}
	if err := writeTemplate(filepath.Join(dir, "config.toml"), containerdConfig, vals); err != nil {
		return nil, nil, err
	}
	if err := writeTemplate(filepath.Join(confDir, "10-"+network+".conflist"), cniConflist, vals); err != nil {
		return nil, nil, err
	}
	logFile, err := os.Create(filepath.Join(logDir, filepath.Base(dir)+".log"))
	if err != nil {
		return nil, nil, err
	}
	c.logFile = logFile
	args := []string{"containerd", "--config", filepath.Join(dir, "config.toml")}
	if netns != "" {
		args = append([]string{"nsenter", "--net=/run/netns/" + netns, "--"}, args...)
	}
	c.cmd = exec.Command(args[0], args[1:]...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// Its own process group, so that a Ctrl-C of go test reaches it only
	// through the suite's teardown.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("starting containerd: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "containerd.pid"), []byte(fmt.Sprint(c.cmd.Process.Pid)), 0o644); err != nil {
		return nil, nil, err
	}
	go func() { c.cmd.Wait(); close(c.exited) }()

	deadline := time.Now().Add(60 * time.Second)
	var rt *cri.Runtime
	for {
		if _, err := os.Stat(c.socket); err == nil {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			rt, err = cri.Dial(dctx, "unix://"+c.socket)
			cancel()
			if err == nil {
				break
			}
		}
		select {
		case <-c.exited:
			return c, nil, fmt.Errorf("containerd exited during start-up (log %s)", logFile.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return c, nil, fmt.Errorf("containerd's CRI plugin did not answer within 60s (log %s)", logFile.Name())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := rt.WaitNetworkReady(wctx, 200*time.Millisecond); err != nil {
		rt.Close()
		return c, nil, err
	}
	return c, rt, nil
}

func writeTemplate(file string, t *template.Template, vals map[string]string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := t.Execute(f, vals); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}

// importImage loads a docker-archive tarball into the CRI namespace.
func (c *containerd) importImage(ctx context.Context, tarball string) error {
	cmd := exec.CommandContext(ctx, "ctr", "-a", c.socket, "-n", "k8s.io", "images", "import", tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", tarball, err, out)
	}
	return nil
}

// stop sends SIGTERM to containerd and waits (SIGKILL after 15 s), then
// kills any shim of this containerd that survived (found by its -address
// argument, by pid).
func (c *containerd) stop() error {
	var errs []error
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
			errs = append(errs, errors.New("containerd did not stop within 15s of SIGTERM; killed"))
		}
	}
	for _, pid := range processesWith(c.socket) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
	return errors.Join(errs...)
}

// killStaleContainerd stops a containerd left running by an earlier,
// killed run whose work dir was dir (its pid file, if the process is still
// a containerd for that dir), and its shims.
func killStaleContainerd(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "containerd.pid"))
	if err == nil {
		var pid int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pid); err == nil {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(cmdline), dir) {
				syscall.Kill(pid, syscall.SIGKILL)
				for i := 0; i < 50; i++ {
					if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}
	for _, pid := range processesWith(filepath.Join(dir, "containerd.sock")) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
