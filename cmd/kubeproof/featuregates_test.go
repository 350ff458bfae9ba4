package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// --feature-gates turns SizeBasedListCostEstimate off (and on again);
// unknown gates and malformed pairs are errors.
func TestFeatureGatesFlag(t *testing.T) {
	parse := func(args ...string) (cluster.AuthOptions, error) {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addFeatureGatesFlag(fs, &o)
		return o, fs.Parse(args)
	}
	if o, err := parse(); err != nil || o.DisableSizeBasedListCostEstimate {
		t.Errorf("default: %+v, %v", o, err)
	}
	if o, err := parse("--feature-gates=SizeBasedListCostEstimate=false"); err != nil || !o.DisableSizeBasedListCostEstimate {
		t.Errorf("gate off: %+v, %v", o, err)
	}
	if o, err := parse("--feature-gates", "SizeBasedListCostEstimate=false, SizeBasedListCostEstimate=true"); err != nil || o.DisableSizeBasedListCostEstimate {
		t.Errorf("off then on: %+v, %v", o, err)
	}
	for _, bad := range []string{"WatchList=true", "SizeBasedListCostEstimate", "SizeBasedListCostEstimate=maybe"} {
		if _, err := parse("--feature-gates=" + bad); err == nil {
			t.Errorf("--feature-gates=%s accepted", bad)
		}
	}
}
