// Package runtime is the kubelet's view of a container runtime: a small
// interface modelled on CRI v1 (k8s.io/cri-api runtime/v1), whose message
// types it reuses as data. Two implementations: sim (an in-process
// simulation, impl/kubelet/runtime/sim) and cri (a CRI v1 gRPC client for
// containerd or CRI-O, impl/kubelet/runtime/cri).
//
// The kubelet ties runtime objects to pods only through the labels below,
// so that a restarted kubelet can rebuild its state from ListPodSandbox and
// ListContainers (spec property KUBELET restart safety).
package runtime

import (
	"context"
	"errors"
	"io"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

// Labels the kubelet puts on sandboxes and containers (the same keys as
// upstream's kuberuntime).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelContainerType is "init" for init containers,
	// ContainerTypeEphemeral for ephemeral ones and absent or "app" for
	// regular ones (kubeproof's own label; upstream keeps the
	// distinction in its own annotations).
	LabelContainerType = "io.kubeproof.container.type"
	// ContainerTypeEphemeral is LabelContainerType's value for an
	// ephemeral container (spec.ephemeralContainers, kubectl debug).
	ContainerTypeEphemeral = "ephemeral"
)

// Annotations the kubelet puts on containers (upstream's kuberuntime
// keys and encodings, newContainerAnnotations): the pod's deletion and
// termination grace periods in seconds when set, by which, with the
// preStop handler, a container is killed without its pod (the container
// GC's kill of one in the unknown state).
const (
	AnnotationPodDeletionGracePeriod    = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	// AnnotationContainerPreStopHandler is the container's preStop
	// handler as JSON (a v1.LifecycleHandler), when it has one; with
	// AnnotationContainerPorts (its ports as JSON, when it has any) what
	// the hook of a container stopped without its pod runs by.
	AnnotationContainerPreStopHandler = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts          = "io.kubernetes.container.ports"
	// The container's termination message path and policy, always
	// written, as upstream's.
	AnnotationContainerTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationContainerTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
)

// ErrNotFound is returned (wrapped) when a sandbox or container id is unknown.
var ErrNotFound = errors.New("not found")

// Runtime is the subset of the CRI RuntimeService and ImageService the
// kubelet uses. Every method is safe for concurrent use.
type Runtime interface {
	// Type names the runtime ("sim", "containerd", ...); it prefixes
	// container ids in pod status ("sim://<id>").
	Type() string
	// Version is the runtime version reported in node status.
	Version(ctx context.Context) (string, error)

	// RunPodSandbox creates and starts a sandbox. runtimeHandler is CRI
	// RunPodSandboxRequest.RuntimeHandler: the handler of the pod's
	// RuntimeClass, "" for the runtime's default.
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)

	// PullImage makes the image present and returns its reference.
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec) (string, error)
	// PullImageWithAuth is PullImage with registry credentials (CRI
	// AuthConfig from the pod's image pull secrets; nil for none).
	PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error)
	// ImageUser returns the user an image runs as, as CRI's ImageStatus
	// reports it: a numeric uid, or a user name that is not a number;
	// both empty when the image sets no user or is absent.
	ImageUser(ctx context.Context, image *runtimeapi.ImageSpec) (uid *int64, username string, err error)
	// ImageStatus returns the image reference, or "" if the image is absent.
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error)
	// ImageSize returns a present image's size in bytes, as CRI's
	// ImageStatus reports it; 0 if the image is absent.
	ImageSize(ctx context.Context, image *runtimeapi.ImageSpec) (uint64, error)

	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	// StopContainer stops a container, waiting at most timeout seconds for
	// it to exit on its own before killing it.
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error)
	// UpdateContainerResources changes the cgroup values of a created or
	// running container in place (CRI UpdateContainerResources, an
	// in-place pod resize); ContainerStatus reports them afterwards.
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.LinuxContainerResources) error
	// UpdatePodSandboxResources tells the runtime a sandbox's new
	// resources and overhead after a resize (CRI
	// UpdatePodSandboxResources; a runtime without it answers gRPC
	// Unimplemented, which the kubelet ignores, as upstream's).
	UpdatePodSandboxResources(ctx context.Context, podSandboxID string, overhead, resources *runtimeapi.LinuxContainerResources) error

	// ExecSync runs cmd in the container and returns its output and exit code.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
	// ContainerLogs returns the container's output lines.
	ContainerLogs(ctx context.Context, containerID string, opts LogOptions) ([]LogLine, error)
}

