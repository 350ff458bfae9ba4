package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// addFeatureGatesFlag adds kube-apiserver's --feature-gates, for the one
// gate kubeproof lets be turned off: SizeBasedListCostEstimate (on by
// default, as in kube-apiserver 1.34+; off, API Priority and Fairness
// estimates lists by object count).
func addFeatureGatesFlag(fs *pflag.FlagSet, o *cluster.AuthOptions) {
	fs.Var(featureGates{o}, "feature-gates",
		"Comma-separated gate=true|false pairs; known: SizeBasedListCostEstimate (default true: API Priority and Fairness estimates lists by their objects' size; false: by their number).")
}

// featureGates is --feature-gates's value.
type featureGates struct{ o *cluster.AuthOptions }

func (g featureGates) String() string {
	if g.o == nil {
		return ""
	}
	return "SizeBasedListCostEstimate=" + strconv.FormatBool(!g.o.DisableSizeBasedListCostEstimate)
}

func (g featureGates) Set(s string) error {
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("missing =true|false in %q", pair)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("gate %s: %w", name, err)
		}
		switch strings.TrimSpace(name) {
		case "SizeBasedListCostEstimate":
			g.o.DisableSizeBasedListCostEstimate = !on
		default:
			return fmt.Errorf("unknown feature gate %q (known: SizeBasedListCostEstimate)", name)
		}
	}
	return nil
}

func (featureGates) Type() string { return "mapStringBool" }
