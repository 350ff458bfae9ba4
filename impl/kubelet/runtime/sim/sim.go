// Package sim is an in-process simulated container runtime implementing
// impl/kubelet/runtime.Runtime. Sandboxes get IPs from a per-node pool,
// images are "pulled" instantly (or after a configured latency), and
// containers are records whose state is derived from the injected clock, so
// no goroutine runs per container and thousands of simulated nodes fit in
// one process. Faults are injected per pod through annotations (see
// faults.go) or for every pod through Config.DefaultAnnotations. Besides
// the CRI calls it reports a pod's sandboxes and containers as plain values
// (runtime.PodStateReader, for every pod sync) and versions its
// containers' states (runtime.ContainerStateLister, so that the relist of
// a node where nothing happened lists nothing).
//
// Spec properties: an IP is handed to at most one live sandbox (KUBELET-3)
// and is released when its sandbox stops or is removed (KUBELET-4).
package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Config configures a simulated runtime.
type Config struct {
	// Clock drives container lifetimes and latencies (default: real clock).
	Clock clock.WithTicker
	// PodCIDR is the pool sandbox IPs come from, e.g. "10.244.3.0/24", or
	// two of different families for dual-stack sandboxes
	// ("10.244.3.0/24,fd00:10:244:3::/64"): each sandbox then gets an
	// address of each, the first family's as its primary IP.
	PodCIDR string
	// Latencies of the corresponding operations (default 0).
	SandboxLatency, PullLatency, CreateLatency, StartLatency, StopLatency time.Duration
	// DefaultAnnotations apply to every pod unless the pod's own
	// annotations set the same key (fault injection by flag).
	DefaultAnnotations map[string]string
	// RuntimeHandlers, when not nil, are the runtime handlers (CRI
	// RunPodSandboxRequest.RuntimeHandler, a RuntimeClass's handler) the
	// runtime has besides its default (""): a sandbox asking for another
	// is refused with containerd's error. Nil accepts any handler.
	RuntimeHandlers []string
	// MissingImages are images the registries lack, as SetImageMissing
	// makes them: each an image reference (any spelling: "nginx:nope" is
	// docker.io/library/nginx:nope) or a glob pattern (path.Match: "*"
	// within one path segment, "?", "[...]") a pulled reference matches
	// as asked, normalized or in its familiar form ("nosuch/*" matches
	// nosuch/app, docker.io/nosuch/app:1.0; "*" every Docker Hub library
	// image).
	MissingImages []string
}

// Runtime is the simulated runtime. Create it with New.
type Runtime struct {
	cfg   Config
	clock clock.WithTicker

	mu    sync.Mutex
	seq   uint64
	ids   idKey     // renders seq numbers as CRI IDs (ids.go)
	pools []*ipPool // one per family, the primary first
	// ip6 holds the sandboxes' IPv6 addresses when a pool is IPv6 (a
	// sandbox keeps its IPv4 address itself), by seq, while ready.
	ip6 map[uint64][16]byte
	// handlers are the sandboxes' runtime handlers, by seq, for those
	// created with one (a RuntimeClass's): most have none, and a sandbox
	// record is kept small.
	handlers   map[uint64]string
	sandboxes  map[uint64]*sandbox                 // by seq
	containers map[uint64]*container               // by seq
	byPod      podObjects                          // both, by pod UID (bypod.go)
	images     map[string]string                   // normalized reference (repo tag, repo digest) -> image id (images.go)
	imageIDs   map[string]imageNames               // image id -> its names and what statuses report (images.go)
	imageUsers map[string]string                   // normalized image name -> the image config's user
	spellings  map[string]string                   // image names asked lately -> normalized (normalized, images.go)
	registries map[string]*runtimeapi.AuthConfig   // registry host -> credentials pulls need
	missing    map[string]bool                     // normalized references registries lack (SetImageMissing)
	missingPat []string                            // patterns of references registries lack (Config.MissingImages)
	pullAuths  map[string][]*runtimeapi.AuthConfig // image name -> credentials presented
	execLog    []Exec
	disk       diskState    // image sizes and container disk use (stats.go)
	states     stateVersion // what ContainerStatesVersion reports (version.go)
}

// Exec is one command run through ExecSync (recorded for tests, e.g. to
// see that a preStop hook ran).
type Exec struct {
	ContainerID string
	Cmd         []string
	ExitCode    int32
}

// A sandbox and a container record are kept for as long as their pod runs
// (thousands per process), so they are kept compactly: times as Unix
// nanoseconds, and what equals a workload's other pods' or the labels'
// values shared or derived (compactMeta, sharedParts).
type sandbox struct {
	seq uint64 // creation order; the ID's number (ids.go)
	// meta is nil when the metadata's name, namespace and UID are the
	// pod labels' (as the kubelet creates every sandbox); attempt is
	// its attempt then (see metadata).
	meta      *runtimeapi.PodSandboxMetadata
	state     runtimeapi.PodSandboxState
	attempt   uint32
	createdAt int64 // Unix nanoseconds
	labels    labelSet
	// annotations are the pod's, as the kubelet passes them.
	annotations map[string]string
	// linux is the Linux config without its cgroup parent when that is
	// one the kubelet gives its pod's QoS class, "/kubepods/pod<UID>",
	// "/kubepods/burstable/pod<UID>" or "/kubepods/besteffort/pod<UID>"
	// (cgroupKind, its index in podCgroupParents), shared by the
	// sandboxes of pods with equal security contexts and sysctls (see
	// linuxConfig).
	linux *runtimeapi.LinuxPodSandboxConfig
	// ip4 is its IPv4 address (the runtime's ip6 its IPv6 one, if any):
	// four bytes where a netip.Addr takes 24, which with cgroupKind fit
	// in one word.
	ip4        [4]byte
	cgroupKind uint8
}

