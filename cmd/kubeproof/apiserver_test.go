package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestEnablePriorityAndFairnessFlag: on by default, as kube-apiserver's;
// =false (and only that) keeps the legacy limits.
func TestEnablePriorityAndFairnessFlag(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		wantDisabled bool
	}{
		{nil, false},
		{[]string{"--enable-priority-and-fairness"}, false},
		{[]string{"--enable-priority-and-fairness=true"}, false},
		{[]string{"--enable-priority-and-fairness=false"}, true},
	} {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.DisablePriorityAndFairness != tc.wantDisabled {
			t.Errorf("%v: disabled %v, want %v", tc.args, o.DisablePriorityAndFairness, tc.wantDisabled)
		}
	}
	var o cluster.AuthOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	if err := fs.Parse([]string{"--enable-priority-and-fairness=maybe"}); err == nil {
		t.Error("a value that is not a boolean was accepted")
	}
}
