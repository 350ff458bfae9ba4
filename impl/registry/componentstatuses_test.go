package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestComponentHealth: kubectl get cs's STATUS, MESSAGE and ERROR come from
// the Healthy condition; anything but True is Unhealthy, no condition
// Unknown.
func TestComponentHealth(t *testing.T) {
	cond := func(s corev1.ConditionStatus, msg, errText string) []corev1.ComponentCondition {
		return []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: s, Message: msg, Error: errText}}
	}
	for _, tc := range []struct {
		conditions             []corev1.ComponentCondition
		status, message, errTx string
	}{
		{cond(corev1.ConditionTrue, "ok", ""), "Healthy", "ok", ""},
		{cond(corev1.ConditionFalse, "HTTP probe failed with statuscode: 500", ""), "Unhealthy", "HTTP probe failed with statuscode: 500", ""},
		{cond(corev1.ConditionUnknown, "", "boom"), "Unhealthy", "", "boom"},
		{nil, "Unknown", "", ""},
		{[]corev1.ComponentCondition{{Type: "Other", Status: corev1.ConditionTrue}}, "Unknown", "", ""},
	} {
		s, m, e := componentHealth(&corev1.ComponentStatus{Conditions: tc.conditions})
		if s != tc.status || m != tc.message || e != tc.errTx {
			t.Errorf("%+v: %q %q %q, want %q %q %q", tc.conditions, s, m, e, tc.status, tc.message, tc.errTx)
		}
	}
}
