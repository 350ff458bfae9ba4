// Package harness runs kubeproof on real containers for the e2e/cri suite:
// it installs containerd, runc, iptables and busybox-static with apt-get
// when they are missing, builds the CNI plugins (bridge, host-local,
// loopback, portmap) at a pinned version, builds the pause and busybox
// images itself (e2e/cri/images) and imports them, starts containerd with
// a CRI configuration under a work directory, starts the kubeproof control
// plane in-process (impl/cluster: API server, etcd, controller manager and
// scheduler, no simulated nodes) and one kubelet per node with the CRI
// runtime (impl/kubelet/runtime/cri) pointed at that node's containerd.
//
// Close puts the host back as it was: sandboxes stopped and removed,
// containerd and its shims stopped by pid, mounts under the work dir
// unmounted, the bridge and the iptables chains the CNI plugins added
// deleted, the cgroups the pods used removed, go-cni's result files and
// /run/containerd removed, and net.ipv4.ip_forward restored.
package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
	"github.com/kubeproof/kubeproof/impl/cluster"
)

// WorkDir is the fixed work directory of the suite. It is fixed (not a
// fresh temporary dir) so that a run killed before its teardown is cleaned
// up by the next one; a lock file keeps two runs apart.
const WorkDir = "/var/tmp/kubeproof-e2e-cri"

// Network is the CNI network name; Bridge prefixes the bridge devices
// (kp-cni0 for the first node).
const (
	Network      = "kp-e2e"
	BridgePrefix = "kp-cni"
)

// Env is a running suite environment.
type Env struct {
	// WorkDir holds containerd's state, the kubelets' dirs and the cluster.
	WorkDir string
	// LogDir holds containerd's, the kubelets' and the control plane's
	// logs; it is outside WorkDir and survives Close.
	LogDir string
	// Cluster is the control plane; Client its admin client; Kubeconfig
	// the admin kubeconfig file (for kubectl).
	Cluster    *cluster.Cluster
	Client     kubernetes.Interface
	Kubeconfig string
	// Kubectl is the kubectl binary: the one on the PATH, or one built
	// from k8s.io/kubectl.
	Kubectl string
	// Nodes are the nodes started so far.
	Nodes []*Node

	host    *hostState
	cniBin  string
	nodeSeq int

	kubeproofBuilt chan struct{}
	kubeproofBin   string
	kubeproofErr   error
	lock           *os.File
	logf           func(string, ...any)
	logger         *slog.Logger
}

// Options configure Start.
type Options struct {
	// Logf reports set-up steps (nil: silent).
	Logf func(format string, args ...any)
}

// Preflight says why the suite cannot run here: "" when it can. It needs
// root (containerd, network namespaces, iptables, cgroups) on Linux.
func Preflight() string {
	if os.Geteuid() != 0 {
		return "needs root (it runs containerd, runc and CNI plugins on this host)"
	}
	if _, err := os.Stat("/proc/self/mountinfo"); err != nil {
		return "needs Linux"
	}
	return ""
}

// Start prepares the host and starts the control plane and no nodes (see
// AddNode). On error everything it did is undone.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if reason := Preflight(); reason != "" {
		return nil, errors.New(reason)
	}
	e := &Env{WorkDir: WorkDir, logf: opts.Logf}
	if e.logf == nil {
		e.logf = func(string, ...any) {}
	}
	if e.LogDir, err = os.MkdirTemp("", "kubeproof-e2e-cri-logs-"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(WorkDir), 0o755); err != nil {
		return nil, err
	}
	if e.lock, err = os.OpenFile(WorkDir+".lock", os.O_CREATE|os.O_RDWR, 0o644); err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(e.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		e.lock.Close()
		return nil, fmt.Errorf("another e2e/cri run holds %s.lock: %w", WorkDir, err)
	}
	defer func() {
		if err != nil {
			if cerr := e.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("teardown after failed start: %w", cerr))
			}
		}
	}()
	e.cleanStale()
	if err := os.MkdirAll(WorkDir, 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(e.LogDir, "control-plane.log"))
	if err != nil {
		return nil, err
	}
	e.logger = slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Some components log through slog's default logger: keep the test
	// output quiet by sending those lines to the log file too.
	slog.SetDefault(e.logger)

	if err := ensurePackages(ctx, e.logf); err != nil {
		return nil, err
	}
	if e.host, err = snapshotHost(); err != nil {
		return nil, err
	}
	if err := e.host.save(WorkDir); err != nil {
		return nil, err
	}
	goTool := GoTool()
	if e.cniBin, err = buildCNIPlugins(ctx, goTool, e.logf); err != nil {
		return nil, err
	}
	if err := e.buildImages(goTool); err != nil {
		return nil, err
	}
	e.kubeproofBuilt = make(chan struct{})
	go e.buildKubeproof(goTool)
	if e.Kubectl, err = kubectl(goTool, WorkDir); err != nil {
		return nil, err
	}
	e.Cluster, err = cluster.Start(ctx, cluster.Config{
		DataDir: filepath.Join(WorkDir, "cluster"), BindAddress: "127.0.0.1:0",
		ControllerManager: true, Scheduler: true, WatchCache: true, UnsafeNoFsync: true,
		Logger: e.logger.With("component", "control-plane"),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	e.Kubeconfig = e.Cluster.AdminKubeconfig
	if e.Client, err = e.Cluster.Client(); err != nil {
		return nil, err
	}
	return e, nil
}

// Logger writes to the control plane's log in LogDir.
func (e *Env) Logger() *slog.Logger { return e.logger }

// buildImages writes the pause and busybox archives into the work dir.
func (e *Env) buildImages(goTool string) error {
	dir := filepath.Join(WorkDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pause, err := images.Pause(goTool, dir)
	if err != nil {
		return err
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return err
	}
	busybox, err := images.Busybox(bb)
	if err != nil {
		return err
	}
	for name, img := range map[string]images.Image{"pause.tar": pause, "busybox.tar": busybox} {
		if err := images.WriteDockerArchive(filepath.Join(dir, name), img); err != nil {
			return err
		}
	}
	return nil
}

// imageArchives are the tarballs every node's containerd imports.
func imageArchives() []string {
	return []string{filepath.Join(WorkDir, "images", "pause.tar"), filepath.Join(WorkDir, "images", "busybox.tar")}
}

// BuildKubeproof returns the path of the kubeproof binary (cmd/kubeproof),
// which Start began building in the background.
func (e *Env) BuildKubeproof() (string, error) {
	<-e.kubeproofBuilt
	return e.kubeproofBin, e.kubeproofErr
}

// buildKubeproof builds cmd/kubeproof into the work dir (linking it takes
// up to a minute on a loaded machine, so Start runs it in the background).
func (e *Env) buildKubeproof(goTool string) {
	defer close(e.kubeproofBuilt)
	bin := filepath.Join(WorkDir, "kubeproof")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/kubeproof/kubeproof/cmd/kubeproof")
	if out, err := cmd.CombinedOutput(); err != nil {
		e.kubeproofErr = fmt.Errorf("building kubeproof: %w\n%s", err, out)
		return
	}
	e.kubeproofBin = bin
}

// kubectl finds kubectl on the PATH or builds it (e2e/internal/kubectlbin).
func kubectl(goTool, dir string) (string, error) {
	if p, err := exec.LookPath("kubectl"); err == nil && os.Getenv("KUBEPROOF_E2E_BUILD_KUBECTL") == "" {
		return p, nil
	}
	bin := filepath.Join(dir, "kubectl")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/kubeproof/kubeproof/e2e/internal/kubectlbin")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl: %w\n%s", err, out)
	}
	return bin, nil
}

