package podstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAvailability(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := func(since time.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}}}
	}
	deleting := ready(now)
	ts := metav1.NewTime(now)
	deleting.DeletionTimestamp = &ts
	tests := []struct {
		name                   string
		pod                    *corev1.Pod
		minReady               int32
		active, isReady, avail bool
	}{
		{"ready, no minReadySeconds", ready(now), 0, true, true, true},
		{"ready 10s of 30", ready(now.Add(-10 * time.Second)), 30, true, true, false},
		{"ready exactly 30s", ready(now.Add(-30 * time.Second)), 30, true, true, true},
		{"not ready", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, 0, true, false, false},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, 0, false, false, false},
		{"being deleted", deleting, 0, false, true, true},
	}
	for _, tt := range tests {
		if IsActive(tt.pod) != tt.active || IsReady(tt.pod) != tt.isReady || IsAvailable(tt.pod, tt.minReady, now) != tt.avail {
			t.Errorf("%s: active=%v ready=%v available=%v", tt.name, IsActive(tt.pod), IsReady(tt.pod), IsAvailable(tt.pod, tt.minReady, now))
		}
	}
}