// sandboxIPs are s's addresses, the primary family's first, n of them
// (one per pool; meaningful while s is ready). An array, not a slice:
// status reads are frequent and this allocates nothing.
func (r *Runtime) sandboxIPs(s *sandbox) (ips [2]netip.Addr, n int) {
	for i, p := range r.pools {
		if p.prefix.Addr().Is4() {
			ips[i] = netip.AddrFrom4(s.ip4)
		} else {
			ips[i] = netip.AddrFrom16(r.ip6[s.seq])
		}
	}
	return ips, len(r.pools)
}

// releaseIPs gives s's addresses back to the pools (network teardown).
func (r *Runtime) releaseIPs(s *sandbox) {
	ips, n := r.sandboxIPs(s)
	for i := range n {
		r.pools[i].release(ips[i])
	}
	delete(r.ip6, s.seq)
}

// metadata is the sandbox's CRI metadata (made anew when derived from its
// labels).
func (s *sandbox) metadata() *runtimeapi.PodSandboxMetadata {
	if s.meta != nil {
		return s.meta
	}
	return &runtimeapi.PodSandboxMetadata{Name: s.labels.podName, Namespace: s.labels.podNamespace, Uid: s.labels.podUID, Attempt: s.attempt}
}

// compactMeta returns what a sandbox keeps of m: nil (and m's attempt)
// when its name, namespace and UID are the pod labels' of l.
func compactMeta(m *runtimeapi.PodSandboxMetadata, l *labelSet) (*runtimeapi.PodSandboxMetadata, uint32) {
	if l.has == hasPodName|hasPodNamespace|hasPodUID && m.Name == l.podName && m.Namespace == l.podNamespace && m.Uid == l.podUID &&
		len(m.ProtoReflect().GetUnknown()) == 0 {
		return nil, m.Attempt
	}
	return m, 0
}

// linuxConfig is the Linux config the sandbox was created with, with the
// resources and overhead of its last UpdatePodSandboxResources.
func (s *sandbox) linuxConfig() *runtimeapi.LinuxPodSandboxConfig {
	if s.cgroupKind == 0 {
		return s.linux
	}
	out := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: cgroupParent(s.cgroupKind, s.labels.podUID), SecurityContext: s.linux.SecurityContext,
		Sysctls: s.linux.Sysctls, Overhead: s.linux.Overhead, Resources: s.linux.Resources,
	}
	return out
}

// podCgroupParents are the prefixes of the cgroup parents the kubelet
// gives a pod's sandbox, by the pod's QoS class (Guaranteed, Burstable,
// BestEffort), followed by the pod's UID; the first, "", is none.
var podCgroupParents = [...]string{"", "/kubepods/pod", "/kubepods/burstable/pod", "/kubepods/besteffort/pod"}

// cgroupParent is the cgroup parent of kind (an index of
// podCgroupParents, not 0) of the pod podUID.
func cgroupParent(kind uint8, podUID string) string { return podCgroupParents[kind] + podUID }

type container struct {
	seq        uint64 // creation order; the ID's number (ids.go)
	sandboxSeq uint64 // its sandbox's seq
	// What it was created with, shared with the containers created with
	// the same (sharedParts.containerSpec); never changed.
	*containerSpec
	labels               labelSet
	state                runtimeapi.ContainerState
	createdAt, startedAt int64 // Unix nanoseconds; 0: not yet
	mounts               mountList
	// more is what a running container of a workload mostly never has
	// (nil until it has some): kept apart, the record of every running
	// container is a size class smaller.
	more *containerMore
}

// containerMore is a container's end and what its processes made.
type containerMore struct {
	exitCode        int32
	finishedAt      int64 // Unix nanoseconds; 0: not yet
	reason, message string
	files           map[string]string // written by its processes (exec.go)
	logs            []runtime.LogLine // its output, when more than one line (output)
	// resources are the cgroup values an in-place resize gave it
	// (UpdateContainerResources); nil: those it was created with.
	resources *runtimeapi.LinuxContainerResources
}

// noMore is the zero containerMore, read when a container has none.
var noMore containerMore

// get is c.more, or noMore (never to be changed) when it has none.
func (c *container) get() *containerMore {
	if c.more == nil {
		return &noMore
	}
	return c.more
}

// set is c.more, made if it has none.
func (c *container) set() *containerMore {
	if c.more == nil {
		c.more = &containerMore{}
	}
	return c.more
}

