package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDownwardAPIResourceFieldRefValidation: a resourceFieldRef, of an env
// var or a downwardAPI volume file, is checked as upstream's
// validateContainerResourceFieldSelector: cpu, memory and
// ephemeral-storage limits and requests, and limits.hugepages-<size> and
// requests.hugepages-<size>; other resources are not supported; a volume
// file names its container; divisors are 1m or 1 for cpu and unit powers
// of ten or two for memory, ephemeral-storage and hugepages.
func TestDownwardAPIResourceFieldRefValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	env := func(res, divisor string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			ref := &corev1.ResourceFieldSelector{Resource: res}
			if divisor != "" {
				ref.Divisor = resource.MustParse(divisor)
			}
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: ref}}}
		}
	}
	volume := func(container, res, divisor string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			ref := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
			if divisor != "" {
				ref.Divisor = resource.MustParse(divisor)
			}
			p.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "v", ResourceFieldRef: ref}}}}}}
		}
	}
	const envRef = "spec.containers[0].env[0].valueFrom.resourceFieldRef"
	const volRef = "spec.volumes[0].downwardAPI.resourceFieldRef" // upstream leaves the item index out
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"hugepages limit", env("limits.hugepages-2Mi", ""), nil},
		{"hugepages request with divisor", env("requests.hugepages-1Gi", "1Mi"), nil},
		{"hugepages with a cpu divisor", env("limits.hugepages-2Mi", "1m"), []string{invalid + " " + envRef + ".divisor"}},
		{"memory divisor", env("limits.memory", "1Gi"), nil},
		{"memory divisor not a unit", env("requests.memory", "2Mi"), []string{invalid + " " + envRef + ".divisor"}},
		{"cpu divisor", env("requests.cpu", "1m"), nil},
		{"cpu divisor in Ki", env("requests.cpu", "1Ki"), []string{invalid + " " + envRef + ".divisor"}},
		{"ephemeral-storage", env("limits.ephemeral-storage", "1G"), nil},
		{"extended resource", env("requests.example.com/gpu", ""), []string{notSupported + " " + envRef + ".resource"}},
		{"bare name", env("cpu", ""), []string{notSupported + " " + envRef + ".resource"}},
		{"no resource", env("", ""), []string{required + " " + envRef + ".resource"}},
		{"volume hugepages", volume("app", "limits.hugepages-2Mi", "1Ki"), nil},
		{"volume without container", volume("", "limits.hugepages-2Mi", ""), []string{required + " " + volRef + ".containerName"}},
		{"volume unsupported", volume("app", "limits.pods", ""), []string{notSupported + " " + volRef + ".resource"}},
		{"volume hugepages divisor", volume("app", "requests.hugepages-2Mi", "3"), []string{invalid + " " + volRef + ".divisor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(p)
			defaultPod(p)
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}

	p := newPod("p")
	env("limits.hugepages-2Mi", "1m")(p)
	defaultPod(p)
	errs := r.Strategy.Validate(context.Background(), p)
	if len(errs) != 1 || errs[0].Error() != envRef+`.divisor: Invalid value: "limits.hugepages-2Mi": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource` {
		t.Errorf("hugepages divisor: %v", errs)
	}
}

