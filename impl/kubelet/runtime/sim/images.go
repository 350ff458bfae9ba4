package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// SetImageUser sets the user an image's config names ("1000", "1000:1000",
// "nginx"); images run as root (no user) unless set.
func (r *Runtime) SetImageUser(image, user string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.imageUsers[image] = user
}

// ImageUser implements runtime.Runtime as containerd's ImageStatus does:
// the user part of the image's "user[:group]", as a uid if numeric and as
// a user name otherwise; both empty if the image sets no user.
func (r *Runtime) ImageUser(_ context.Context, image *runtimeapi.ImageSpec) (*int64, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.images[image.GetImage()]; !ok {
		return nil, "", fmt.Errorf("image status %s: %w: image not present", image.GetImage(), runtime.ErrNotFound)
	}
	user, _, _ := strings.Cut(r.imageUsers[image.GetImage()], ":")
	if user == "" {
		return nil, "", nil
	}
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &uid, "", nil
	}
	return nil, user, nil
}

// ImageSize implements runtime.Runtime: a present image's size
// (SetImageSize's, or DefaultImageSize), 0 for an absent one.
func (r *Runtime) ImageSize(_ context.Context, image *runtimeapi.ImageSpec) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.images[image.GetImage()]; !ok {
		return 0, nil
	}
	return r.imageSize(image.GetImage()), nil
}

// RequireCredentials makes pulls of images from registry (a host[:port],
// the first component of the image name) fail as unauthorized unless they
// carry this username and password.
func (r *Runtime) RequireCredentials(registry, username, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registries[registry] = &runtimeapi.AuthConfig{Username: username, Password: password}
}

// PullAuths returns the credentials each of the latest pulls of image
// presented (at most 64), in order (nil for a pull without credentials).
func (r *Runtime) PullAuths(image string) []*runtimeapi.AuthConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtimeapi.AuthConfig(nil), r.pullAuths[image]...)
}

// authorizePull checks auth against the image's registry. r.mu is held.
func (r *Runtime) authorizePull(image string, auth *runtimeapi.AuthConfig) error {
	host, _, found := strings.Cut(image, "/")
	if !found {
		return nil
	}
	want, ok := r.registries[host]
	if !ok {
		return nil
	}
	if auth == nil || auth.Username != want.Username || auth.Password != want.Password {
		return fmt.Errorf("pull image %s: failed to authorize: 401 Unauthorized", image)
	}
	return nil
}

// ContainerSecurity returns the Linux security context a container was
// created with.
func (r *Runtime) ContainerSecurity(id string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	return c.security, nil
}

// SandboxLinux returns the Linux config a sandbox was created with.
func (r *Runtime) SandboxLinux(id string) (*runtimeapi.LinuxPodSandboxConfig, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
	}
	return s.linuxConfig(), nil
}
