package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestKubeletFeatureGateAllowDNSOnlyNodeCSR: `kubeproof kubelet
// --feature-gates` knows upstream's AllowDNSOnlyNodeCSR (deprecated, off
// by default): parsed as the other gates, shown once named, and a
// KubeletConfiguration's featureGates setting it stays under the command
// line's other gates. Setting it warns, as upstream's feature gate
// warns of a deprecated one.
func TestKubeletFeatureGateAllowDNSOnlyNodeCSR(t *testing.T) {
	var g kubeletFeatureGates
	if g.allowDNSOnlyNodeCSR {
		t.Fatal("AllowDNSOnlyNodeCSR on by default")
	}
	if err := g.Set("AllowDNSOnlyNodeCSR=true"); err != nil {
		t.Fatal(err)
	}
	if !g.allowDNSOnlyNodeCSR || g.customCPUCFSQuotaPeriod {
		t.Errorf("after AllowDNSOnlyNodeCSR=true: %+v", g)
	}
	if s := g.String(); s != "AllowDNSOnlyNodeCSR=true,CustomCPUCFSQuotaPeriod=false" {
		t.Errorf("String() = %q", s)
	}
	if s := g.namedString(); s != "AllowDNSOnlyNodeCSR=true" {
		t.Errorf("namedString() = %q, want the named gate only", s)
	}
	var logs bytes.Buffer
	g.warnDeprecated(slog.New(slog.NewTextHandler(&logs, nil)))
	if l := logs.String(); !strings.Contains(l, `msg="Warning: setting deprecated feature gate. It will be removed in a future release." featureGate=AllowDNSOnlyNodeCSR value=true`) {
		t.Errorf("warning logged: %q", l)
	}

	var fresh kubeletFeatureGates
	if s := fresh.String(); s != "CustomCPUCFSQuotaPeriod=false" {
		t.Errorf("String() of no gates = %q", s)
	}
	logs.Reset()
	fresh.warnDeprecated(slog.New(slog.NewTextHandler(&logs, nil)))
	if err := fresh.Set("CustomCPUCFSQuotaPeriod=true"); err != nil || logs.Len() > 0 {
		t.Errorf("no deprecated gate set: err %v, logged %q", err, logs.String())
	}
}