// LogOptions select which log lines ContainerLogs returns.
type LogOptions struct {
	// TailLines, when > 0, keeps only the last TailLines lines.
	TailLines int64
	// Since, when non-zero, drops lines written before it.
	Since time.Time
}

// LogLine is one line of container output.
type LogLine struct {
	Time   time.Time
	Stream string // "stdout" or "stderr"
	Text   string
}

// NetworkProber is implemented by runtimes whose pod IPs are not reachable
// from the kubelet's network (the simulation): the kubelet sends httpGet and
// tcpSocket probes and hooks to it instead of dialling the pod IP.
type NetworkProber interface {
	// ProbeHTTP returns the simulated HTTP status code of GET path on port.
	ProbeHTTP(ctx context.Context, containerID string, port int, path string) (int, error)
	// ProbeTCP reports whether a TCP connection to port would succeed.
	ProbeTCP(ctx context.Context, containerID string, port int) error
}

// GRPCProber is implemented by runtimes whose pod IPs are not reachable
// from the kubelet's network (the simulation): the kubelet sends grpc
// probes to it instead of calling grpc.health.v1.Health/Check on the pod
// IP. It returns the serving status name ("SERVING", "NOT_SERVING",
// "SERVICE_UNKNOWN", "UNKNOWN") or an error if nothing answers on port.
type GRPCProber interface {
	ProbeGRPC(ctx context.Context, containerID string, port int, service string) (string, error)
}

// PortForwarder is implemented by runtimes that can connect a stream to a
// port inside a pod sandbox's network namespace (CRI's PortForward; the
// simulation serves the port itself). PortForward copies between stream
// and the port until either side closes.
type PortForwarder interface {
	PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error
}

// Probe kinds, as passed to ProbeOverrider.
const (
	ProbeLiveness  = "liveness"
	ProbeReadiness = "readiness"
	ProbeStartup   = "startup"
)

// ProbeOverrider is implemented by simulated runtimes that decide probe
// results themselves (for fault injection). ok=false means "no override:
// run the probe's handler".
type ProbeOverrider interface {
	ProbeOverride(containerID, kind string) (success bool, ok bool)
}

// ContainerStateLister is implemented by runtimes that can report each
// container's pod UID (its LabelPodUID label), id and state without
// building a CRI message per container (the simulated runtime, of which
// one process runs thousands). The kubelet's relist, which looks at every
// container once a second, uses it instead of ListContainers when the
// runtime has it. fn must not call the runtime.
type ContainerStateLister interface {
	ContainerStates(ctx context.Context, fn func(podUID, id string, state runtimeapi.ContainerState)) error
	// ContainerStatesVersion is a number, never 0, that stays the same
	// for as long as ContainerStates would report the same containers
	// in the same states: a relist that finds the version it last
	// listed need not list again.
	ContainerStatesVersion(ctx context.Context) uint64
}

// PodStateReader is implemented by runtimes that can report one pod's
// sandboxes and containers as the kubelet's plain values without building
// CRI messages (the simulated runtime). Every sync of a pod reads its
// state, the periodic resync of a running pod included (at 1,000
// simulated nodes and 30,000 pods, 1,500 a second): through
// ListPodSandbox, PodSandboxStatus, ListContainers and ContainerStatus
// that is some fifteen messages and label maps per pod, thrown away at
// once.
type PodStateReader interface {
	// PodState returns the sandboxes and containers whose LabelPodUID
	// label is podUID, as the kubelet would read them through those
	// four calls, in the order ListPodSandbox and ListContainers list
	// them.
	PodState(ctx context.Context, podUID string) (*podstate.Pod, error)
}

// StatsProvider is implemented by runtimes that measure what their
// containers and pod sandboxes use and the filesystems they keep images
// and writable layers on (CRI ListContainerStats, ListPodSandboxStats,
// ImageFsInfo). The eviction manager ranks pods with it.
type StatsProvider interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	// ImageFsInfo returns the filesystems holding images and, if the
	// runtime keeps them apart, containers' writable layers.
	ImageFsInfo(ctx context.Context) (imageFs, containerFs []*runtimeapi.FilesystemUsage, err error)
}

// ImageManager is implemented by runtimes whose images can be listed and
// removed (CRI ListImages, RemoveImage): the kubelet's image garbage
// collector uses it.
type ImageManager interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	// RemoveImage removes an image; removing an absent image succeeds.
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}
