// Package podstate holds the kubelet's observed state of one pod as plain
// values: what the runtime reports (sandboxes and containers, matched to the
// pod by the io.kubernetes.pod.uid label), what the probes last concluded,
// and why containers are being held back. The pure decision functions
// (podsync.ComputePodActions, status.GenerateAPIPodStatus) take these as
// input; the kubelet's loop builds them from runtime calls.
package podstate

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerState is a container's runtime state.
type ContainerState int

// The CRI container states.
const (
	ContainerCreated ContainerState = iota
	ContainerRunning
	ContainerExited
	ContainerUnknown
)

// FromCRI is the ContainerState of a CRI container state.
func FromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	}
	return ContainerUnknown
}

// CRITime is a CRI timestamp (Unix nanoseconds, 0 for unset) as a time,
// the zero time for 0.
func CRITime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "Created"
	case ContainerRunning:
		return "Running"
	case ContainerExited:
		return "Exited"
	}
	return "Unknown"
}

// Sandbox is one pod sandbox as the runtime reports it.
type Sandbox struct {
	ID    string
	Ready bool
	// IP is the primary IP; AdditionalIPs the others (a dual-stack
	// sandbox's other family), as CRI's PodSandboxNetworkStatus.
	IP            string
	AdditionalIPs []string
	CreatedAt     time.Time
	Attempt       uint32
}

// Container is one container as the runtime reports it.
type Container struct {
	ID   string // runtime id, without the "<type>://" prefix
	Name string
	Init bool
	// Ephemeral marks an ephemeral container (spec.ephemeralContainers);
	// Init is false for it. Names are unique across a pod's containers of
	// every kind, so Latest(name, false) finds it too.
	Ephemeral  bool
	SandboxID  string
	Attempt    uint32 // the restart count it was created with
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	Reason     string
	Message    string
	Image      string
	ImageRef   string
	// Resources are the cgroup values the runtime reports the container
	// has (CRI ContainerStatus.Resources.Linux; nil when it reports none):
	// what an in-place resize compares with the allocated resources. The
	// runtime's own, never to be changed.
	Resources *runtimeapi.LinuxContainerResources
}

// Pod is the runtime's view of one pod.
type Pod struct {
	UID        types.UID
	Sandboxes  []Sandbox   // newest first
	Containers []Container // newest first
}

// LatestSandbox returns the newest sandbox, or nil.
func (p *Pod) LatestSandbox() *Sandbox {
	if p == nil || len(p.Sandboxes) == 0 {
		return nil
	}
	return &p.Sandboxes[0]
}

// ReadySandboxes counts the ready sandboxes.
func (p *Pod) ReadySandboxes() int {
	if p == nil {
		return 0
	}
	n := 0
	for _, s := range p.Sandboxes {
		if s.Ready {
			n++
		}
	}
	return n
}

// Latest returns the newest container with that name and kind in any
// sandbox, or nil.
func (p *Pod) Latest(name string, init bool) *Container {
	if p == nil {
		return nil
	}
	for i := range p.Containers {
		if c := &p.Containers[i]; c.Name == name && c.Init == init {
			return c
		}
	}
	return nil
}

// Named returns the newest container with that name, of any kind, state
// or sandbox (a pod's container names are unique across init, app and
// ephemeral containers), nil if none: upstream's lookup of a container by
// name, which also finds an ephemeral container's runs.
func (p *Pod) Named(name string) *Container {
	if p == nil {
		return nil
	}
	for i := range p.Containers {
		if c := &p.Containers[i]; c.Name == name {
			return c
		}
	}
	return nil
}

// LatestIn returns the newest container with that name and kind in the
// given sandbox, or nil.
func (p *Pod) LatestIn(sandboxID, name string, init bool) *Container {
	if p == nil {
		return nil
	}
	for i := range p.Containers {
		if c := &p.Containers[i]; c.Name == name && c.Init == init && c.SandboxID == sandboxID {
			return c
		}
	}
	return nil
}

// Previous returns the newest container with that name and kind that is
// older than c, or nil (for lastState in pod status).
func (p *Pod) Previous(c *Container) *Container {
	if p == nil || c == nil {
		return nil
	}
	seen := false
	for i := range p.Containers {
		o := &p.Containers[i]
		if o.ID == c.ID {
			seen = true
			continue
		}
		if seen && o.Name == c.Name && o.Init == c.Init {
			return o
		}
	}
	return nil
}

// Running returns the running (or created, not yet exited) containers.
func (p *Pod) Running() []Container {
	if p == nil {
		return nil
	}
	var out []Container
	for _, c := range p.Containers {
		if c.State == ContainerRunning || c.State == ContainerCreated || c.State == ContainerUnknown {
			out = append(out, c)
		}
	}
	return out
}

// Stopped reports whether nothing of the pod runs any more: no container
// running and no sandbox ready.
func (p *Pod) Stopped() bool {
	return len(p.Running()) == 0 && p.ReadySandboxes() == 0
}

// ProbeResult is the current conclusion of one probe.
type ProbeResult int

// Probe results. Unknown means the probe has not concluded yet.
const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

// ContainerProbes are the probe conclusions for one running container.
type ContainerProbes struct {
	Liveness, Readiness, Startup ProbeResult
}

// Waiting explains why a container is held back (CrashLoopBackOff,
// CreateContainerError, RunContainerError, ErrImagePull, ...).
type Waiting struct {
	Reason, Message string
	// Until, when known, is when the container may be tried again (an
	// image pull's back-off: ErrImagePull, ImagePullBackOff); the kubelet
	// syncs the pod then. Not part of the reported status.
	Until time.Time
}
