package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podDir is the pod's directory under the kubelet's root directory.
func (k *Kubelet) podDir(uid types.UID) string {
	return filepath.Join(k.cfg.RootDir, "pods", string(uid))
}

// volumeDir is where one volume of the pod is materialized.
func (k *Kubelet) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(k.podDir(uid), "volumes", plugin, name)
}

func volumePlugin(v *v1.Volume) string {
	switch {
	case v.EmptyDir != nil:
		return "kubernetes.io~empty-dir"
	case v.ConfigMap != nil:
		return "kubernetes.io~configmap"
	case v.Secret != nil:
		return "kubernetes.io~secret"
	case v.DownwardAPI != nil:
		return "kubernetes.io~downward-api"
	}
	return ""
}

// setUpVolumes materializes the pod's emptyDir, configMap, secret and
// downwardAPI volumes in its pod directory (hostPath volumes need nothing).
// It is idempotent; configMap, secret and downwardAPI contents are
// rewritten on every call so updates reach running pods.
func (k *Kubelet) setUpVolumes(ctx context.Context, pod *v1.Pod) error {
	src := clientEnvSource{ctx: ctx, k: k}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		plugin := volumePlugin(v)
		if plugin == "" {
			if v.HostPath == nil {
				return fmt.Errorf("volume %q: only emptyDir, configMap, secret, downwardAPI and hostPath volumes are supported", v.Name)
			}
			continue
		}
		dir := k.volumeDir(pod.UID, plugin, v.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", v.Name, err)
		}
		var files map[string][]byte
		switch {
		case v.ConfigMap != nil:
			cm, err := src.ConfigMap(pod.Namespace, v.ConfigMap.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(v.ConfigMap.Optional) {
					continue
				}
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, notFoundMessage(err, "configmap", v.ConfigMap.Name))
			}
			data := map[string][]byte{}
			for key, val := range cm.Data {
				data[key] = []byte(val)
			}
			for key, val := range cm.BinaryData {
				data[key] = val
			}
			if files, err = project(data, v.ConfigMap.Items, ptrTrue(v.ConfigMap.Optional)); err != nil {
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : configmap %q: %w", v.Name, v.ConfigMap.Name, err)
			}
		case v.Secret != nil:
			s, err := src.Secret(pod.Namespace, v.Secret.SecretName)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(v.Secret.Optional) {
					continue
				}
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, notFoundMessage(err, "secret", v.Secret.SecretName))
			}
			if files, err = project(s.Data, v.Secret.Items, ptrTrue(v.Secret.Optional)); err != nil {
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : secret %q: %w", v.Name, v.Secret.SecretName, err)
			}
		case v.DownwardAPI != nil:
			files = map[string][]byte{}
			for _, item := range v.DownwardAPI.Items {
				var val string
				var err error
				switch {
				case item.FieldRef != nil:
					val, err = podField(pod, item.FieldRef.FieldPath)
				case item.ResourceFieldRef != nil:
					c := containerSpec(pod, item.ResourceFieldRef.ContainerName, false)
					if c == nil {
						err = fmt.Errorf("container %q not found", item.ResourceFieldRef.ContainerName)
					} else {
						val, err = resourceField(c, item.ResourceFieldRef, k.cfg.capacity())
					}
				}
				if err != nil {
					return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
				}
				files[item.Path] = []byte(val)
			}
		}
		for rel, content := range files {
			if err := writeVolumeFile(dir, rel, content); err != nil {
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
			}
		}
	}
	return nil
}

// project selects the keys of a ConfigMap or Secret volume: all keys, or
// the listed items at their paths.
func project(data map[string][]byte, items []v1.KeyToPath, optional bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(items) == 0 {
		for key, val := range data {
			out[key] = val
		}
		return out, nil
	}
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configured to use key %q, but it does not exist", it.Key)
		}
		out[it.Path] = val
	}
	return out, nil
}

func writeVolumeFile(dir, rel string, content []byte) error {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("invalid path %q", rel)
	}
	path := filepath.Join(dir, clean)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return os.WriteFile(path, content, 0o644)
}

// mounts are the CRI mounts of a container's volumeMounts.
func (k *Kubelet) mounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for _, vm := range c.VolumeMounts {
		var vol *v1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == vm.Name {
				vol = &pod.Spec.Volumes[i]
			}
		}
		if vol == nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		host := ""
		if vol.HostPath != nil {
			host = vol.HostPath.Path
		} else {
			host = k.volumeDir(pod.UID, volumePlugin(vol), vol.Name)
		}
		if vm.SubPath != "" {
			host = filepath.Join(host, filepath.Clean("/"+vm.SubPath))
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly ||
			vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil})
	}
	return out, nil
}

// removePodDir deletes the pod's directory (volumes) once it is gone.
func (k *Kubelet) removePodDir(uid types.UID) error {
	if err := os.RemoveAll(k.podDir(uid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pod directory of %s: %w", uid, err)
	}
	return nil
}
