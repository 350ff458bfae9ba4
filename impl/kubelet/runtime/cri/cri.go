// Package cri is the kubelet's real container runtime: a CRI v1 gRPC
// client (k8s.io/cri-api) for containerd or CRI-O implementing
// impl/kubelet/runtime.Runtime. Logs are read from the CRI log files the
// runtime writes (LogDirectory/LogPath, CRI log format).
package cri

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Runtime is a CRI client. Create it with Dial; Close it when done.
type Runtime struct {
	target  string
	conn    *grpc.ClientConn
	rs      runtimeapi.RuntimeServiceClient
	is      runtimeapi.ImageServiceClient
	name    string
	version string
}

var _ runtime.Runtime = (*Runtime)(nil)

// maxMsgSize is upstream's CRI message size limit (16 MiB).
const maxMsgSize = 16 * 1024 * 1024

// Dial connects to a CRI endpoint ("unix:///run/containerd/containerd.sock")
// and checks the runtime answers Version.
func Dial(ctx context.Context, endpoint string) (*Runtime, error) {
	target := endpoint
	if strings.HasPrefix(endpoint, "/") {
		target = "unix://" + endpoint
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI endpoint %s: %w", endpoint, err)
	}
	r := &Runtime{target: target, conn: conn, rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
	v, err := r.rs.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("CRI endpoint %s: version: %w", endpoint, err)
	}
	r.name, r.version = v.RuntimeName, v.RuntimeVersion
	return r, nil
}

// Target is the gRPC target dialled.
func (r *Runtime) Target() string { return r.target }

// Close closes the connection.
func (r *Runtime) Close() error { return r.conn.Close() }

// Type implements runtime.Runtime: the runtime's name, e.g. "containerd".
func (r *Runtime) Type() string { return r.name }

// Version implements runtime.Runtime ("containerd://1.7.0").
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.rs.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return "", wrap("version", err)
	}
	return v.RuntimeName + "://" + v.RuntimeVersion, nil
}

// WaitNetworkReady polls Status until the runtime reports RuntimeReady and
// NetworkReady (CNI configured), as the kubelet does before running pods.
func (r *Runtime) WaitNetworkReady(ctx context.Context, poll time.Duration) error {
	for {
		st, err := r.rs.Status(ctx, &runtimeapi.StatusRequest{})
		if err == nil && st.Status != nil {
			ready := map[string]bool{}
			for _, c := range st.Status.Conditions {
				ready[c.Type] = c.Status
			}
			if ready[runtimeapi.RuntimeReady] && ready[runtimeapi.NetworkReady] {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the runtime network to be ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(poll):
		}
	}
}

// wrap maps gRPC NotFound to runtime.ErrNotFound, keeping the status in
// the chain (the kubelet shows a runtime's error as upstream's does, by
// the status's message alone).
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%s: %w: %w", op, runtime.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// RunPodSandbox implements runtime.Runtime. Its error is the runtime's
// gRPC status as is, as upstream's remote runtime client returns it: the
// kubelet's FailedCreatePodSandBox event then reads "Failed to create pod
// sandbox: rpc error: code = ... desc = ..." as upstream's does.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	resp, err := r.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", err
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox implements runtime.Runtime.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	_, err := r.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return wrap("stop pod sandbox "+id, err)
}

// RemovePodSandbox implements runtime.Runtime.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := r.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return wrap("remove pod sandbox "+id, err)
}

// PodSandboxStatus implements runtime.Runtime.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	resp, err := r.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, wrap("pod sandbox status "+id, err)
	}
	return resp.Status, nil
}

// ListPodSandbox implements runtime.Runtime.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := r.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, wrap("list pod sandboxes", err)
	}
	return resp.Items, nil
}

// PullImage implements runtime.Runtime.
func (r *Runtime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	return r.PullImageWithAuth(ctx, image, nil)
}

// PullImageWithAuth implements runtime.Runtime. As upstream's remote
// image service, an error of gRPC code Unknown is returned as its message
// alone (the kubelet's "Failed to pull image" event shows the runtime's
// words, and CRI's RegistryUnavailable and SignatureValidationFailed are
// recognised by their prefix); other errors are the gRPC status as is.
func (r *Runtime) PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error) {
	resp, err := r.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth})
	if err != nil {
		if s, ok := status.FromError(err); ok && s.Code() == codes.Unknown {
			return "", errors.New(s.Message())
		}
		return "", err
	}
	if resp.ImageRef == "" {
		// As upstream's remote image service: a pull must name its image.
		return "", fmt.Errorf("imageRef of image %q is not set", image.GetImage())
	}
	return resp.ImageRef, nil
}

// imageStatus is CRI ImageStatus's image (nil if absent), checked as
// upstream's remote image service checks it: a present image without an
// id or a size is an error. The error is the runtime's gRPC status as is.
func (r *Runtime) imageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (*runtimeapi.Image, error) {
	resp, err := r.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image})
	if err != nil {
		return nil, err
	}
	if img := resp.GetImage(); img != nil && (img.Id == "" || img.Size == 0) {
		return nil, fmt.Errorf("Id or size of image %q is not set", image.GetImage())
	}
	return resp.GetImage(), nil
}

