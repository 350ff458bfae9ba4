package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// --service-account-lookup is kube-apiserver's boolean, default true: only
// =false turns the legacy token lookups off.
func TestServiceAccountLookupFlag(t *testing.T) {
	parse := func(args ...string) (cluster.AuthOptions, error) {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addAuthFlags(fs, &o, nil, nil, nil)
		return o, fs.Parse(args)
	}
	for _, tc := range []struct {
		args []string
		no   bool
	}{
		{nil, false},
		{[]string{"--service-account-lookup"}, false},
		{[]string{"--service-account-lookup=false"}, true},
		{[]string{"--service-account-lookup=false", "--service-account-lookup=true"}, false},
	} {
		o, err := parse(tc.args...)
		if err != nil || o.NoServiceAccountLookup != tc.no {
			t.Errorf("%q: NoServiceAccountLookup %v (%v), want %v", tc.args, o.NoServiceAccountLookup, err, tc.no)
		}
	}
	if _, err := parse("--service-account-lookup=maybe"); err == nil {
		t.Error("--service-account-lookup=maybe accepted")
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addAuthFlags(fs, &cluster.AuthOptions{}, nil, nil, nil)
	if f := fs.Lookup("service-account-lookup"); f.DefValue != "true" || f.Value.Type() != "bool" {
		t.Errorf("default %q type %q, want true bool", f.DefValue, f.Value.Type())
	}
}
