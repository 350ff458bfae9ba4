package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLegacyTrackingDecision(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600)) // 2026-11-27 in UTC
	existing := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: legacyTrackingConfigMap, ResourceVersion: "7"}, Data: data}
	}
	for _, tc := range []struct {
		name string
		cur  *corev1.ConfigMap
		want string // data.since written; "" for no write
	}{
		{name: "missing: created with today's UTC date", want: "2026-11-27"},
		{name: "a date: kept", cur: existing(map[string]string{"since": "2024-01-02"})},
		{name: "not a date: today's", cur: existing(map[string]string{"since": "then", "other": "x"}), want: "2026-11-27"},
		{name: "no data: today's", cur: existing(nil), want: "2026-11-27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := legacyTrackingDecision(tc.cur, now)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("wrote %+v, want nothing", got)
				}
				return
			}
			if got == nil || got.Data["since"] != tc.want || got.Namespace != "kube-system" || got.Name != legacyTrackingConfigMap {
				t.Fatalf("got %+v, want since %s", got, tc.want)
			}
			if tc.cur != nil && (got.ResourceVersion != "7" || len(got.Data) != len(tc.cur.Data)+boolInt(tc.cur.Data["since"] == "")) {
				t.Errorf("the update is not of the existing object: %+v", got)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