// ImageStatus implements runtime.Runtime. Its error is imageStatus's as
// is, as upstream's remote image service returns it (the kubelet's
// InspectFailed event shows it).
func (r *Runtime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	img, err := r.imageStatus(ctx, image)
	if err != nil {
		return "", err
	}
	return img.GetId(), nil
}

// ImageSize implements runtime.Runtime from ImageStatus's size (0 for an
// absent image). Its error is imageStatus's as is, as upstream's
// GetImageSize returns it.
func (r *Runtime) ImageSize(ctx context.Context, image *runtimeapi.ImageSpec) (uint64, error) {
	img, err := r.imageStatus(ctx, image)
	if err != nil {
		return 0, err
	}
	return img.GetSize(), nil
}

// ImageUser implements runtime.Runtime from ImageStatus's uid and
// username, as upstream's getImageUser: an absent image has neither (the
// kubelet then assumes root), and the error is imageStatus's as is (the
// kubelet's CreateContainerConfigError shows its gRPC message).
func (r *Runtime) ImageUser(ctx context.Context, image *runtimeapi.ImageSpec) (*int64, string, error) {
	img, err := r.imageStatus(ctx, image)
	if err != nil {
		return nil, "", err
	}
	if img.GetUid() != nil {
		uid := img.Uid.Value
		return &uid, "", nil
	}
	return nil, img.GetUsername(), nil
}

// CreateContainer implements runtime.Runtime.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", wrap("create container", err)
	}
	return resp.ContainerId, nil
}

// StartContainer implements runtime.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	_, err := r.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return wrap("start container "+id, err)
}

// StopContainer implements runtime.Runtime.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := r.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return wrap("stop container "+id, err)
}

// RemoveContainer implements runtime.Runtime.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	_, err := r.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return wrap("remove container "+id, err)
}

// ListContainers implements runtime.Runtime.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := r.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, wrap("list containers", err)
	}
	return resp.Containers, nil
}

// ContainerStatus implements runtime.Runtime.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	resp, err := r.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, wrap("container status "+id, err)
	}
	return resp.Status, nil
}

// UpdateContainerResources implements runtime.Runtime.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	_, err := r.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources})
	return wrap("update container resources "+id, err)
}

// UpdatePodSandboxResources implements runtime.Runtime.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, id string, overhead, resources *runtimeapi.LinuxContainerResources) error {
	_, err := r.rs.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: id, Overhead: overhead, Resources: resources})
	return wrap("update pod sandbox resources "+id, err)
}

// ExecSync implements runtime.Runtime.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	secs := int64(timeout / time.Second)
	if timeout > 0 && secs == 0 {
		secs = 1
	}
	resp, err := r.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return nil, nil, 0, wrap("exec in container "+id, err)
	}
	return resp.Stdout, resp.Stderr, resp.ExitCode, nil
}

// ContainerLogs implements runtime.Runtime by reading the container's CRI
// log file.
func (r *Runtime) ContainerLogs(ctx context.Context, id string, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.LogPath == "" {
		return nil, fmt.Errorf("container %s has no log file", id)
	}
	f, err := os.Open(st.LogPath)
	if err != nil {
		return nil, fmt.Errorf("reading logs of container %s: %w", id, err)
	}
	defer f.Close()
	return ParseLogs(f, opts)
}

// ParseLogs reads CRI log lines ("<RFC3339Nano> <stream> <P|F> <text>"),
// joining partial (P) lines, and applies opts.
func ParseLogs(f io.Reader, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	var out []runtime.LogLine
	var partial strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), maxMsgSize)
	for sc.Scan() {
		line, err := parseLogLine(sc.Text())
		if err != nil {
			return nil, err
		}
		partial.WriteString(line.text)
		if line.partial {
			continue
		}
		l := runtime.LogLine{Time: line.time, Stream: line.stream, Text: partial.String()}
		partial.Reset()
		if !opts.Since.IsZero() && l.Time.Before(opts.Since) {
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if opts.TailLines > 0 && int64(len(out)) > opts.TailLines {
		out = out[int64(len(out))-opts.TailLines:]
	}
	return out, nil
}

type logLine struct {
	time    time.Time
	stream  string
	partial bool
	text    string
}

func parseLogLine(s string) (logLine, error) {
	parts := strings.SplitN(s, " ", 4)
	if len(parts) < 3 {
		return logLine{}, errors.New("malformed CRI log line: " + s)
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return logLine{}, fmt.Errorf("malformed CRI log timestamp %q: %w", parts[0], err)
	}
	l := logLine{time: t, stream: parts[1], partial: parts[2] == "P"}
	if len(parts) == 4 {
		l.text = parts[3]
	}
	return l, nil
}

// FormatLogLine writes one full line in CRI log format (for runtimes and
// fakes that write logs).
func FormatLogLine(l runtime.LogLine) string {
	return fmt.Sprintf("%s %s F %s\n", l.Time.UTC().Format(time.RFC3339Nano), l.Stream, l.Text)
}
