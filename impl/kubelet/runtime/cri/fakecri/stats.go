package fakecri

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// The stats and image management methods: served when the runtime
// implements runtime.StatsProvider or runtime.ImageManager, otherwise
// Unimplemented (as a CRI runtime without them answers).

func (s *Server) stats() (runtime.StatsProvider, error) {
	if p, ok := s.rt.(runtime.StatsProvider); ok {
		return p, nil
	}
	return nil, status.Error(codes.Unimplemented, "the runtime does not measure containers")
}

func (s *Server) images() (runtime.ImageManager, error) {
	if m, ok := s.rt.(runtime.ImageManager); ok {
		return m, nil
	}
	return nil, status.Error(codes.Unimplemented, "the runtime does not list or remove images")
}

// ListContainerStats implements CRI.
func (s *Server) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	p, err := s.stats()
	if err != nil {
		return nil, err
	}
	st, err := p.ListContainerStats(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: st}, nil
}

// ContainerStats implements CRI.
func (s *Server) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	p, err := s.stats()
	if err != nil {
		return nil, err
	}
	st, err := p.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: req.ContainerId})
	if err != nil {
		return nil, grpcErr(err)
	}
	if len(st) == 0 {
		return nil, status.Errorf(codes.NotFound, "container %s not found", req.ContainerId)
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st[0]}, nil
}

// ListPodSandboxStats implements CRI.
func (s *Server) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	p, err := s.stats()
	if err != nil {
		return nil, err
	}
	st, err := p.ListPodSandboxStats(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: st}, nil
}

// ImageFsInfo implements CRI.
func (s *Server) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	p, err := s.stats()
	if err != nil {
		return nil, err
	}
	img, ctr, err := p.ImageFsInfo(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: img, ContainerFilesystems: ctr}, nil
}

// ListImages implements CRI.
func (s *Server) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	m, err := s.images()
	if err != nil {
		return nil, err
	}
	imgs, err := m.ListImages(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListImagesResponse{Images: imgs}, nil
}

// RemoveImage implements CRI.
func (s *Server) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	m, err := s.images()
	if err != nil {
		return nil, err
	}
	if err := m.RemoveImage(ctx, req.Image); err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// SetSandboxImage sets the sandbox image a verbose Status reports in its
// config, as containerd's CRI plugin does ("" reports none).
func (s *Server) SetSandboxImage(image string) { s.sandboxImage.Store(&image) }

// verboseInfo is a verbose Status's info: the runtime config's
// sandboxImage.
func (s *Server) verboseInfo(verbose bool) map[string]string {
	image := s.sandboxImage.Load()
	if !verbose || image == nil || *image == "" {
		return nil
	}
	cfg, _ := json.Marshal(map[string]string{"sandboxImage": *image})
	return map[string]string{"config": string(cfg)}
}