// currentResources are the cgroup values the container has: the last
// UpdateContainerResources gave it, or those it was created with (nil for
// none).
func (c *container) currentResources() *runtimeapi.LinuxContainerResources {
	if r := c.get().resources; r != nil {
		return r
	}
	return c.resources
}

// shell is the tiny shell of one command run in the container (exec.go);
// done keeps the files the command wrote.
func (c *container) shell() (sh *shell, done func()) {
	var files *map[string]string
	if c.more != nil {
		files = &c.more.files
	}
	sh = &shell{files: files, env: c.env, mounts: &c.mounts, podUID: c.labels.podUID}
	return sh, func() {
		if c.more == nil && sh.files != nil && *sh.files != nil {
			c.set().files = *sh.files
		}
	}
}

var _ runtime.Runtime = (*Runtime)(nil)
var _ runtime.NetworkProber = (*Runtime)(nil)
var _ runtime.ProbeOverrider = (*Runtime)(nil)

// New returns a simulated runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = "10.244.0.0/24"
	}
	pools, err := newIPPools(cfg.PodCIDR)
	if err != nil {
		return nil, err
	}
	var ip6 map[uint64][16]byte
	if len(pools) == 2 || !pools[0].prefix.Addr().Is4() {
		ip6 = map[uint64][16]byte{}
	}
	missing, missingPat, err := missingImages(cfg.MissingImages)
	if err != nil {
		return nil, err
	}
	return &Runtime{
		cfg: cfg, clock: cfg.Clock, pools: pools, ip6: ip6, missingPat: missingPat,
		ids:        newIDKey(),
		sandboxes:  map[uint64]*sandbox{},
		containers: map[uint64]*container{},
		byPod:      podObjects{},
		images:     map[string]string{},
		imageIDs:   map[string]imageNames{},
		imageUsers: map[string]string{},
		registries: map[string]*runtimeapi.AuthConfig{},
		missing:    missing,
		pullAuths:  map[string][]*runtimeapi.AuthConfig{},
		states:     stateVersion{version: 1},
	}, nil
}

// Type implements runtime.Runtime.
func (r *Runtime) Type() string { return "sim" }

// Version implements runtime.Runtime.
func (r *Runtime) Version(context.Context) (string, error) { return "sim://0.1.0", nil }

func (r *Runtime) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newSeq numbers a new sandbox or container (its ID is made from the
// number: ids.go).
func (r *Runtime) newSeq() uint64 {
	r.seq++
	return r.seq
}

// sandboxByID is the sandbox whose ID is id. r.mu is held.
func (r *Runtime) sandboxByID(id string) (*sandbox, bool) {
	seq, ok := r.ids.seq(id)
	if !ok {
		return nil, false
	}
	s, ok := r.sandboxes[seq]
	return s, ok
}

// containerByID is the container whose ID is id. r.mu is held.
func (r *Runtime) containerByID(id string) (*container, bool) {
	seq, ok := r.ids.seq(id)
	if !ok {
		return nil, false
	}
	c, ok := r.containers[seq]
	return c, ok
}

// idFilter is a CRI filter's ID, read back to its record's number once
// per call rather than once per record it is compared with.
type idFilter struct {
	seq     uint64
	set, ok bool // an ID was given; it is one this runtime made
}

// idFilter reads the filter ID id ("" for none).
func (r *Runtime) idFilter(id string) idFilter {
	seq, ok := r.ids.seq(id)
	return idFilter{seq: seq, set: id != "", ok: ok}
}

// matches reports whether the record numbered seq passes f: every record
// when no ID was given, only the one with the ID otherwise.
func (f idFilter) matches(seq uint64) bool {
	return !f.set || (f.ok && f.seq == seq)
}

// RunPodSandbox implements runtime.Runtime. The sandbox keeps its runtime
// handler (PodSandboxStatus and ListPodSandbox report it, as CRI's); one
// not among Config.RuntimeHandlers, when those are set, is refused.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if config == nil || config.Metadata == nil {
		return "", fmt.Errorf("run pod sandbox: config and metadata are required")
	}
	if err := r.checkHandler(runtimeHandler); err != nil {
		return "", err
	}
	if err := r.sleep(ctx, r.cfg.SandboxLatency); err != nil {
		return "", fmt.Errorf("run pod sandbox: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cause, ok := r.annotation(config.Annotations, AnnotationNetworkFailure); ok {
		if cause == "" {
			cause = "simulated network failure"
		}
		return "", r.networkSetupFailed(cause)
	}
	var ipBuf [2]netip.Addr
	ips := ipBuf[:0]
	for i, p := range r.pools {
		ip, err := p.allocate()
		if err != nil {
			for i, got := range ips {
				r.pools[i].release(got)
			}
			// host-local IPAM's words, range i of its range sets.
			return "", r.networkSetupFailed(fmt.Sprintf("failed to allocate for range %d: %v", i, err))
		}
		ips = append(ips, ip)
	}
	s := &sandbox{
		seq: r.newSeq(), state: runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: r.clock.Now().UnixNano(), labels: compactLabels(config.Labels), annotations: r.withDefaults(config.Annotations),
	}
	for _, ip := range ips {
		if ip.Is4() {
			s.ip4 = ip.As4()
		} else {
			r.ip6[s.seq] = ip.As16()
		}
	}
	s.meta, s.attempt = compactMeta(config.Metadata, &s.labels)
	s.linux, s.cgroupKind = shared.sandboxLinux(config.Linux, s.labels.podUID)
	if runtimeHandler != "" {
		if r.handlers == nil {
			r.handlers = map[uint64]string{}
		}
		r.handlers[s.seq] = runtimeHandler
	}
	r.sandboxes[s.seq] = s
	r.byPod.add(s.labels.podUID, podObject{s: s})
	r.states.changed()
	return r.ids.id(s.seq), nil
}

