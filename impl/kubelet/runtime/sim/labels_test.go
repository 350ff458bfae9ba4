package sim

import (
	"maps"
	"reflect"
	"testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestLabelSetKeepsTheLabels: a compact label set returns the labels it
// was made from, reads and matches selectors as the map would, and pods
// of one workload share the labels they have in common.
func TestLabelSetKeepsTheLabels(t *testing.T) {
	for _, m := range []map[string]string{
		nil,
		{},
		{"app": "web"},
		{runtime.LabelPodName: "web-1", runtime.LabelPodNamespace: "default", runtime.LabelPodUID: "uid-1", "app": "web", "tier": ""},
		{runtime.LabelPodUID: "", runtime.LabelContainerName: "app", runtime.LabelContainerType: "regular"},
		{runtime.LabelPodName: "only-name"},
	} {
		l := compactLabels(m)
		got := l.toMap()
		if len(m) == 0 {
			if got != nil {
				t.Errorf("%v: toMap %v, want nil", m, got)
			}
			continue
		}
		if !maps.Equal(got, m) {
			t.Errorf("toMap %v, want %v", got, m)
		}
		for _, k := range []string{runtime.LabelPodName, runtime.LabelPodNamespace, runtime.LabelPodUID, "app", "tier", "absent"} {
			v, ok := l.get(k)
			wv, wok := m[k]
			if v != wv || ok != wok {
				t.Errorf("%v: get(%s) = %q %v, want %q %v", m, k, v, ok, wv, wok)
			}
			for _, sel := range []map[string]string{{k: wv}, {k: wv + "x"}, {k: ""}} {
				want := true
				for sk, sv := range sel {
					want = want && m[sk] == sv
				}
				if l.matches(sel) != want {
					t.Errorf("%v: matches(%v) = %v, want %v", m, sel, !want, want)
				}
			}
		}
	}
	a := compactLabels(map[string]string{runtime.LabelPodUID: "uid-a", "app": "web"})
	b := compactLabels(map[string]string{runtime.LabelPodUID: "uid-b", "app": "web"})
	if a.rest == nil || reflect.ValueOf(a.rest).Pointer() != reflect.ValueOf(b.rest).Pointer() {
		t.Errorf("two pods of one workload keep their common labels twice")
	}
	if a.podUID != "uid-a" || b.podUID != "uid-b" {
		t.Errorf("pod UIDs %q %q", a.podUID, b.podUID)
	}
}
