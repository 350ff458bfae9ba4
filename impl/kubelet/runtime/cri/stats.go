package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

var (
	_ runtime.StatsProvider = (*Runtime)(nil)
	_ runtime.ImageManager  = (*Runtime)(nil)
)

// ListContainerStats implements runtime.StatsProvider.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := r.rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, wrap("list container stats", err)
	}
	return resp.Stats, nil
}

// ListPodSandboxStats implements runtime.StatsProvider.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	resp, err := r.rs.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, wrap("list pod sandbox stats", err)
	}
	return resp.Stats, nil
}

// ImageFsInfo implements runtime.StatsProvider.
func (r *Runtime) ImageFsInfo(ctx context.Context) ([]*runtimeapi.FilesystemUsage, []*runtimeapi.FilesystemUsage, error) {
	resp, err := r.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, nil, wrap("image filesystem info", err)
	}
	return resp.ImageFilesystems, resp.ContainerFilesystems, nil
}

// ListImages implements runtime.ImageManager.
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := r.is.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, wrap("list images", err)
	}
	return resp.Images, nil
}

// RemoveImage implements runtime.ImageManager. As CRI requires of the
// runtime, removing an image that is not there succeeds.
func (r *Runtime) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := r.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return wrap("remove image "+image.GetImage(), err)
}