// checkHandler refuses a runtime handler the runtime does not have, with
// containerd's error as the kubelet receives it over CRI: its CRI plugin's
// message for a handler its configuration has no runtime for (1.7 and 2.x
// RunPodSandbox: "unable to get OCI runtime for sandbox <id>" wrapping
// getSandboxRuntime's "no runtime for <handler> is configured", naming the
// sandbox ID it had picked), a plain error that its gRPC server sends as
// status Unknown, so that the kubelet's FailedCreatePodSandBox event reads
// "Failed to create pod sandbox: rpc error: code = Unknown desc = ..." on
// a simulated node too. The default handler "" is always there.
func (r *Runtime) checkHandler(handler string) error {
	if handler == "" || r.cfg.RuntimeHandlers == nil || slices.Contains(r.cfg.RuntimeHandlers, handler) {
		return nil
	}
	r.mu.Lock()
	id := r.ids.id(r.newSeq())
	r.mu.Unlock()
	return status.Errorf(codes.Unknown, "unable to get OCI runtime for sandbox %q: no runtime for %q is configured", id, handler)
}

// networkName is the CNI network the simulated sandboxes' bridge plugin
// belongs to, as containerd's example configuration names it.
const networkName = "containerd-net"

// networkSetupFailed is containerd's error for a sandbox whose network
// set-up failed with cause as the CNI bridge plugin's ADD failure, as the
// kubelet receives it over CRI: containerd's RunPodSandbox words it
// "failed to setup network for sandbox <id>" (naming the sandbox ID it had
// picked) around libcni's "plugin type=<type> name=<network> failed
// (add): <cause>", a plain error that its gRPC server sends as status
// Unknown and upstream's remote runtime client returns as it is: the
// FailedCreatePodSandBox event reads "Failed to create pod sandbox: rpc
// error: code = Unknown desc = failed to setup network for sandbox ...".
// r.mu is held.
func (r *Runtime) networkSetupFailed(cause string) error {
	id := r.ids.id(r.newSeq())
	return status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: plugin type=%q name=%q failed (add): %s", id, "bridge", networkName, cause)
}

// annotation is the pod annotation key, from ann or else from the
// runtime's default annotations.
func (r *Runtime) annotation(ann map[string]string, key string) (string, bool) {
	if v, ok := ann[key]; ok {
		return v, true
	}
	v, ok := r.cfg.DefaultAnnotations[key]
	return v, ok
}

func (r *Runtime) withDefaults(ann map[string]string) map[string]string {
	if len(r.cfg.DefaultAnnotations) == 0 {
		return ann
	}
	out := make(map[string]string, len(ann)+len(r.cfg.DefaultAnnotations))
	for k, v := range r.cfg.DefaultAnnotations {
		out[k] = v
	}
	for k, v := range ann {
		out[k] = v
	}
	return out
}

// StopPodSandbox implements runtime.Runtime: it stops every container of
// the sandbox (killing them at once), tears down its network (releasing
// the IP, as CNI DEL does) and marks the sandbox not ready; stopping a
// stopped or absent sandbox is done at once, as containerd's. A running
// container with a stop-failure fault fails the call first, as
// containerd's StopPodSandbox ("failed to stop container <id>: <its
// stopContainer error>", gRPC Unknown), the sandbox left as it was.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		// CRI: stopping an absent sandbox is not an error.
		return nil
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		// Stopped already: done, as containerd's StopPodSandbox of a
		// stopped sandbox (nothing runs in it: a container created in a
		// stopped sandbox never starts). Nothing changes, so the state
		// version stays and a relist has nothing new to read.
		return nil
	}
	r.states.changed()
	now := r.clock.Now()
	var stuck *container // the first (oldest) that will not stop
	for _, c := range r.containers {
		if c.sandboxSeq == s.seq {
			c.refresh(now)
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && c.faults.stopFailure != "" && (stuck == nil || c.seq < stuck.seq) {
				stuck = c
			}
		}
	}
	if stuck != nil {
		return status.Errorf(codes.Unknown, "failed to stop container %q: %s", r.ids.id(stuck.seq), status.Convert(r.stopFailed(stuck, false)).Message())
	}
	for _, c := range r.containers {
		if c.sandboxSeq == s.seq && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.exit(now, 137, "Error", "")
		}
	}
	if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		// Network teardown (CNI DEL) releases the IPs.
		r.releaseIPs(s)
	}
	s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return nil
}

