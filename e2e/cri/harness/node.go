package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/pki"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Backoff is the kubelets' CrashLoopBackOff schedule in the suite: 2 s
// doubling to 20 s (upstream's 10 s doubling to 5 min would make the
// restart tests take minutes; the doubling is the same).
var Backoff = podsync.BackoffConfig{Base: 2 * time.Second, Max: 20 * time.Second}

// Node is one kubelet with its own containerd.
type Node struct {
	// Name is the Node's name (kp-node-1, ...); PodCIDR its pod subnet;
	// Bridge its CNI bridge device; NetNS its network namespace ("" for
	// the host's).
	Name, PodCIDR, Bridge, NetNS string
	// Dir holds the node's containerd and kubelet dirs.
	Dir string
	// Socket is its containerd's CRI socket; CRI a client of it.
	Socket string
	CRI    *cri.Runtime
	// IPAMDir is host-local's data dir: one file per allocated IP.
	IPAMDir string

	env        *Env
	containerd *containerd
	client     kubernetes.Interface
	kubeconfig string // the node identity's kubeconfig (for the binary)
	binary     string
	apiPort    int
	// cgroupRoot is its kubelet's --cgroup-root: "" (/) for the first
	// node, /kp-node-<i> for the others, so that each kubelet's clean-up
	// of the pod cgroups it does not know leaves the others' pods alone.
	cgroupRoot string
	// seccompDefault is its kubelet's seccompDefault (NodeOptions).
	seccompDefault bool

	mu      sync.Mutex
	kubelet *kubelet.Kubelet
	stop    func()
}

// NodeOptions configure AddNode.
type NodeOptions struct {
	// OwnNetNS runs the node's containerd (and so its pods, bridge and
	// iptables rules) in a network namespace of its own, joined to the host
	// by a veth pair, with a route on the host to its pod subnet and a
	// default route back: two nodes on one machine, routed like two hosts.
	OwnNetNS bool
	// KubeletBinary, when set, is a kubeproof binary (see BuildKubeproof)
	// whose `kubeproof kubelet --runtime cri` runs the node, as a process,
	// instead of the in-process kubelet.
	KubeletBinary string
	// SeccompDefault starts the node's kubelet with seccompDefault
	// (`kubeproof kubelet --seccomp-default`, Config.SeccompDefault):
	// containers without a seccompProfile run under containerd's default
	// profile.
	SeccompDefault bool
}

// EvictionHard is the test kubelets' --eviction-hard: the memory threshold
// of the default, disk thresholds off (as kind configures its nodes), since
// the shared machine's root filesystem may well be fuller than kubelet's
// default 10%/15% free, which would evict or refuse every test pod.
const EvictionHard = "memory.available<100Mi,nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%"

// AddNode starts a node: its containerd (importing the images) and its
// kubelet. Node i is kp-node-i with pod CIDR 10.244.(i-1).0/24.
func (e *Env) AddNode(ctx context.Context, opts NodeOptions) (_ *Node, err error) {
	e.nodeSeq++
	i := e.nodeSeq
	n := &Node{
		Name: fmt.Sprintf("kp-node-%d", i), PodCIDR: fmt.Sprintf("10.244.%d.0/24", i-1),
		Bridge: fmt.Sprintf("%s%d", BridgePrefix, i-1), env: e,
	}
	n.Dir = filepath.Join(WorkDir, fmt.Sprintf("node-%d", i))
	if i > 1 {
		n.cgroupRoot = "/" + n.Name
	}
	n.IPAMDir = filepath.Join(n.Dir, "ipam")
	e.Nodes = append(e.Nodes, n)
	if !opts.OwnNetNS {
		e.host.Bridges = append(e.host.Bridges, n.Bridge)
		if err := e.host.save(WorkDir); err != nil {
			return nil, err
		}
	}
	// containerd's streaming server (exec, attach, port-forward), which the
	// kubelet proxies to, listens where the kubelet reaches it: loopback,
	// or the namespace's address for a node with its own network.
	streamAddress := "127.0.0.1"
	if opts.OwnNetNS {
		n.NetNS = fmt.Sprintf("%snode-%d", netnsPrefix, i)
		if err := n.setUpNetNS(i); err != nil {
			return nil, err
		}
		streamAddress = netnsIP(i)
	}
	var rt *cri.Runtime
	n.containerd, rt, err = startContainerd(ctx, filepath.Join(n.Dir, "containerd"), e.cniBin, n.Bridge, Network, n.PodCIDR, n.IPAMDir, e.LogDir, n.NetNS, streamAddress)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.Socket, n.CRI = n.containerd.socket, rt
	for _, img := range imageArchives() {
		if err := n.containerd.importImage(ctx, img); err != nil {
			return nil, err
		}
	}
	kp, err := e.Cluster.CA.IssueClient(cluster.NodeUserPrefix+n.Name, []string{cluster.NodesGroup})
	if err != nil {
		return nil, err
	}
	n.binary, n.seccompDefault = opts.KubeletBinary, opts.SeccompDefault
	n.kubeconfig = filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := pki.WriteKubeconfig(n.kubeconfig, pki.Kubeconfig(e.Cluster.URL, e.Cluster.CA.CertPEM, cluster.NodeUserPrefix+n.Name, kp)); err != nil {
		return nil, err
	}
	cfg := pki.RESTConfig(e.Cluster.URL, e.Cluster.CA.CertPEM, kp)
	cfg.QPS, cfg.Burst, cfg.UserAgent = 50, 100, "kubeproof-kubelet/"+n.Name
	if n.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := n.StartKubelet(ctx); err != nil {
		return nil, err
	}
	if err := n.waitReady(ctx, time.Minute); err != nil {
		return nil, err
	}
	return n, nil
}