// TestEnvFieldRefValidation: an env var's fieldRef is checked as upstream's
// validateObjectFieldSelector with the env var fields
// (validEnvDownwardAPIFieldPathExpressions): an apiVersion and a fieldPath
// are required, the path must convert from v1 (spec.host is
// spec.nodeName; a subscript only on labels and annotations), a label or
// annotation subscript must be a qualified name (annotations lower-cased
// first), and other paths are one of metadata.name, metadata.namespace,
// metadata.uid, spec.nodeName, spec.serviceAccountName, status.hostIP,
// status.hostIPs, status.podIP and status.podIPs.
func TestEnvFieldRefValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	const ref = "spec.containers[0].env[0].valueFrom.fieldRef"
	const supported = `supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`
	for _, tc := range []struct {
		apiVersion, path string
		want             []string
		detail           string
	}{
		{"v1", "metadata.name", nil, ""},
		{"v1", "spec.serviceAccountName", nil, ""},
		{"v1", "status.hostIPs", nil, ""},
		{"v1", "status.podIPs", nil, ""},
		{"v1", "spec.host", nil, ""},
		{"v1", "metadata.labels['app']", nil, ""},
		{"v1", "metadata.annotations['Example.com/Key']", nil, ""},
		{"", "metadata.name", []string{required + " " + ref + ".apiVersion"}, ""},
		{"v1", "", []string{required + " " + ref + ".fieldPath"}, ""},
		{"v2", "metadata.name", []string{invalid + " " + ref + ".fieldPath"},
			ref + `.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2`},
		{"v1", "metadata.labels", []string{notSupported + " " + ref + ".fieldPath"},
			ref + `.fieldPath: Unsupported value: "metadata.labels": ` + supported},
		{"v1", "status.phase", []string{notSupported + " " + ref + ".fieldPath"}, ""},
		{"v1", "spec.bogus", []string{invalid + " " + ref + ".fieldPath"},
			ref + `.fieldPath: Invalid value: "spec.bogus": error converting fieldPath: field label not supported: spec.bogus`},
		{"v1", "metadata.name['x']", []string{invalid + " " + ref + ".fieldPath"},
			ref + `.fieldPath: Invalid value: "metadata.name['x']": error converting fieldPath: field label does not support subscript: metadata.name['x']`},
		{"v1", "metadata.labels['Not Valid']", []string{invalid + " " + ref}, ""},
	} {
		p := newPod("p")
		defaultPod(p)
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: tc.apiVersion, FieldPath: tc.path}}}}
		errs := r.Strategy.Validate(context.Background(), p)
		t.Run(tc.apiVersion+"/"+tc.path, func(t *testing.T) {
			wantErrors(t, errs, tc.want...)
			if tc.detail != "" {
				wantError(t, errs, tc.detail)
			}
		})
	}
}

// TestEnvValueFromAsUpstream: an env var's valueFrom is checked as
// upstream's validateEnvVarValueFrom: configMapKeyRef and secretKeyRef name
// a valid object (an empty name is Invalid too) and a required key that is
// a valid config map key; with no source only "must specify one of" is
// reported, with a value only "may not be specified when `value` is not
// empty" (not also "more than one field").
func TestEnvValueFromAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const vf = "spec.containers[0].env[0].valueFrom"
	cm := func(name, key string) *corev1.ConfigMapKeySelector {
		return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	sec := func(name, key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	for _, tc := range []struct {
		name  string
		value string
		from  corev1.EnvVarSource
		want  []string
	}{
		{"valid", "", corev1.EnvVarSource{ConfigMapKeyRef: cm("cfg", "k.1")}, nil},
		{"bad names and keys", "", corev1.EnvVarSource{ConfigMapKeyRef: cm("", "a/b")}, []string{
			invalid + " " + vf + ".configMapKeyRef.name", invalid + " " + vf + ".configMapKeyRef.key"}},
		{"secret without key", "", corev1.EnvVarSource{SecretKeyRef: sec("Not_A_Name", "")}, []string{
			invalid + " " + vf + ".secretKeyRef.name", required + " " + vf + ".secretKeyRef.key"}},
		{"no source, with a value", "x", corev1.EnvVarSource{}, []string{invalid + " " + vf}},
		{"two sources, with a value", "x", corev1.EnvVarSource{ConfigMapKeyRef: cm("a", "k"), SecretKeyRef: sec("b", "k")}, []string{invalid + " " + vf}},
		{"two sources", "", corev1.EnvVarSource{ConfigMapKeyRef: cm("a", "k"), SecretKeyRef: sec("b", "k")}, []string{invalid + " " + vf}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			defaultPod(p)
			from := tc.from
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: tc.value, ValueFrom: &from}}
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}
}