// RemovePodSandbox implements runtime.Runtime: it removes the sandbox and
// its containers (running ones forcibly), releasing the sandbox's IP if
// StopPodSandbox has not already done so.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		return nil
	}
	r.states.changed()
	// CRI: running containers are forcibly terminated and removed.
	for seq, c := range r.containers {
		if c.sandboxSeq == s.seq {
			delete(r.containers, seq)
			r.byPod.remove(c.labels.podUID, podObject{c: c})
		}
	}
	if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		r.releaseIPs(s)
	}
	delete(r.sandboxes, s.seq)
	delete(r.handlers, s.seq)
	r.byPod.remove(s.labels.podUID, podObject{s: s})
	return nil
}

// PodSandboxStatus implements runtime.Runtime.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		return nil, fmt.Errorf("pod sandbox %s: %w", id, runtime.ErrNotFound)
	}
	st := &runtimeapi.PodSandboxStatus{
		Id: r.ids.id(s.seq), Metadata: s.metadata(), State: s.state, CreatedAt: s.createdAt,
		Labels: s.labels.toMap(), Annotations: s.annotations, RuntimeHandler: r.handlers[s.seq],
	}
	if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		ips, n := r.sandboxIPs(s)
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ips[0].String()}
		for _, ip := range ips[1:n] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip.String()})
		}
	}
	return st, nil
}

// ListPodSandbox implements runtime.Runtime.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []*sandbox
	id := r.idFilter(filter.GetId())
	for _, s := range r.sandboxes {
		if filter != nil {
			if !id.matches(s.seq) {
				continue
			}
			if filter.State != nil && filter.State.State != s.state {
				continue
			}
			if !s.labels.matches(filter.LabelSelector) {
				continue
			}
		}
		list = append(list, s)
	}
	// Newest first.
	sort.Slice(list, func(i, j int) bool { return list[i].seq > list[j].seq })
	out := make([]*runtimeapi.PodSandbox, 0, len(list))
	for _, s := range list {
		out = append(out, &runtimeapi.PodSandbox{
			Id: r.ids.id(s.seq), Metadata: s.metadata(), State: s.state, CreatedAt: s.createdAt,
			Labels: s.labels.toMap(), Annotations: s.annotations, RuntimeHandler: r.handlers[s.seq],
		})
	}
	return out, nil
}

