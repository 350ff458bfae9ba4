package admission

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestEnabledPlugins(t *testing.T) {
	tests := []struct {
		name             string
		enable, disable  []string
		wantHas, wantNot []string
		wantErr          string
	}{
		{"defaults", nil, nil, []string{"NamespaceLifecycle", "ServiceAccount", "LimitRanger", "Priority", "DefaultTolerationSeconds", "RuntimeClass", "ResourceQuota"},
			[]string{"NodeRestriction", "AlwaysPullImages"}, ""},
		{"enable NodeRestriction", []string{"NodeRestriction"}, nil, []string{"NodeRestriction", "ServiceAccount"}, nil, ""},
		{"disable ServiceAccount", nil, []string{"ServiceAccount"}, []string{"LimitRanger"}, []string{"ServiceAccount"}, ""},
		{"unknown", []string{"Bogus"}, nil, nil, nil, `enable-admission-plugins plugin "Bogus" is unknown`},
		{"overlap", []string{"AlwaysPullImages"}, []string{"AlwaysPullImages"}, nil, nil, "overlapped"},
		{"every error, as kube-apiserver's options validation", []string{"Bogus", "NodeRestriction", "AlwaysPullImages"}, []string{"AlwaysPullImages", "Nada", "NodeRestriction"}, nil, nil,
			`[enable-admission-plugins plugin "Bogus" is unknown, disable-admission-plugins plugin "Nada" is unknown, [AlwaysPullImages NodeRestriction] in enable-admission-plugins and disable-admission-plugins overlapped]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EnabledPlugins(tt.enable, tt.disable)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.wantHas {
				if !slices.Contains(got, n) {
					t.Fatalf("%v lacks %s", got, n)
				}
			}
			for _, n := range tt.wantNot {
				if slices.Contains(got, n) {
					t.Fatalf("%v has %s", got, n)
				}
			}
			// Always in the registry's order.
			all := AllPlugins()
			if !slices.IsSortedFunc(got, func(a, b string) int { return slices.Index(all, a) - slices.Index(all, b) }) {
				t.Fatalf("%v not in registry order", got)
			}
		})
	}
}

func TestNewPluginsKinds(t *testing.T) {
	mut, val, _, err := NewPlugins([]string{"DefaultTolerationSeconds", "AlwaysPullImages"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// AlwaysPullImages runs before DefaultTolerationSeconds whatever the
	// order of names; DefaultTolerationSeconds only mutates.
	if len(mut) != 2 || len(val) != 1 {
		t.Fatalf("mutators %d validators %d", len(mut), len(val))
	}
	if _, ok := mut[0].(AlwaysPullImages); !ok {
		t.Fatalf("first mutator %T", mut[0])
	}
	if _, _, _, err := NewPlugins([]string{"ServiceAccount"}, nil); err == nil {
		t.Fatal("a plugin that needs stores must fail without them")
	}
	if _, _, _, err := NewPlugins([]string{"Nope"}, nil); err == nil {
		t.Fatal("unknown plugin accepted")
	}
}

func TestOptions(t *testing.T) {
	if _, _, _, err := NewPluginsWithOptions(nil, nil, Options{PodSecurityDefaultEnforce: "strict"}); err == nil {
		t.Fatal("an unknown default level was accepted")
	}
	mut, _, _, err := NewPluginsWithOptions([]string{"DefaultTolerationSeconds"}, nil, Options{NotReadyTolerationSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	pod := newPod("p")
	if err := mut[0].Admit(context.Background(), podCreate(pod)); err != nil {
		t.Fatal(err)
	}
	if *pod.Spec.Tolerations[0].TolerationSeconds != 60 || *pod.Spec.Tolerations[1].TolerationSeconds != 300 {
		t.Fatalf("tolerations %+v", pod.Spec.Tolerations)
	}

	// PodSecurity defaults apply to namespaces without labels; exempt
	// namespaces are not checked.
	priv := newPod("p")
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	ps := podSecurity(nil)
	ps.DefaultEnforce = levelBaseline
	wantForbidden(t, ps.Validate(context.Background(), podCreate(priv)), `violates PodSecurity "baseline:latest"`)
	ps.ExemptNamespaces = map[string]bool{"ns": true}
	wantForbidden(t, ps.Validate(context.Background(), podCreate(priv)), "")
}