// waitReady waits until the Node object reports Ready.
func (n *Node) waitReady(ctx context.Context, timeout time.Duration) error {
	var last string
	ok := waitFor(timeout, 200*time.Millisecond, func() bool {
		node, err := n.env.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = string(c.Status) + ": " + c.Message
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	})
	if !ok {
		return fmt.Errorf("node %s not Ready within %s (last: %s)", n.Name, timeout, last)
	}
	return nil
}

// makeCgroupRoot makes the node's --cgroup-root (/kp-node-<i>, none for
// the first node) in every cgroup hierarchy of the host, as an operator
// must before starting upstream's kubelet, which refuses a root that does
// not exist (so does kubeproof's). The host's clean-up removes it
// (cgroupParents).
func (n *Node) makeCgroupRoot() error {
	if n.cgroupRoot == "" {
		return nil
	}
	dirs := []string{filepath.Join("/sys/fs/cgroup", n.cgroupRoot)}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil { // cgroup v1: each hierarchy
		dirs = dirs[:0]
		entries, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() { // not the links to combined hierarchies (cpu -> cpu,cpuacct)
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), n.cgroupRoot))
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("making the cgroup root of %s: %w", n.Name, err)
		}
	}
	return nil
}

// StartKubelet starts the node's kubelet in-process with its kubelet API
// (HTTPS on 127.0.0.1, the port it had before if restarted).
func (n *Node) StartKubelet(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		return errors.New("kubelet already running")
	}
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(n.env.LogDir, "kubelet-"+n.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if n.binary != "" {
		return n.startKubeletProcess(lf)
	}
	logger := slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", n.apiPort))
	if err != nil {
		lf.Close()
		return fmt.Errorf("kubelet API listener: %w", err)
	}
	n.apiPort = ln.Addr().(*net.TCPAddr).Port
	evictionCfg, err := eviction.ParseConfig(eviction.Flags{Hard: EvictionHard, HardSet: true})
	if err != nil {
		ln.Close()
		lf.Close()
		return err
	}
	k, err := kubelet.New(ctx, n.client, kubelet.Config{
		NodeName: n.Name, NodeIP: "127.0.0.1", Port: int32(n.apiPort), PodCIDR: n.PodCIDR,
		RootDir: filepath.Join(n.Dir, "kubelet"), PodLogsDir: filepath.Join(n.Dir, "pod-logs"),
		Backoff: Backoff, NodeStatusUpdateFrequency: 2 * time.Second, Logger: logger,
		Eviction: &evictionCfg,
		// The host's cgroups, as `kubeproof kubelet --runtime cri`'s: the
		// cgroup mode and swap controller decide containers' CRI resources.
		CgroupDir: kubelet.SysFsCgroup, CgroupRoot: n.cgroupRoot,
		SeccompDefault: n.seccompDefault,
	}, n.CRI)
	if err != nil {
		ln.Close()
		lf.Close()
		return err
	}
	tlsCfg, err := server.TLSConfig(server.TLSOptions{Hosts: []string{n.Name, "localhost", "127.0.0.1"}})
	if err != nil {
		ln.Close()
		lf.Close()
		return err
	}
	mux := server.NewMux(server.Options{Logger: logger})
	mux.Add(k)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := server.Serve(runCtx, ln, mux, tlsCfg); err != nil && runCtx.Err() == nil {
			logger.Error("kubelet API stopped", "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := k.Run(runCtx); err != nil && runCtx.Err() == nil {
			logger.Error("kubelet stopped", "err", err)
		}
	}()
	n.kubelet = k
	n.stop = func() {
		cancel()
		wg.Wait()
		lf.Close()
	}
	return nil
}