func imageRef(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PullImage implements runtime.Runtime.
func (r *Runtime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	return r.PullImageWithAuth(ctx, image, nil)
}

// PullImageWithAuth implements runtime.Runtime. Pulls from a registry
// registered with RequireCredentials fail unless auth carries its
// credentials, and pulls of an image made missing with SetImageMissing
// fail, with containerd's errors as the kubelet's CRI client returns them
// (authorizePull).
func (r *Runtime) PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error) {
	if image == nil || image.Image == "" {
		return "", fmt.Errorf("pull image: no image given")
	}
	if err := r.sleep(ctx, r.cfg.PullLatency); err != nil {
		return "", fmt.Errorf("pull image %s: %w", image.Image, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Only the latest pulls' credentials are kept: the kubelet pulls once
	// per container start, so a list of every pull grew with every pod
	// the node ever ran.
	r.pullAuths[image.Image] = appendLatest(r.pullAuths[image.Image], auth, maxPullAuths)
	// An image pulled before, under any spelling of its reference, keeps
	// its id and names: pulling again allocates nothing (the kubelet
	// pulls on every start under Always).
	name := r.normalized(image.Image)
	if err := r.authorizePull(image.Image, name, auth); err != nil {
		return "", err
	}
	if ref, ok := r.images[name]; ok {
		return ref, nil
	}
	ref := imageRef(name)
	r.addImage(ref, newImageNames(name, ref))
	return ref, nil
}

// ImageStatus implements runtime.Runtime: the id of the image image
// names, by its id, a reference of it or a prefix of its id, as
// containerd resolves one (resolveImage); "" if absent, an error if the
// prefix is of several ids.
func (r *Runtime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	if image == nil {
		return "", nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.resolveImage(image.Image)
	if err != nil {
		return "", resolveError(image.Image, err)
	}
	return id, nil
}

// CreateContainer implements runtime.Runtime.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	if config == nil || config.Metadata == nil || config.Image == nil {
		return "", fmt.Errorf("create container: metadata and image are required")
	}
	if err := r.sleep(ctx, r.cfg.CreateLatency); err != nil {
		return "", fmt.Errorf("create container: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// An unknown sandbox is containerd's CreateContainer error around its
	// sandbox store's (errdefs.ErrNotFound: gRPC NotFound). A sandbox that
	// is not ready takes the container, as containerd 2.x's CreateContainer
	// does (its sandbox controller reports a stopped sandbox without
	// error); starting it fails (StartContainer).
	s, ok := r.sandboxByID(sandboxID)
	if !ok {
		return "", status.Errorf(codes.NotFound, "failed to find sandbox id %q: not found", sandboxID)
	}
	// The kubelet creates containers from the id its pull or
	// ImageStatus returned; a reference of the image also does. An image
	// that does not resolve is containerd's CreateContainer error ("failed
	// to resolve image <image>" around its image store's), as the kubelet
	// receives it over CRI: gRPC NotFound for an absent one (errdefs
	// ErrNotFound), Unknown for an ambiguous id prefix; the kubelet shows
	// the message alone.
	ref, err := r.resolveImage(config.Image.Image)
	if err != nil {
		return "", status.Errorf(codes.Unknown, "failed to resolve image %q: %v", config.Image.Image, err)
	}
	if ref == "" {
		return "", status.Errorf(codes.NotFound, "failed to resolve image %q: not found", config.Image.Image)
	}
	f, err := parseFaults(s.annotations, config.Metadata.Name)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", config.Metadata.Name, err)
	}
	c := &container{
		seq: r.newSeq(), sandboxSeq: s.seq, labels: compactLabels(config.Labels),
		state: runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: r.clock.Now().UnixNano(),
		containerSpec: shared.containerSpec(containerSpec{
			meta: shared.containerMeta(config.Metadata), image: config.Image.Image, imageRef: ref,
			annotations: shared.stringMap(config.Annotations), faults: f.shared(),
			env: shared.env(config.Envs), security: shared.securityContext(config.GetLinux().GetSecurityContext()),
			stdinOnce: config.StdinOnce, resources: shared.resources(config.GetLinux().GetResources()),
		}),
	}
	c.mounts = mountsOf(config.Mounts, c.labels.podUID)
	r.containers[c.seq] = c
	r.byPod.add(c.labels.podUID, podObject{c: c})
	r.states.changed()
	return r.ids.id(c.seq), nil
}

// StartContainer implements runtime.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	if err := r.sleep(ctx, r.cfg.StartLatency); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return fmt.Errorf("start container %s: %w", id, runtime.ErrNotFound)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fmt.Errorf("start container %s: container is in state %s, not CREATED", id, c.state)
	}
	r.states.changed()
	now := r.clock.Now()
	// containerd's StartContainer refuses a container whose sandbox is
	// not ready with its own words (1.7 and 2.x: "sandbox container <id>
	// is not running", gRPC Unknown) and, as for any start that fails
	// once begun, leaves it Exited with code 128, reason StartError and
	// the error as its message.
	if s := r.sandboxes[c.sandboxSeq]; s == nil || s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		msg := fmt.Sprintf("sandbox container %q is not running", r.ids.id(c.sandboxSeq))
		c.startedAt = 0
		c.exit(now, 128, "StartError", msg)
		return status.Error(codes.Unknown, msg)
	}
	if c.faults.startFailure != "" {
		c.startedAt = 0
		c.exit(now, 128, "StartError", c.faults.startFailure)
		// containerd's CRI words a task that fails to start so, with
		// nothing about the container before it.
		return fmt.Errorf("failed to create containerd task: %s", c.faults.startFailure)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now.UnixNano()
	if c.faults.exits {
		r.states.exitAt(c.startedAt + int64(c.faults.exitAfter))
	}
	if c.more != nil {
		c.more.files, c.more.logs = nil, nil
	}
	if len(c.faults.files) > 0 {
		files := make(map[string]string, len(c.faults.files))
		for _, p := range c.faults.files {
			files[p] = ""
		}
		c.set().files = files
	}
	// Without scripted output the container's one line is made when it is
	// read (output).
	if len(c.faults.logs) > 0 {
		m := c.set()
		for _, l := range c.faults.logs {
			m.logs = append(m.logs, runtime.LogLine{Time: now, Stream: "stdout", Text: l})
		}
	}
	c.refresh(now)
	return nil
}

// refresh applies a scheduled exit that is due at now.
func (c *container) refresh(now time.Time) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || !c.faults.exits {
		return
	}
	at := c.started().Add(c.faults.exitAfter)
	if now.Before(at) {
		return
	}
	reason := "Completed"
	if c.faults.exitCode != 0 {
		reason = "Error"
	}
	c.exit(at, c.faults.exitCode, reason, "")
}

func (c *container) exit(at time.Time, code int32, reason, message string) {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	m := c.set()
	m.finishedAt = at.UnixNano()
	m.exitCode = code
	m.reason = reason
	m.message = message
}

// StopContainer implements runtime.Runtime. A container exits at once on
// SIGTERM (code 0) unless it has a slow-stop fault, in which case it takes
// min(slow-stop, timeout) and exits 137 if the timeout ran out first. A
// running container with a stop-failure fault keeps running and the call
// fails with containerd's error (stopFailed).
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	c, ok := r.containerByID(id)
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("stop container %s: %w", id, runtime.ErrNotFound)
	}
	r.states.changed()
	c.refresh(r.clock.Now())
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && c.faults.stopFailure != "" {
		r.mu.Unlock()
		return r.stopFailed(c, timeout > 0)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		if c.state == runtimeapi.ContainerState_CONTAINER_CREATED {
			c.exit(r.clock.Now(), 0, "", "")
		}
		r.mu.Unlock()
		return nil
	}
	slow := c.faults.slowStop
	r.mu.Unlock()

	wait := r.cfg.StopLatency
	killed := false
	if slow > 0 {
		grace := time.Duration(timeout) * time.Second
		if slow >= grace {
			wait, killed = grace, true
		} else {
			wait = slow
		}
	}
	if err := r.sleep(ctx, wait); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states.changed()
	now := r.clock.Now()
	c.refresh(now)
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		if killed {
			c.exit(now, 137, "Error", "")
		} else {
			c.exit(now, 0, "Completed", "")
		}
	}
	return nil
}

