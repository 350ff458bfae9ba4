package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// downwardRL is a ResourceList of name/quantity pairs.
func downwardRL(kv ...string) v1.ResourceList {
	rl := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// TestEnvResourceFieldRef: an env var's resourceFieldRef reads as
// upstream's kubelet: limits and requests of hugepages sizes are the
// container's own (0 when unset: no pod-level or allocatable default, as
// MergeContainerResourceLimits leaves hugepages out); an unset or zero cpu
// or memory limit is the pod-level limit when there is one
// (defaultPodLimitsForDownwardAPI), else the node's allocatable, and
// ephemeral-storage always the allocatable; a containerName reads that
// container; other resources are upstream's "unsupported container
// resource" error; values are exact (a byte count past 2^53 is not
// rounded through float64) and saturate at MaxInt64.
func TestEnvResourceFieldRef(t *testing.T) {
	alloc := downwardRL("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "hugepages-2Mi", "16Mi", "hugepages-1Gi", "2Gi")
	app := v1.Container{Name: "app", Resources: v1.ResourceRequirements{
		Requests: downwardRL("hugepages-2Mi", "4Mi", "memory", "9007199254740993"),
		Limits:   downwardRL("hugepages-2Mi", "4Mi", "memory", "0"),
	}}
	other := v1.Container{Name: "other", Resources: v1.ResourceRequirements{Limits: downwardRL("cpu", "500m", "memory", "1e30")}}
	initC := v1.Container{Name: "init"}
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{app, other}, InitContainers: []v1.Container{initC}}}
	podLevel := plain.DeepCopy()
	podLevel.Spec.Resources = &v1.ResourceRequirements{Limits: downwardRL("cpu", "2", "memory", "1Gi", "hugepages-2Mi", "8Mi")}

	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		ref     v1.ResourceFieldSelector
		want    string
		wantErr string
	}{
		{"hugepages limit", plain, v1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi"}, "4194304", ""},
		{"hugepages request with divisor", plain, v1.ResourceFieldSelector{Resource: "requests.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}, "4", ""},
		{"unset hugepages limit has no allocatable default", plain, v1.ResourceFieldSelector{Resource: "limits.hugepages-1Gi"}, "0", ""},
		{"unset hugepages request", plain, v1.ResourceFieldSelector{Resource: "requests.hugepages-1Gi"}, "0", ""},
		{"unset cpu limit is the allocatable", plain, v1.ResourceFieldSelector{Resource: "limits.cpu"}, "4", ""},
		{"a zero memory limit is the allocatable", plain, v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, "8", ""},
		{"pod-level cpu limit", podLevel, v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "2000", ""},
		{"pod-level memory limit over a zero container limit", podLevel, v1.ResourceFieldSelector{Resource: "limits.memory"}, "1073741824", ""},
		{"pod-level hugepages limit is not a default", podLevel, v1.ResourceFieldSelector{Resource: "limits.hugepages-1Gi"}, "0", ""},
		{"ephemeral-storage limit is the allocatable", podLevel, v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, "100", ""},
		{"exact past 2^53", plain, v1.ResourceFieldSelector{Resource: "requests.memory"}, "9007199254740993", ""},
		{"named container", plain, v1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "500", ""},
		{"saturates", plain, v1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.memory"}, "9223372036854775807", ""},
		{"named init container gets no defaults", podLevel, v1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.cpu"}, "0", ""},
		{"named container missing", plain, v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, "", "container nope not found"},
		{"extended resource", plain, v1.ResourceFieldSelector{Resource: "requests.example.com/gpu"}, "", "unsupported container resource : requests.example.com/gpu"},
		{"no kind", plain, v1.ResourceFieldSelector{Resource: "cpu"}, "", "unsupported container resource : cpu"},
	} {
		c := &tc.pod.Spec.Containers[0]
		env, err := ContainerEnv(tc.pod, &v1.Container{Name: c.Name, Resources: c.Resources, Env: []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &tc.ref}}}}, mapEnvSource{}, alloc)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: %v %v, want error %q", tc.name, env, err, tc.wantErr)
			}
		case err != nil || len(env) != 1 || env[0].Value != tc.want:
			t.Errorf("%s: %v %v, want %q", tc.name, env, err, tc.want)
		}
	}
}

// TestDownwardAPIVolumeResourceFieldRef: a downwardAPI volume's
// resourceFieldRef reads the app or init container named (not an
// ephemeral one) as upstream's volume plugin: hugepages as the container
// sets them, unset cpu and memory limits the node's allocatable — not the
// pod-level limit, which only env vars read.
func TestDownwardAPIVolumeResourceFieldRef(t *testing.T) {
	k := &Kubelet{allocatable: downwardRL("cpu", "4", "memory", "8Gi", "hugepages-2Mi", "16Mi")}
	pod := &v1.Pod{Spec: v1.PodSpec{
		Resources:           &v1.ResourceRequirements{Limits: downwardRL("cpu", "2")},
		Containers:          []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Limits: downwardRL("hugepages-2Mi", "4Mi")}}},
		InitContainers:      []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: downwardRL("hugepages-2Mi", "2Mi")}}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	item := func(path, container, res string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: container, Resource: res}}
	}
	files := map[string]volumeFile{}
	err := k.downwardAPIFiles(pod, []v1.DownwardAPIVolumeFile{
		item("hp", "app", "limits.hugepages-2Mi"),
		item("hp-unset", "app", "requests.hugepages-1Gi"),
		item("cpu", "app", "limits.cpu"),
		item("init-hp", "init", "requests.hugepages-2Mi"),
	}, 0o644, files)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"hp": "4194304", "hp-unset": "0", "cpu": "4", "init-hp": "2097152"} {
		if got := string(files[path].data); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	err = k.downwardAPIFiles(pod, []v1.DownwardAPIVolumeFile{item("x", "debug", "limits.cpu")}, 0o644, map[string]volumeFile{})
	if err == nil || err.Error() != "container debug not found" {
		t.Errorf("ephemeral container: %v, want container debug not found", err)
	}
}
