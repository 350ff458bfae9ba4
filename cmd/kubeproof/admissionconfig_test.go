package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// --admission-control-config-file reaches the request chain's options for
// both `kubeproof apiserver` and `kubeproof up` (addAuthFlags); unset, no
// file.
func TestAdmissionControlConfigFileFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--admission-control-config-file=/etc/kubernetes/admission.yaml"}, "/etc/kubernetes/admission.yaml"},
	} {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.AdmissionControlConfigFile != tc.want {
			t.Errorf("%v: AdmissionControlConfigFile %q, want %q", tc.args, o.AdmissionControlConfigFile, tc.want)
		}
	}
}
