package serviceaccount

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecideLegacyTokenCleanup(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const period = 30 * 24 * time.Hour
	old := metav1.NewTime(now.Add(-period - time.Hour))
	recent := metav1.NewTime(now.Add(-period + time.Hour))
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"},
		Secrets: []corev1.ObjectReference{{Name: "tok"}}}
	token := func(mut func(s *corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tok", UID: "s-uid", CreationTimestamp: old,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "sa", corev1.ServiceAccountUIDKey: "sa-uid"}},
			Type: corev1.SecretTypeServiceAccountToken}
		if mut != nil {
			mut(s)
		}
		return s
	}
	label := func(k, v string) func(*corev1.Secret) {
		return func(s *corev1.Secret) { s.Labels = map[string]string{k: v} }
	}
	const (
		today       = "2026-11-26"
		beforeCut   = "2026-10-26" // the cutoff date is 2026-10-27
		cutoffDate  = "2026-10-27"
		longTracked = "2025-01-01"
	)
	for _, tc := range []struct {
		name     string
		tracked  string
		secret   *corev1.Secret
		accounts []*corev1.ServiceAccount
		mounted  bool
		want     LegacyTokenCleanupKind // 0: nothing
	}{
		{name: "unused auto-generated token is marked", tracked: longTracked, secret: token(nil), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenMarkInvalid},
		{name: "no tracking ConfigMap", tracked: "", secret: token(nil), accounts: []*corev1.ServiceAccount{account}},
		{name: "malformed tracking date", tracked: "yesterday", secret: token(nil), accounts: []*corev1.ServiceAccount{account}},
		{name: "tracked for less than a period after its first day", tracked: now.Add(-period).Format("2006-01-02"), secret: token(nil), accounts: []*corev1.ServiceAccount{account}},
		{name: "tracked for a period after its first day", tracked: now.Add(-period - 24*time.Hour).Format("2006-01-02"), secret: token(nil), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenMarkInvalid},
		{name: "created within the period", tracked: longTracked, secret: token(func(s *corev1.Secret) { s.CreationTimestamp = recent }), accounts: []*corev1.ServiceAccount{account}},
		{name: "being deleted", tracked: longTracked, secret: token(func(s *corev1.Secret) { ts := metav1.NewTime(now); s.DeletionTimestamp = &ts }), accounts: []*corev1.ServiceAccount{account}},
		{name: "not a token secret", tracked: longTracked, secret: token(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), accounts: []*corev1.ServiceAccount{account}},
		{name: "used on the cutoff date", tracked: longTracked, secret: token(label(LegacyTokenLastUsedLabel, cutoffDate)), accounts: []*corev1.ServiceAccount{account}},
		{name: "used before the cutoff date", tracked: longTracked, secret: token(label(LegacyTokenLastUsedLabel, beforeCut)), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenMarkInvalid},
		{name: "malformed last-used label", tracked: longTracked, secret: token(label(LegacyTokenLastUsedLabel, "2026/01/01")), accounts: []*corev1.ServiceAccount{account}},
		{name: "manual token (not in .secrets)", tracked: longTracked, secret: token(nil), accounts: []*corev1.ServiceAccount{{ObjectMeta: account.ObjectMeta}}},
		{name: "account gone", tracked: longTracked, secret: token(nil)},
		{name: "account recreated under another uid", tracked: longTracked, secret: token(func(s *corev1.Secret) { s.Annotations[corev1.ServiceAccountUIDKey] = "other" }), accounts: []*corev1.ServiceAccount{account}},
		{name: "no uid annotation", tracked: longTracked, secret: token(func(s *corev1.Secret) { delete(s.Annotations, corev1.ServiceAccountUIDKey) }), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenMarkInvalid},
		{name: "no account annotation", tracked: longTracked, secret: token(func(s *corev1.Secret) { s.Annotations = nil }), accounts: []*corev1.ServiceAccount{account}},
		{name: "mounted by a pod", tracked: longTracked, secret: token(nil), accounts: []*corev1.ServiceAccount{account}, mounted: true},
		{name: "malformed invalid-since is rewritten", tracked: longTracked, secret: token(label(LegacyTokenInvalidSinceLabel, "soon")), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenMarkInvalid},
		{name: "invalid since today: kept", tracked: longTracked, secret: token(label(LegacyTokenInvalidSinceLabel, today)), accounts: []*corev1.ServiceAccount{account}},
		{name: "invalid since the cutoff date: kept", tracked: longTracked, secret: token(label(LegacyTokenInvalidSinceLabel, cutoffDate)), accounts: []*corev1.ServiceAccount{account}},
		{name: "invalid since before the cutoff: deleted", tracked: longTracked, secret: token(label(LegacyTokenInvalidSinceLabel, beforeCut)), accounts: []*corev1.ServiceAccount{account}, want: LegacyTokenDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideLegacyTokenCleanup(LegacyTokenCleanerState{
				Now: now, Period: period, TrackedSince: tc.tracked, Secrets: []*corev1.Secret{tc.secret},
				Account: func(namespace, name string) *corev1.ServiceAccount {
					for _, sa := range tc.accounts {
						if sa.Namespace == namespace && sa.Name == name {
							return sa
						}
					}
					return nil
				},
				Mounted: func(namespace, name string) bool { return tc.mounted && namespace == "ns" && name == "tok" },
			})
			switch {
			case tc.want == 0 && len(got) != 0:
				t.Fatalf("got %+v, want nothing", got)
			case tc.want != 0 && (len(got) != 1 || got[0].Kind != tc.want || got[0].Secret != tc.secret):
				t.Fatalf("got %+v, want one action %v", got, tc.want)
			case tc.want == LegacyTokenMarkInvalid && got[0].InvalidSince != today:
				t.Fatalf("invalid-since %q, want %q", got[0].InvalidSince, today)
			}
		})
	}
}

func TestPodSecretNames(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}}}}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"}}}},
		},
		InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-from"}}}}}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "k"}}}}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "eph"}}}}}}},
	}}
	seen := map[string]bool{}
	PodSecretNames(pod, func(n string) { seen[n] = true })
	for _, want := range []string{"pull", "vol", "proj", "csi", "init-from", "env", "eph"} {
		if !seen[want] {
			t.Errorf("%s not visited (visited %v)", want, seen)
		}
	}
	if len(seen) != 7 {
		t.Errorf("visited %v", seen)
	}
}
