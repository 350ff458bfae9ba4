package main

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestEmptyAuthorizationModeIsAlwaysAllow: `kubeproof apiserver
// --authorization-mode=` (explicitly empty) authorizes with AlwaysAllow,
// as kube-apiserver's option completion turns an empty mode list into
// AlwaysAllow before validating it (no "at least one authorization-mode
// must be passed" error). Without the flag kubeproof keeps its own
// default, Node,RBAC (kube-apiserver's would be AlwaysAllow too); modes
// given are kept as they are.
func TestEmptyAuthorizationModeIsAlwaysAllow(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"Node", "RBAC"}},
		{[]string{"--authorization-mode="}, []string{"AlwaysAllow"}},
		{[]string{"--authorization-mode", ""}, []string{"AlwaysAllow"}},
		{[]string{"--authorization-mode=RBAC"}, []string{"RBAC"}},
		{[]string{"--authorization-mode=AlwaysDeny,Node"}, []string{"AlwaysDeny", "Node"}},
	} {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		completeAuthorizationModes(fs, &o)
		if !slices.Equal(o.AuthorizationModes, tc.want) {
			t.Errorf("%q: modes %q, want %q", tc.args, o.AuthorizationModes, tc.want)
		}
		if errs := o.Validate(); len(errs) > 0 {
			t.Errorf("%q: %v", tc.args, errs)
		}
	}
}
