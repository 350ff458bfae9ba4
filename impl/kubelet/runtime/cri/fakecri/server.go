// Package fakecri is an in-process CRI v1 gRPC server for tests: it serves
// the RuntimeService and ImageService of any runtime.Runtime (normally the
// simulation) and writes each container's output to its CRI log file, so
// the real CRI client (package cri) is exercised end to end over gRPC
// without containerd.
package fakecri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
)

// Server serves a runtime.Runtime over CRI.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	rt           runtime.Runtime
	networkReady atomic.Bool
	sandboxImage atomic.Pointer[string] // stats.go

	mu       sync.Mutex
	logDirs  map[string]string // sandbox id -> log directory
	logPaths map[string]string // container id -> log file
}

// New returns a server for rt, reporting NetworkReady.
func New(rt runtime.Runtime) *Server {
	s := &Server{rt: rt, logDirs: map[string]string{}, logPaths: map[string]string{}}
	s.networkReady.Store(true)
	return s
}

// SetNetworkReady sets the NetworkReady condition Status reports.
func (s *Server) SetNetworkReady(ready bool) { s.networkReady.Store(ready) }

// Register adds both CRI services to a gRPC server.
func (s *Server) Register(g *grpc.Server) {
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
}

// grpcErr is err as a gRPC status, as containerd's CRI plugin sends its
// errors (errgrpc.ToGRPC): a status error (the simulation's containerd
// errors) as it is, a not-found error as NotFound, any other as Unknown.
func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, runtime.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// Version implements CRI.
func (s *Server) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	v, err := s.rt.Version(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: s.rt.Type(), RuntimeVersion: v, RuntimeApiVersion: "v1"}, nil
}

// Status implements CRI; verbose, it reports the sandbox image in its
// config as containerd does (stats.go).
func (s *Server) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: s.networkReady.Load()},
	}}, Info: s.verboseInfo(req.GetVerbose())}, nil
}

// RunPodSandbox implements CRI, passing the request's runtime handler on
// (the simulation records it and, when it has a set of handlers, refuses
// others as containerd does).
func (s *Server) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	id, err := s.rt.RunPodSandbox(ctx, req.Config, req.RuntimeHandler)
	if err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	s.logDirs[id] = req.Config.GetLogDirectory()
	s.mu.Unlock()
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox implements CRI.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return &runtimeapi.StopPodSandboxResponse{}, grpcErr(s.rt.StopPodSandbox(ctx, req.PodSandboxId))
}

// RemovePodSandbox implements CRI.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := s.rt.RemovePodSandbox(ctx, req.PodSandboxId); err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	delete(s.logDirs, req.PodSandboxId)
	s.mu.Unlock()
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus implements CRI.
func (s *Server) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	st, err := s.rt.PodSandboxStatus(ctx, req.PodSandboxId)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// ListPodSandbox implements CRI.
func (s *Server) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := s.rt.ListPodSandbox(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

// CreateContainer implements CRI.
func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	id, err := s.rt.CreateContainer(ctx, req.PodSandboxId, req.Config, req.SandboxConfig)
	if err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	if dir := s.logDirs[req.PodSandboxId]; dir != "" && req.Config.GetLogPath() != "" {
		s.logPaths[id] = filepath.Join(dir, req.Config.GetLogPath())
	}
	s.mu.Unlock()
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer implements CRI; the container's output goes to its log
// file.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := s.rt.StartContainer(ctx, req.ContainerId); err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	path := s.logPaths[req.ContainerId]
	s.mu.Unlock()
	if path != "" {
		lines, err := s.rt.ContainerLogs(ctx, req.ContainerId, runtime.LogOptions{})
		if err != nil {
			return nil, grpcErr(err)
		}
		if err := writeLog(path, lines); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

func writeLog(path string, lines []runtime.LogLine) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("opening log file: %w", err)
	}
	for _, l := range lines {
		if _, err := f.WriteString(cri.FormatLogLine(l)); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// StopContainer implements CRI.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return &runtimeapi.StopContainerResponse{}, grpcErr(s.rt.StopContainer(ctx, req.ContainerId, req.Timeout))
}

// RemoveContainer implements CRI.
func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := s.rt.RemoveContainer(ctx, req.ContainerId); err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	delete(s.logPaths, req.ContainerId)
	s.mu.Unlock()
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ListContainers implements CRI.
func (s *Server) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	cs, err := s.rt.ListContainers(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListContainersResponse{Containers: cs}, nil
}

// ContainerStatus implements CRI.
func (s *Server) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	st, err := s.rt.ContainerStatus(ctx, req.ContainerId)
	if err != nil {
		return nil, grpcErr(err)
	}
	s.mu.Lock()
	st.LogPath = s.logPaths[req.ContainerId]
	s.mu.Unlock()
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// UpdateContainerResources implements CRI.
func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return &runtimeapi.UpdateContainerResourcesResponse{}, grpcErr(s.rt.UpdateContainerResources(ctx, req.ContainerId, req.Linux))
}

// UpdatePodSandboxResources implements CRI.
func (s *Server) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, grpcErr(s.rt.UpdatePodSandboxResources(ctx, req.PodSandboxId, req.Overhead, req.Resources))
}

// ExecSync implements CRI.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	out, errOut, code, err := s.rt.ExecSync(ctx, req.ContainerId, req.Cmd, time.Duration(req.Timeout)*time.Second)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: out, Stderr: errOut, ExitCode: code}, nil
}

// PullImage implements CRI.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref, err := s.rt.PullImageWithAuth(ctx, req.Image, req.Auth)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: ref}, nil
}

// ImageStatus implements CRI.
func (s *Server) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref, err := s.rt.ImageStatus(ctx, req.Image)
	if err != nil {
		return nil, grpcErr(err)
	}
	if ref == "" {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	// The image's names as the runtime lists them (the simulation's are
	// containerd's: normalized repo tag and repo digest); a runtime that
	// lists no images is taken to know the image by the name asked.
	img := &runtimeapi.Image{Id: ref, RepoTags: []string{req.Image.GetImage()}}
	if m, ok := s.rt.(runtime.ImageManager); ok {
		// The whole list: the simulation, as containerd, ignores a
		// ListImages filter.
		list, err := m.ListImages(ctx, nil)
		if err != nil {
			return nil, grpcErr(err)
		}
		for _, listed := range list {
			if listed.Id == ref {
				img.RepoTags, img.RepoDigests = listed.RepoTags, listed.RepoDigests
				break
			}
		}
	}
	uid, username, err := s.rt.ImageUser(ctx, req.Image)
	if err != nil {
		return nil, grpcErr(err)
	}
	if uid != nil {
		img.Uid = &runtimeapi.Int64Value{Value: *uid}
	}
	img.Username = username
	if img.Size, err = s.rt.ImageSize(ctx, req.Image); err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ImageStatusResponse{Image: img}, nil
}
