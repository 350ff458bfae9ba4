package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// iptablesTables are the tables the bridge (ipMasq) and portmap plugins
// write chains into.
var iptablesTables = []string{"nat", "filter", "mangle"}

// hostState is what the suite may change on the host, as found before it
// started, so that teardown can put it back.
// It is saved in the work dir so that the next run can restore the host
// after a run killed before its teardown.
type hostState struct {
	IPForward     string              // net.ipv4.ip_forward
	Chains        map[string][]string // iptables table -> chains before
	ExistingPaths map[string]bool     // paths outside the work dir that existed before
	CgroupDirs    map[string]bool     // cgroup dirs named cgroupParents that existed before
	Bridges       []string            // bridges in the host namespace the run creates
	PodLogDirs    map[string]bool     // entries of /var/log/pods before
}

// Paths outside the work dir that containerd 1.6 and go-cni write to
// regardless of their configuration.
const (
	cniResultsDir  = "/var/lib/cni/results"
	cniStateRoot   = "/var/lib/cni"
	shimSocketsDir = "/run/containerd/s"
	containerdRun  = "/run/containerd"
	// netnsDir is where `ip netns add` bind-mounts named network
	// namespaces; the first one makes the dir a (shared) mount of itself.
	netnsDir = "/run/netns"
	// The kubelet binary's default --root-dir and pod logs dir.
	kubeletRootDir = "/var/lib/kubelet"
	podLogsDir     = "/var/log/pods"
)

// cgroupParents are the top-level cgroups the kubelet (its QoS and pod
// cgroups under /kubepods, or under /kp-node-<i> for the nodes after the
// first: their --cgroup-root) and containerd's defaults (k8s.io) create
// in every hierarchy (glob patterns).
var cgroupParents = []string{"kubepods", "kp-node-*", "k8s.io"}

const ipForwardFile = "/proc/sys/net/ipv4/ip_forward"

func snapshotHost() (*hostState, error) {
	h := &hostState{Chains: map[string][]string{}, ExistingPaths: map[string]bool{}, CgroupDirs: map[string]bool{}}
	b, err := os.ReadFile(ipForwardFile)
	if err != nil {
		return nil, fmt.Errorf("reading ip_forward: %w", err)
	}
	h.IPForward = strings.TrimSpace(string(b))
	for _, t := range iptablesTables {
		chains, err := iptablesChains(t)
		if err != nil {
			return nil, err
		}
		h.Chains[t] = chains
	}
	for _, p := range []string{cniStateRoot, cniResultsDir, containerdRun, shimSocketsDir, netnsDir, kubeletRootDir, podLogsDir} {
		if _, err := os.Stat(p); err == nil {
			h.ExistingPaths[p] = true
		}
	}
	for _, d := range cgroupDirs() {
		h.CgroupDirs[d] = true
	}
	h.PodLogDirs = map[string]bool{}
	entries, _ := os.ReadDir(podLogsDir)
	for _, e := range entries {
		h.PodLogDirs[e.Name()] = true
	}
	return h, nil
}

// hostStateFile is where the snapshot is kept while a run is under way.
func hostStateFile(workDir string) string { return filepath.Join(workDir, "host-state.json") }

func (h *hostState) save(workDir string) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(hostStateFile(workDir), b, 0o644)
}

func loadHostState(workDir string) (*hostState, error) {
	b, err := os.ReadFile(hostStateFile(workDir))
	if err != nil {
		return nil, err
	}
	h := &hostState{}
	if err := json.Unmarshal(b, h); err != nil {
		return nil, fmt.Errorf("reading %s: %w", hostStateFile(workDir), err)
	}
	return h, nil
}

// iptablesChains lists the chains of table ("-N" lines of iptables -S, and
// the built-in ones).
func iptablesChains(table string) ([]string, error) {
	out, err := exec.Command("iptables", "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables -t %s -S: %w", table, err)
	}
	var chains []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "-N" || f[0] == "-P") {
			chains = append(chains, f[1])
		}
	}
	return chains, nil
}