// stopFailed is containerd's error for a running container whose task
// would not take the stop signal, the stop-failure fault's cause: its
// stopContainer words a failed signal "failed to stop container <id>"
// with a timeout (SIGTERM first), "failed to kill container <id>"
// without one (SIGKILL at once, as its StopPodSandbox stops a sandbox's
// containers), a plain error that its gRPC server sends as status
// Unknown.
func (r *Runtime) stopFailed(c *container, graceful bool) error {
	id := r.ids.id(c.seq)
	if graceful {
		return status.Errorf(codes.Unknown, "failed to stop container %q: %s", id, c.faults.stopFailure)
	}
	return status.Errorf(codes.Unknown, "failed to kill container %q: %s", id, c.faults.stopFailure)
}

// RemoveContainer implements runtime.Runtime.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil
	}
	c.refresh(r.clock.Now())
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("remove container %s: container is running", id)
	}
	delete(r.containers, c.seq)
	r.byPod.remove(c.labels.podUID, podObject{c: c})
	r.states.changed()
	return nil
}

// ListContainers implements runtime.Runtime.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var list []*container
	id, sandboxID := r.idFilter(filter.GetId()), r.idFilter(filter.GetPodSandboxId())
	for _, c := range r.containers {
		c.refresh(now)
		if filter != nil {
			if !id.matches(c.seq) {
				continue
			}
			if !sandboxID.matches(c.sandboxSeq) {
				continue
			}
			if filter.State != nil && filter.State.State != c.state {
				continue
			}
			if !c.labels.matches(filter.LabelSelector) {
				continue
			}
		}
		list = append(list, c)
	}
	// Newest first.
	sort.Slice(list, func(i, j int) bool { return list[i].seq > list[j].seq })
	out := make([]*runtimeapi.Container, 0, len(list))
	for _, c := range list {
		out = append(out, &runtimeapi.Container{
			Id: r.ids.id(c.seq), PodSandboxId: r.ids.id(c.sandboxSeq), Metadata: c.meta, Image: &runtimeapi.ImageSpec{Image: c.image},
			ImageRef: c.imageRef, State: c.state, CreatedAt: c.createdAt, Labels: c.labels.toMap(), Annotations: c.annotations,
		})
	}
	return out, nil
}

// ContainerStates implements runtime.ContainerStateLister: every
// container's pod UID label, id and state, as ListContainers without a
// filter would report them.
func (r *Runtime) ContainerStates(ctx context.Context, fn func(podUID, id string, state runtimeapi.ContainerState)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	for _, c := range r.containers {
		c.refresh(now)
		uid, _ := c.labels.get(runtime.LabelPodUID)
		fn(uid, r.ids.id(c.seq), c.state)
	}
	return nil
}

var _ runtime.ContainerStateLister = (*Runtime)(nil)

// started is when the container started (the zero time if it has not).
func (c *container) started() time.Time {
	if c.startedAt == 0 {
		return time.Time{}
	}
	return time.Unix(0, c.startedAt)
}

// ContainerStatus implements runtime.Runtime.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	c.refresh(r.clock.Now())
	end := c.get()
	img, ref := r.statusImage(c)
	return &runtimeapi.ContainerStatus{
		Id: r.ids.id(c.seq), Metadata: c.meta, State: c.state, CreatedAt: c.createdAt, StartedAt: c.startedAt,
		FinishedAt: end.finishedAt, ExitCode: end.exitCode, Image: &runtimeapi.ImageSpec{Image: img},
		ImageRef: ref, Reason: end.reason, Message: end.message, Labels: c.labels.toMap(), Annotations: c.annotations,
		Resources: containerResources(c.currentResources()),
	}, nil
}

// containerResources is CRI ContainerStatus.Resources of a container
// whose cgroup values are r (nil for none).
func containerResources(r *runtimeapi.LinuxContainerResources) *runtimeapi.ContainerResources {
	if r == nil {
		return nil
	}
	return &runtimeapi.ContainerResources{Linux: r}
}

// UpdateContainerResources implements runtime.Runtime: a created or
// running container has the new cgroup values from now on (ContainerStatus
// and PodState report them); an exited one is refused, as is an unknown
// one (runtime.ErrNotFound).
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return fmt.Errorf("update container resources %s: %w", id, runtime.ErrNotFound)
	}
	c.refresh(r.clock.Now())
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED && c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.FailedPrecondition, "update container resources %s: container is %s, not running or created", id, c.state)
	}
	c.set().resources = shared.resources(resources)
	return nil
}

