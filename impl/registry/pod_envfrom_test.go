package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestEnvFromValidationAsUpstream: a container's envFrom is checked as
// upstream's ValidateEnvFrom: the prefix is an env var name, a referenced
// ConfigMap's or Secret's name is required and an object name (with
// upstream's prefix allowance for a trailing "-"), and the count of
// sources (exactly one) is reported on the envFrom list's path.
func TestEnvFromValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const ef = "spec.containers[0].envFrom"
	cm := func(name string) *corev1.ConfigMapEnvSource {
		return &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
	}
	sec := func(name string) *corev1.SecretEnvSource {
		return &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
	}
	cases := []struct {
		name    string
		from    []corev1.EnvFromSource
		want    []string
		details []string
	}{
		{"valid", []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: cm("cfg-")}, {SecretRef: sec("creds")}}, nil, nil},
		{"no source", []corev1.EnvFromSource{{Prefix: "APP_"}}, []string{invalid + " " + ef},
			[]string{ef + ": Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
		{"two sources", []corev1.EnvFromSource{{ConfigMapRef: cm("cfg"), SecretRef: sec("creds")}}, []string{invalid + " " + ef},
			[]string{ef + ": Invalid value: \"\": may not have more than one field specified at a time"}},
		{"names", []corev1.EnvFromSource{{ConfigMapRef: cm("Bad_Name")}, {SecretRef: sec("")}},
			[]string{invalid + " " + ef + "[0].configMapRef.name", required + " " + ef + "[1].secretRef.name"}, nil},
		{"prefix", []corev1.EnvFromSource{{Prefix: "A=B", SecretRef: sec("creds")}},
			[]string{invalid + " " + ef + "[0].prefix"},
			[]string{ef + `[0].prefix: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.Spec.Containers[0].EnvFrom = tc.from
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
