package cri

import (
	"context"
	"encoding/json"
	"fmt"

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

// SandboxImage returns the image the runtime runs pod sandboxes from, as
// containerd reports it in its verbose Status ("sandboxImage" of the CRI
// plugin's config); "" if the runtime does not say. Runtimes that pin it
// (ListImages' pinned) need not.
func (r *Runtime) SandboxImage(ctx context.Context) (string, error) {
	resp, err := r.rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return "", wrap("status", err)
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if text := resp.Info["config"]; text != "" {
		if err := json.Unmarshal([]byte(text), &cfg); err != nil {
			return "", fmt.Errorf("status: runtime config: %w", err)
		}
	}
	return cfg.SandboxImage, nil
}