// startKubeletProcess runs `kubeproof kubelet --runtime cri` against the
// node's containerd, its kubelet API on a free port of 127.0.0.1.
func (n *Node) startKubeletProcess(lf *os.File) error {
	if n.apiPort == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lf.Close()
			return err
		}
		n.apiPort = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	cmd := exec.Command(n.binary, "kubelet", "--kubeconfig", n.kubeconfig, "--node-name", n.Name,
		"--runtime", "cri", "--container-runtime-endpoint", "unix://"+n.Socket,
		"--pod-cidr", n.PodCIDR, "--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", fmt.Sprint(n.apiPort),
		"--crashloop-backoff-base", Backoff.Base.String(), "--crashloop-backoff-max", Backoff.Max.String(),
		"--node-status-update-frequency", "2s", "--log-level", "info", "--eviction-hard", EvictionHard,
		// This machine's disk is over image GC's default 85% high threshold;
		// collecting the unused test images between tests would lose them
		// (they cannot be pulled again offline).
		"--image-gc-high-threshold", "100",
		"--root-dir", filepath.Join(n.Dir, "kubelet"), "--pod-logs-dir", filepath.Join(n.Dir, "pod-logs"),
		"--cert-dir", filepath.Join(n.Dir, "kubelet", "pki"), // not the host's /var/lib/kubelet/pki
		"--cgroup-root", n.cgroupRoot+"/")
	if n.seccompDefault {
		cmd.Args = append(cmd.Args, "--seccomp-default")
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("starting kubeproof kubelet: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n.stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		lf.Close()
	}
	n.kubelet = nil
	return nil
}

// StopKubelet stops the kubelet and its API; the containers keep running.
func (n *Node) StopKubelet() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		n.stop()
	}
	n.kubelet, n.stop = nil, nil
}

// Kubelet is the running kubelet, or nil.
func (n *Node) Kubelet() *kubelet.Kubelet {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kubelet
}

// removeAllPods stops and removes every sandbox (so the CNI plugins
// release addresses and rules) and every container.
func (n *Node) removeAllPods() error {
	if n.CRI == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	sbs, err := n.CRI.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := n.CRI.StopPodSandbox(ctx, sb.Id); err != nil && !errors.Is(err, kruntime.ErrNotFound) {
			errs = append(errs, err)
		}
		if err := n.CRI.RemovePodSandbox(ctx, sb.Id); err != nil && !errors.Is(err, kruntime.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	cs, err := n.CRI.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err == nil {
		for _, c := range cs {
			if err := n.CRI.RemoveContainer(ctx, c.Id); err != nil && !errors.Is(err, kruntime.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (n *Node) stopContainerd() error {
	if n.CRI != nil {
		n.CRI.Close()
	}
	if n.containerd == nil {
		return nil
	}
	return n.containerd.stop()
}

// AllocatedIPs lists the addresses host-local currently holds for the
// node's network (one file per IP in its data dir).
func (n *Node) AllocatedIPs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(n.IPAMDir, Network))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			ips = append(ips, e.Name())
		}
	}
	return ips, nil
}

// netnsIP is the address of node i's network namespace (its eth0).
func netnsIP(i int) string { return fmt.Sprintf("10.243.%d.2", i) }

// setUpNetNS creates the node's network namespace and links it to the
// host: veth kp-veth<i> (host, 10.243.<i>.1/24) <-> eth0 (namespace,
// 10.243.<i>.2/24); the host routes the node's pod CIDR to the namespace,
// and the namespace's default route is the host.
func (n *Node) setUpNetNS(i int) error {
	hostIf, hostIP, nsIP := fmt.Sprintf("kp-veth%d", i), fmt.Sprintf("10.243.%d.1", i), netnsIP(i)
	in := []string{"ip", "netns", "exec", n.NetNS}
	for _, cmd := range [][]string{
		{"ip", "netns", "add", n.NetNS},
		{"ip", "link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", n.NetNS},
		{"ip", "addr", "add", hostIP + "/24", "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
		append(in, "ip", "link", "set", "lo", "up"),
		append(in, "ip", "addr", "add", nsIP+"/24", "dev", "eth0"),
		append(in, "ip", "link", "set", "eth0", "up"),
		append(in, "ip", "route", "add", "default", "via", hostIP),
		{"ip", "route", "add", n.PodCIDR, "via", nsIP, "dev", hostIf},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("node %s network: %s: %w: %s", n.Name, strings.Join(cmd, " "), err, out)
		}
	}
	// Forwarding between the host's bridge and the namespaces.
	return os.WriteFile(ipForwardFile, []byte("1\n"), 0o644)
}

// RemoveNode stops the node's kubelet, removes its pods from its
// containerd, stops it, deletes the Node object and, for a node with its
// own network namespace, the namespace.
func (e *Env) RemoveNode(ctx context.Context, n *Node) error {
	n.StopKubelet()
	errs := []error{n.removeAllPods(), n.stopContainerd()}
	if err := e.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	errs = append(errs, unmountUnder(n.Dir))
	if n.NetNS != "" {
		if out, err := exec.Command("ip", "netns", "del", n.NetNS).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", n.NetNS, err, out))
		}
	}
	e.Nodes = slices.DeleteFunc(e.Nodes, func(x *Node) bool { return x == n })
	return errors.Join(errs...)
}

// netnsPrefix names the nodes' network namespaces.
const netnsPrefix = "kp-e2e-"

// deleteNetnses deletes every network namespace of the suite.
func deleteNetnses() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], netnsPrefix) {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
}

// removeNodeNetworks deletes the network namespaces of nodes that have one
// (with their bridges, veths and iptables rules inside).
func (e *Env) removeNodeNetworks() error {
	var errs []error
	for _, n := range e.Nodes {
		if n.NetNS == "" {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", n.NetNS).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", n.NetNS, err, out))
		}
	}
	return errors.Join(errs...)
}
