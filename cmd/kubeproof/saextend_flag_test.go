package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// --service-account-extend-token-expiration is kube-apiserver's boolean,
// default true: only =false stops extending kubelets' projected tokens.
func TestServiceAccountExtendTokenExpirationFlag(t *testing.T) {
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
		{[]string{"--service-account-extend-token-expiration"}, false},
		{[]string{"--service-account-extend-token-expiration=false"}, true},
		{[]string{"--service-account-extend-token-expiration=false", "--service-account-extend-token-expiration=true"}, false},
	} {
		o, err := parse(tc.args...)
		if err != nil || o.NoServiceAccountExtendTokenExpiration != tc.no {
			t.Errorf("%q: NoServiceAccountExtendTokenExpiration %v (%v), want %v", tc.args, o.NoServiceAccountExtendTokenExpiration, err, tc.no)
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addAuthFlags(fs, &cluster.AuthOptions{}, nil, nil, nil)
	if f := fs.Lookup("service-account-extend-token-expiration"); f == nil || f.DefValue != "true" || f.Value.Type() != "bool" {
		t.Errorf("flag %+v, want a bool defaulting to true", f)
	}
}
