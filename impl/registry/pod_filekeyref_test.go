package registry

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFileKeyRefValidationAsUpstream: an env var's valueFrom.fileKeyRef
// (EnvFiles, on by default in 1.37) is checked as upstream's
// validateFileKeySelector (key required and a relaxed env var name,
// volumeName required and a DNS-1123 label, path required and without
// ".." elements, absolute allowed) and validateFileKeyRefVolumes (the named
// volume exists and is an emptyDir, in init, app and ephemeral
// containers); it counts as a source of valueFrom, whose "none given"
// message names it; optional defaults to false.
func TestFileKeyRefValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	envFile := func(volume, path, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: "E", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: volume, Path: path, Key: key}}}
	}
	volumes := []corev1.Volume{
		{Name: "env", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
	}
	cases := []struct {
		name    string
		env     []corev1.EnvVar
		init    bool
		want    []string
		details []string
	}{
		{"valid, an absolute path too", []corev1.EnvVar{envFile("env", "config.env", "CONFIG_VAR"), envFile("env", "/abs/config.env", "K.1-x")}, false, nil, nil},
		{"all fields empty", []corev1.EnvVar{envFile("", "", "")}, false, []string{
			required + " spec.containers[0].env[0].valueFrom.fileKeyRef.key",
			required + " spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName",
			required + " spec.containers[0].env[0].valueFrom.fileKeyRef.path",
			notFound + " spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName",
		}, []string{`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: ""`}},
		{"bad key, volume name and path", []corev1.EnvVar{envFile("Env_Vol", "dir/../up.env", "A=B")}, false, []string{
			invalid + " spec.containers[0].env[0].valueFrom.fileKeyRef.key",
			invalid + " spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName",
			invalid + " spec.containers[0].env[0].valueFrom.fileKeyRef.path",
			notFound + " spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName",
		}, []string{
			`spec.containers[0].env[0].valueFrom.fileKeyRef.key: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "dir/../up.env": must not contain '..'`,
		}},
		{"a volume that is not an emptyDir, in an init container", []corev1.EnvVar{envFile("cfg", "a.env", "K")}, true,
			[]string{invalid + " spec.initContainers[0].env[0].valueFrom.fileKeyRef.volumeName"},
			[]string{`spec.initContainers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "cfg": referenced volume must be of type emptyDir`}},
		{"no source: the list names fileKeyRef", []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{}}}, false,
			[]string{invalid + " spec.containers[0].env[0].valueFrom"},
			[]string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"}},
		{"beside a value", []corev1.EnvVar{{Name: "E", Value: "v", ValueFrom: envFile("env", "a.env", "K").ValueFrom}}, false,
			[]string{invalid + " spec.containers[0].env[0].valueFrom"},
			[]string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
		{"beside another source", []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
			FileKeyRef:   envFile("env", "a.env", "K").ValueFrom.FileKeyRef,
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}, false,
			[]string{invalid + " spec.containers[0].env[0].valueFrom"},
			[]string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.Spec.Volumes = volumes
			if tc.init {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Env: tc.env}}
			} else {
				p.Spec.Containers[0].Env = tc.env
			}
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}

	// optional is defaulted to false (+default=false); a set value stays.
	p := newPod("p")
	p.Spec.Volumes = volumes
	p.Spec.Containers[0].Env = []corev1.EnvVar{envFile("env", "a.env", "K"), envFile("env", "b.env", "K")}
	p.Spec.Containers[0].Env[1].ValueFrom.FileKeyRef.Optional = ptr(true)
	defaultPod(p)
	if o := p.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef.Optional; o == nil || *o {
		t.Errorf("fileKeyRef.optional defaulted to %v, want false", o)
	}
	if o := p.Spec.Containers[0].Env[1].ValueFrom.FileKeyRef.Optional; o == nil || !*o {
		t.Errorf("fileKeyRef.optional %v, want the true given", o)
	}

	// An ephemeral container's fileKeyRef is checked against the pod's
	// volumes too.
	p = newPod("p")
	p.Spec.Volumes = volumes
	defaultPod(p)
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Env: []corev1.EnvVar{envFile("gone", "a.env", "K")}}}}
	wantErrors(t, validatePod(p, podValidationOptions{}), notFound+" spec.ephemeralContainers[0].env[0].valueFrom.fileKeyRef.volumeName")

	// A workload's template is checked the same way.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: newPod("p").Spec}}}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{envFile("cfg", "a.env", "K")}
	d.Spec.Template.Spec.Volumes = volumes
	dr := find(t, appsV1, "deployments")
	dr.Strategy.Default(d)
	wantErrors(t, dr.Strategy.Validate(context.Background(), d), invalid+" spec.template.spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName")
}