// UpdatePodSandboxResources implements runtime.Runtime: the sandbox's
// Linux config holds the new resources and overhead from now on.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, id string, overhead, resources *runtimeapi.LinuxContainerResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		return fmt.Errorf("update pod sandbox resources %s: %w", id, runtime.ErrNotFound)
	}
	var l runtimeapi.LinuxPodSandboxConfig
	if s.linux != nil { // shared: a new config, not a change of it
		l.CgroupParent, l.SecurityContext, l.Sysctls = s.linux.CgroupParent, s.linux.SecurityContext, s.linux.Sysctls
	}
	l.Overhead, l.Resources = shared.resources(overhead), shared.resources(resources)
	s.linux = &l
	return nil
}

// ContainerLogs implements runtime.Runtime.
func (r *Runtime) ContainerLogs(ctx context.Context, id string, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, fmt.Errorf("container %s logs: %w", id, runtime.ErrNotFound)
	}
	var out []runtime.LogLine
	for _, l := range c.output() {
		if !opts.Since.IsZero() && l.Time.Before(opts.Since) {
			continue
		}
		out = append(out, l)
	}
	if opts.TailLines > 0 && int64(len(out)) > opts.TailLines {
		out = out[int64(len(out))-opts.TailLines:]
	}
	return out, nil
}

// ExecSync implements runtime.Runtime with a tiny shell (see exec.go).
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, nil, 0, fmt.Errorf("exec in container %s: %w", id, runtime.ErrNotFound)
	}
	c.refresh(r.clock.Now())
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, nil, 0, fmt.Errorf("exec in container %s: container is not running", id)
	}
	sh, done := c.shell()
	stdout, stderr, code := runShell(sh, cmd)
	done()
	r.execLog = appendLatest(r.execLog, Exec{ContainerID: id, Cmd: cmd, ExitCode: code}, maxExecLog)
	return []byte(stdout), []byte(stderr), code, nil
}

func (r *Runtime) runningContainer(id string) (*container, error) {
	c, ok := r.containerByID(id)
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	c.refresh(r.clock.Now())
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, fmt.Errorf("container %s is not running", id)
	}
	return c, nil
}

// ProbeHTTP implements runtime.NetworkProber: a running container answers
// with its http-status annotation (default 200); one not running refuses
// the connection. The caller judges the code (a probe does, a lifecycle
// hook does not).
func (r *Runtime) ProbeHTTP(ctx context.Context, id string, port int, path string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.runningContainer(id)
	if err != nil {
		return 0, fmt.Errorf("dial tcp port %d: connection refused: %w", port, err)
	}
	return c.faults.httpStatus, nil
}

// ProbeTCP implements runtime.NetworkProber: a running container accepts
// connections on every port.
func (r *Runtime) ProbeTCP(ctx context.Context, id string, port int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.runningContainer(id); err != nil {
		return fmt.Errorf("dial tcp port %d: connection refused: %w", port, err)
	}
	return nil
}

// ProbeGRPC implements runtime.GRPCProber: a running container answers
// with its grpc-status annotation (default SERVING) for every service.
func (r *Runtime) ProbeGRPC(ctx context.Context, id string, port int, service string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.runningContainer(id)
	if err != nil {
		return "", fmt.Errorf("dial tcp port %d: connection refused: %w", port, err)
	}
	return c.faults.grpcStatus, nil
}

// ProbeOverride implements runtime.ProbeOverrider from the liveness,
// readiness and startup annotations.
func (r *Runtime) ProbeOverride(id, kind string) (bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return false, false
	}
	v, ok := c.faults.probes[kind]
	if !ok {
		return false, false
	}
	failAfter, _ := parseProbeOverride(v) // validated at create
	if failAfter < 0 {
		return true, true
	}
	return r.clock.Now().Sub(c.started()) < failAfter, true
}

// maxExecLog bounds the exec record kept per runtime.
const maxExecLog = 64

// maxPullAuths bounds the credentials kept per image (PullAuths).
const maxPullAuths = 64

// appendLatest appends v to the bounded log s, dropping its oldest entry
// first when it already holds limit (Execs, PullAuths).
func appendLatest[T any](s []T, v T, limit int) []T {
	if len(s) >= limit {
		s = append(s[:0], s[1:]...)
	}
	return append(s, v)
}

// Execs returns the most recent commands run (at most 64).
func (r *Runtime) Execs() []Exec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exec(nil), r.execLog...)
}

// Counts reports the number of live sandboxes and containers (for tests and
// benchmarks).
func (r *Runtime) Counts() (sandboxes, containers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sandboxes), len(r.containers)
}

// output is what the container's main process wrote so far. A started
// container without scripted output (the sim.kubeproof.io/logs fault) has
// written one line, made here rather than kept for each container.
func (c *container) output() []runtime.LogLine {
	if c.get().logs == nil && c.faults.logs == nil && c.startedAt != 0 {
		return []runtime.LogLine{{Time: c.started(), Stream: "stdout", Text: fmt.Sprintf("simulated container %s (image %s) started", c.meta.GetName(), c.image)}}
	}
	return c.get().logs
}