// cgroupDirs lists the existing /sys/fs/cgroup/<hierarchy>/<parent> dirs
// (and /sys/fs/cgroup/<parent> on a pure cgroup v2 host).
func cgroupDirs() []string {
	var out []string
	for _, parent := range cgroupParents {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent))
		top, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", parent))
		for _, d := range top {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				matches = append(matches, d)
			}
		}
		out = append(out, matches...)
	}
	return out
}

// restoreNetwork deletes the bridges, removes the iptables chains that did
// not exist before (and every rule jumping to them), restores ip_forward
// and deletes go-cni's result files of network.
func (h *hostState) restoreNetwork(bridges []string, network string) error {
	var errs []error
	for _, bridge := range bridges {
		if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
			if out, err := exec.Command("ip", "link", "del", bridge).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("deleting bridge %s: %w: %s", bridge, err, out))
			}
		}
	}
	for _, t := range iptablesTables {
		if err := h.removeNewChains(t); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.WriteFile(ipForwardFile, []byte(h.IPForward+"\n"), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("restoring ip_forward: %w", err))
	}
	results, _ := filepath.Glob(filepath.Join(cniResultsDir, network+"-*"))
	for _, r := range results {
		if err := os.Remove(r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range []string{cniResultsDir, cniStateRoot} {
		if !h.ExistingPaths[p] {
			if err := removeIfEmpty(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeNewChains removes every rule of table that jumps to a chain that
// did not exist at snapshot time, then flushes and deletes those chains.
// Rules are deleted by position, so comments with quotes need no parsing.
func (h *hostState) removeNewChains(table string) error {
	before := map[string]bool{}
	for _, c := range h.Chains[table] {
		before[c] = true
	}
	now, err := iptablesChains(table)
	if err != nil {
		return err
	}
	var newChains []string
	isNew := map[string]bool{}
	for _, c := range now {
		if !before[c] {
			newChains = append(newChains, c)
			isNew[c] = true
		}
	}
	if len(newChains) == 0 {
		return nil
	}
	var errs []error
	for _, chain := range now {
		if isNew[chain] {
			continue
		}
		out, err := exec.Command("iptables", "-w", "-t", table, "-S", chain).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("iptables -t %s -S %s: %w", table, chain, err))
			continue
		}
		var positions []int // 1-based rule numbers jumping to a new chain
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "-A" {
				continue
			}
			n++
			for i := 2; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && isNew[f[i+1]] {
					positions = append(positions, n)
					break
				}
			}
		}
		for i := len(positions) - 1; i >= 0; i-- {
			if out, err := exec.Command("iptables", "-w", "-t", table, "-D", chain, fmt.Sprint(positions[i])).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("iptables -t %s -D %s %d: %w: %s", table, chain, positions[i], err, out))
			}
		}
	}
	for _, c := range newChains {
		exec.Command("iptables", "-w", "-t", table, "-F", c).Run()
	}
	for _, c := range newChains {
		if out, err := exec.Command("iptables", "-w", "-t", table, "-X", c).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -t %s -X %s: %w: %s", table, c, err, out))
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the cgroup dirs under cgroupParents that did not
// exist before, deepest first (a cgroup dir is removed with rmdir once it
// has no processes and no children).
func (h *hostState) removeCgroups() error {
	var errs []error
	for _, top := range cgroupDirs() {
		if h.CgroupDirs[top] {
			continue
		}
		var dirs []string
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		// Containers left by a run whose containerd and shims were killed
		// still sit in these cgroups: kill them by pid.
		killed := false
		for _, d := range dirs {
			b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
					killed = syscall.Kill(pid, syscall.SIGKILL) == nil || killed
				}
			}
		}
		if killed {
			waitFor(5*time.Second, 50*time.Millisecond, func() bool {
				for _, d := range dirs {
					if b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
						return false
					}
				}
				return true
			})
		}
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeKubeletDirs removes what a kubelet run as a binary wrote to its
// default dirs: the dirs themselves if they did not exist before, otherwise
// the suite's pod log dirs (its namespaces are all named e2e-*).
func (h *hostState) removeKubeletDirs() error {
	var errs []error
	for _, d := range []string{kubeletRootDir, podLogsDir} {
		if !h.ExistingPaths[d] {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if h.ExistingPaths[podLogsDir] {
		entries, _ := os.ReadDir(podLogsDir)
		for _, e := range entries {
			if !h.PodLogDirs[e.Name()] && strings.HasPrefix(e.Name(), "e2e-") {
				if err := os.RemoveAll(filepath.Join(podLogsDir, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// removeNetnsDir unmounts and removes /run/netns when it did not exist
// before and no namespace is left in it (other programs may use it).
func (h *hostState) removeNetnsDir() error {
	if h.ExistingPaths[netnsDir] {
		return nil
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil || len(entries) > 0 {
		return nil
	}
	_ = syscall.Unmount(netnsDir, syscall.MNT_DETACH)
	return removeIfEmpty(netnsDir)
}

// removeRunDirs removes /run/containerd (its shim socket dir) when it did
// not exist before: when no containerd or shim runs on the host any more,
// with whatever sockets killed shims left in it; otherwise only if empty.
func (h *hostState) removeRunDirs() error {
	if h.ExistingPaths[containerdRun] {
		return nil
	}
	if len(processesWith("containerd")) == 0 {
		return os.RemoveAll(containerdRun)
	}
	var errs []error
	for _, p := range []string{shimSocketsDir, containerdRun} {
		if err := removeIfEmpty(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCNIResults deletes go-cni's cached results of the given sandboxes
// (<network>-<sandbox id>-<interface>, for the pod network and loopback).
func removeCNIResults(sandboxIDs []string) error {
	var errs []error
	entries, _ := os.ReadDir(cniResultsDir)
	for _, e := range entries {
		for _, id := range sandboxIDs {
			if strings.Contains(e.Name(), "-"+id+"-") {
				if err := os.Remove(filepath.Join(cniResultsDir, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func removeIfEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty after teardown (%d entries, e.g. %s)", dir, len(entries), entries[0].Name())
	}
	return os.Remove(dir)
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// processesWith returns the pids whose command line contains needle.
func processesWith(needle string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// leftovers lists what teardown failed to undo: devices, iptables chains,
// ip_forward, mounts, processes, cgroups and paths that differ from the
// snapshot.
func (h *hostState) leftovers(workDir string) []string {
	var left []string
	for _, pattern := range []string{BridgePrefix + "*", "kp-veth*"} {
		links, _ := filepath.Glob(filepath.Join("/sys/class/net", pattern))
		for _, l := range links {
			left = append(left, "network device "+filepath.Base(l))
		}
	}
	for _, t := range iptablesTables {
		before := map[string]bool{}
		for _, c := range h.Chains[t] {
			before[c] = true
		}
		now, err := iptablesChains(t)
		if err != nil {
			left = append(left, err.Error())
		}
		for _, c := range now {
			if !before[c] {
				left = append(left, "iptables chain "+t+"/"+c)
			}
		}
	}
	if b, err := os.ReadFile(ipForwardFile); err == nil && strings.TrimSpace(string(b)) != h.IPForward {
		left = append(left, fmt.Sprintf("net.ipv4.ip_forward is %s, was %s", strings.TrimSpace(string(b)), h.IPForward))
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(unescapeMount(f[4]), workDir) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	for _, pid := range processesWith(workDir) {
		left = append(left, fmt.Sprintf("process %d", pid))
	}
	for _, d := range cgroupDirs() {
		if !h.CgroupDirs[d] {
			left = append(left, "cgroup "+d)
		}
	}
	for _, p := range []string{cniStateRoot, containerdRun, netnsDir, kubeletRootDir, podLogsDir, workDir} {
		if _, err := os.Stat(p); err == nil && !h.ExistingPaths[p] {
			left = append(left, "path "+p)
		}
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, netnsPrefix) {
			left = append(left, "network namespace "+strings.Fields(line)[0])
		}
	}
	return left
}
