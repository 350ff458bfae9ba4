package serviceaccount

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDecideLegacyTokenCleanupUsesUTCDates: the dates the cleaner writes
// and compares are UTC dates, as upstream's (and as the API server's
// last-used label), whatever the clock's zone: at 21:00 on Nov 26 in
// UTC-5 it is Nov 27 in UTC, so the invalid-since label is 2026-11-27 and
// the cutoff date of a 30-day period is 2026-10-28.
func TestDecideLegacyTokenCleanupUsesUTCDates(t *testing.T) {
	now := time.Date(2026, 11, 26, 21, 0, 0, 0, time.FixedZone("UTC-5", -5*3600))
	const period = 30 * 24 * time.Hour
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"},
		Secrets: []corev1.ObjectReference{{Name: "tok"}}}
	token := func(labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tok", UID: "s-uid",
			CreationTimestamp: metav1.NewTime(now.Add(-2 * period)), Labels: labels,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "sa"}}, Type: corev1.SecretTypeServiceAccountToken}
	}
	decide := func(s *corev1.Secret) []LegacyTokenCleanup {
		return DecideLegacyTokenCleanup(LegacyTokenCleanerState{
			Now: now, Period: period, TrackedSince: "2025-01-01", Secrets: []*corev1.Secret{s},
			Account: func(string, string) *corev1.ServiceAccount { return account },
			Mounted: func(string, string) bool { return false },
		})
	}
	if got := decide(token(nil)); len(got) != 1 || got[0].Kind != LegacyTokenMarkInvalid || got[0].InvalidSince != "2026-11-27" {
		t.Errorf("unlabelled token: %+v, want marked invalid since 2026-11-27", got)
	}
	// Used on 2026-10-27, the day before the UTC cutoff date.
	if got := decide(token(map[string]string{LegacyTokenLastUsedLabel: "2026-10-27"})); len(got) != 1 || got[0].Kind != LegacyTokenMarkInvalid {
		t.Errorf("token last used the day before the cutoff: %+v, want marked invalid", got)
	}
	if got := decide(token(map[string]string{LegacyTokenInvalidSinceLabel: "2026-10-27"})); len(got) != 1 || got[0].Kind != LegacyTokenDelete {
		t.Errorf("token invalid since the day before the cutoff: %+v, want deleted", got)
	}
	if got := decide(token(map[string]string{LegacyTokenInvalidSinceLabel: "2026-10-28"})); len(got) != 0 {
		t.Errorf("token invalid since the cutoff date: %+v, want kept", got)
	}
}