// cleanStale undoes what a killed earlier run left: its containerds and
// shims, their containers, mounts under the work dir, its network
// namespaces, bridges and iptables chains, cgroups and ip_forward (against
// the host snapshot that run saved), and the work dir itself.
func (e *Env) cleanStale() {
	if _, err := os.Stat(WorkDir); err != nil {
		return
	}
	e.logf("cleaning up after an earlier run that did not tear down (%s exists)", WorkDir)
	nodes, _ := filepath.Glob(filepath.Join(WorkDir, "node-*"))
	for _, n := range nodes {
		killStaleContainerd(filepath.Join(n, "containerd"))
	}
	_ = unmountUnder(WorkDir)
	deleteNetnses()
	links, _ := filepath.Glob("/sys/class/net/" + BridgePrefix + "*")
	veths, _ := filepath.Glob("/sys/class/net/kp-veth*")
	for _, l := range append(links, veths...) {
		_ = exec.Command("ip", "link", "del", filepath.Base(l)).Run()
	}
	// The sandboxes it ran, whose CNI results go-cni keeps outside the work dir.
	sandboxes, _ := filepath.Glob(filepath.Join(WorkDir, "node-*", "containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes", "*"))
	var ids []string
	for _, sb := range sandboxes {
		ids = append(ids, filepath.Base(sb))
	}
	_ = removeCNIResults(ids)
	if h, err := loadHostState(WorkDir); err == nil {
		_ = h.removeNetnsDir()
		_ = h.restoreNetwork(nil, Network)
		_ = h.removeCgroups()
		_ = h.removeRunDirs()
		_ = h.removeKubeletDirs()
	}
	_ = os.RemoveAll(WorkDir)
}

// Close stops everything Start and AddNode started and restores the host,
// then checks the host against the snapshot taken at Start (devices,
// iptables chains, ip_forward, mounts, processes, cgroups, paths). It
// returns every problem it met; it never stops half way.
func (e *Env) Close() error {
	if e.kubeproofBuilt != nil {
		<-e.kubeproofBuilt // it writes into the work dir
	}
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, n := range e.Nodes {
		n.StopKubelet()
	}
	for _, n := range e.Nodes {
		add("removing the pods of "+n.Name, n.removeAllPods())
	}
	if e.Cluster != nil {
		add("stopping the control plane", e.Cluster.Stop())
	}
	for _, n := range e.Nodes {
		add("stopping containerd of "+n.Name, n.stopContainerd())
	}
	add("unmounting", unmountUnder(WorkDir))
	if e.host != nil {
		add("removing the network namespaces", e.removeNodeNetworks())
		add("removing /run/netns", e.host.removeNetnsDir())
		add("restoring the network", e.host.restoreNetwork(e.host.Bridges, Network))
		add("removing cgroups", e.host.removeCgroups())
		add("removing /run/containerd", e.host.removeRunDirs())
		add("removing the kubelet's default dirs", e.host.removeKubeletDirs())
	}
	add("removing the work dir", os.RemoveAll(WorkDir))
	if e.host != nil {
		if left := e.host.leftovers(WorkDir); len(left) > 0 {
			errs = append(errs, fmt.Errorf("the host is not as it was: %s", strings.Join(left, "; ")))
		}
	}
	if e.lock != nil {
		_ = os.Remove(WorkDir + ".lock")
		e.lock.Close()
	}
	return errors.Join(errs...)
}

// waitFor polls cond every interval until it returns true or timeout.
func waitFor(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
