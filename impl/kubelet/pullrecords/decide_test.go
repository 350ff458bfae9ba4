package pullrecords

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func secretsFn(s ...Secret) func() (PodCredentials, error) {
	return func() (PodCredentials, error) { return PodCredentials{Secrets: s}, nil }
}

func saFn(sa ServiceAccount, s ...Secret) func() (PodCredentials, error) {
	return func() (PodCredentials, error) { return PodCredentials{Secrets: s, ServiceAccount: &sa}, nil }
}

func record(repo string, c Credentials) *Record {
	return &Record{Kind: recordKind, APIVersion: recordAPIVersion, ImageRef: "sha256:aa", CredentialMapping: map[string]Credentials{repo: c}}
}

// TestMustPull covers upstream's MustAttemptImagePull cases for each
// verification policy.
func TestMustPull(t *testing.T) {
	const image, repo = "reg.example/team/app:1", "reg.example/team/app"
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	b := Secret{UID: "ub", Namespace: "ns", Name: "b", CredentialHash: "hb"}
	withA := record(repo, Credentials{KubernetesSecrets: []Secret{a}})
	sa := ServiceAccount{UID: "usa", Namespace: "ns", Name: "puller"}
	withSA := record(repo, Credentials{KubernetesServiceAccounts: []ServiceAccount{sa}})
	askedNot := func() (PodCredentials, error) { t.Fatal("pod secrets asked"); return PodCredentials{}, nil }
	cases := []struct {
		name      string
		policy    Policy
		allowlist []string
		image     string
		rec       *Record
		pulling   bool
		secrets   func() (PodCredentials, error)
		want      Verdict
		wantErr   bool
	}{
		{name: "preloaded image, default policy", policy: NeverVerifyPreloadedImages, secrets: askedNot},
		{name: "preloaded image, AlwaysVerify", policy: AlwaysVerify, secrets: askedNot, want: Verdict{Pull: true}},
		{name: "kubelet-pulled image, NeverVerify", policy: NeverVerify, rec: withA, secrets: secretsFn(), want: Verdict{}},
		{name: "being pulled, no record yet", policy: NeverVerifyPreloadedImages, pulling: true, secrets: askedNot, want: Verdict{Pull: true}},
		{name: "record for other repositories only", policy: NeverVerifyPreloadedImages, rec: record("reg.example/other", Credentials{NodePodsAccessible: true}), secrets: askedNot, want: Verdict{Pull: true}},
		{name: "record without credentials", policy: NeverVerifyPreloadedImages, rec: record(repo, Credentials{}), secrets: askedNot, want: Verdict{Pull: true}},
		{name: "pulled without a pod's credentials", policy: NeverVerifyPreloadedImages, rec: record(repo, Credentials{NodePodsAccessible: true}), secrets: askedNot},
		{name: "pulled without credentials, other tag", policy: AlwaysVerify, image: "reg.example/team/app@sha256:" + string(make([]byte, 0)) + "0000000000000000000000000000000000000000000000000000000000000000", rec: record(repo, Credentials{NodePodsAccessible: true}), secrets: askedNot},
		{name: "the secret that pulled it", policy: NeverVerifyPreloadedImages, rec: withA, secrets: secretsFn(b, a)},
		{name: "a pod without secrets", policy: NeverVerifyPreloadedImages, rec: withA, secrets: secretsFn(), want: Verdict{Pull: true}},
		{name: "another secret", policy: NeverVerifyPreloadedImages, rec: withA, secrets: secretsFn(b), want: Verdict{Pull: true}},
		{name: "another secret with the same contents", policy: NeverVerifyPreloadedImages, rec: withA,
			secrets: secretsFn(Secret{UID: "uc", Namespace: "other", Name: "c", CredentialHash: "ha"}),
			want:    Verdict{Learned: &Secret{UID: "uc", Namespace: "other", Name: "c", CredentialHash: "ha"}}},
		{name: "the same secret, changed since", policy: NeverVerifyPreloadedImages, rec: withA,
			secrets: secretsFn(Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "new"}),
			want:    Verdict{Learned: &Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "new"}}},
		{name: "a secret recreated under the same name", policy: NeverVerifyPreloadedImages, rec: withA,
			secrets: secretsFn(Secret{UID: "ua2", Namespace: "ns", Name: "a", CredentialHash: "new"}), want: Verdict{Pull: true}},
		{name: "pod secrets unreadable", policy: NeverVerifyPreloadedImages, rec: withA,
			secrets: func() (PodCredentials, error) { return PodCredentials{}, errors.New("boom") }, want: Verdict{Pull: true}, wantErr: true},
		{name: "the service account that pulled it", policy: NeverVerifyPreloadedImages, rec: withSA, secrets: saFn(sa)},
		{name: "the service account, and a secret of another pull", policy: NeverVerifyPreloadedImages, rec: withSA, secrets: saFn(sa, b)},
		{name: "no service account", policy: NeverVerifyPreloadedImages, rec: withSA, secrets: secretsFn(a), want: Verdict{Pull: true}},
		{name: "another service account", policy: AlwaysVerify, rec: withSA, secrets: saFn(ServiceAccount{UID: "usb", Namespace: "ns", Name: "builder"}), want: Verdict{Pull: true}},
		{name: "a service account recreated under the same name", policy: NeverVerifyPreloadedImages, rec: withSA,
			secrets: saFn(ServiceAccount{UID: "usa2", Namespace: "ns", Name: "puller"}), want: Verdict{Pull: true}},
		{name: "same name and UID, other namespace", policy: NeverVerifyPreloadedImages, rec: withSA,
			secrets: saFn(ServiceAccount{UID: "usa", Namespace: "other", Name: "puller"}), want: Verdict{Pull: true}},
		{name: "a secret when both pulled it", policy: NeverVerifyPreloadedImages,
			rec: record(repo, Credentials{KubernetesSecrets: []Secret{a}, KubernetesServiceAccounts: []ServiceAccount{sa}}), secrets: secretsFn(a)},
		{name: "allowlisted repository", policy: NeverVerifyAllowlistedImages, allowlist: []string{repo}, rec: withA, secrets: askedNot},
		{name: "allowlisted prefix", policy: NeverVerifyAllowlistedImages, allowlist: []string{"reg.example/*"}, rec: withA, secrets: askedNot},
		{name: "not allowlisted, preloaded", policy: NeverVerifyAllowlistedImages, allowlist: []string{"reg.example/team/ap"}, secrets: askedNot, want: Verdict{Pull: true}},
		{name: "unknown policy verifies", policy: "Sometimes", secrets: askedNot, want: Verdict{Pull: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := image
			if c.image != "" {
				img = c.image
			}
			repo, _ := Repository(img)
			got, err := MustPull(c.policy, c.allowlist, repo, c.rec, c.pulling, c.secrets)
			if (err != nil) != c.wantErr || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("MustPull = %+v, %v; want %+v (error %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}

// TestMustPullLearnLimit: past upstream's limit of secrets in a record, a
// secret matching by hash alone is accepted without being recorded, one
// matching by coordinates alone is not accepted (upstream's behaviour).
func TestMustPullLearnLimit(t *testing.T) {
	var many []Secret
	for i := 0; i < writeWhileMatchingLimit; i++ {
		many = append(many, Secret{UID: "u" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Namespace: "ns", Name: "s", CredentialHash: "h"})
	}
	rec := record("docker.io/library/app", Credentials{KubernetesSecrets: many})
	got, err := MustPull(DefaultPolicy, nil, "docker.io/library/app", rec, false, secretsFn(Secret{UID: "x", Namespace: "o", Name: "x", CredentialHash: "h"}))
	if err != nil || got != (Verdict{}) {
		t.Fatalf("hash match past the limit: %+v, %v", got, err)
	}
	got, _ = MustPull(DefaultPolicy, nil, "docker.io/library/app", rec, false, secretsFn(Secret{UID: many[0].UID, Namespace: "ns", Name: "s", CredentialHash: "changed"}))
	if !got.Pull {
		t.Fatalf("coordinates match past the limit: %+v, want a pull", got)
	}
}

func TestMerge(t *testing.T) {
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	b := Secret{UID: "ub", Namespace: "ns", Name: "b", CredentialHash: "hb"}
	const repo = "reg.example/app"
	r1, changed := Merge(nil, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{b}}, t0)
	if !changed || r1.ImageRef != "sha256:aa" || !reflect.DeepEqual(r1.CredentialMapping[repo].KubernetesSecrets, []Secret{b}) || !r1.LastUpdatedTime.Equal(t0) {
		t.Fatalf("new record %+v", r1)
	}
	r2, changed := Merge(r1, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{a}}, t0.Add(time.Second))
	if !changed || !reflect.DeepEqual(r2.CredentialMapping[repo].KubernetesSecrets, []Secret{a, b}) {
		t.Fatalf("added secret: %+v", r2.CredentialMapping)
	}
	if !reflect.DeepEqual(r1.CredentialMapping[repo].KubernetesSecrets, []Secret{b}) {
		t.Fatalf("Merge modified its input: %+v", r1.CredentialMapping)
	}
	if r3, changed := Merge(r2, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{a}}, t0); changed || r3 != r2 {
		t.Fatalf("merging a known secret changed the record")
	}
	a2 := a
	a2.CredentialHash = "new"
	r4, changed := Merge(r2, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{a2}}, t0)
	if !changed || !reflect.DeepEqual(r4.CredentialMapping[repo].KubernetesSecrets, []Secret{a2, b}) {
		t.Fatalf("updated hash: %+v", r4.CredentialMapping)
	}
	r5, changed := Merge(r4, "sha256:aa", repo, Credentials{NodePodsAccessible: true}, t0)
	if !changed || !reflect.DeepEqual(r5.CredentialMapping[repo], Credentials{NodePodsAccessible: true}) {
		t.Fatalf("node accessible: %+v", r5.CredentialMapping)
	}
	if r6, changed := Merge(r5, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{a}}, t0); changed || r6 != r5 {
		t.Fatalf("a secret after node access changed the record")
	}
	r7, changed := Merge(r5, "sha256:aa", "reg.example/other", Credentials{KubernetesSecrets: []Secret{a}}, t0)
	if !changed || len(r7.CredentialMapping) != 2 || len(r5.CredentialMapping) != 1 {
		t.Fatalf("another repository: %+v (from %+v)", r7.CredentialMapping, r5.CredentialMapping)
	}
	if r8, changed := Merge(nil, "sha256:bb", repo, Credentials{}, t0); !changed || len(r8.CredentialMapping) != 0 {
		t.Fatalf("a record without credentials: %+v", r8)
	}
}

// TestMergeServiceAccounts: as upstream's pulledRecordMergeNewCreds, a
// pull with a service account's credentials adds the service account
// (UID, namespace, name) beside the secrets, sorted by namespace, name
// and UID; a known one changes nothing; node access replaces them all.
func TestMergeServiceAccounts(t *testing.T) {
	const repo = "reg.example/app"
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	x := ServiceAccount{UID: "ux", Namespace: "ns", Name: "x"}
	w := ServiceAccount{UID: "uw", Namespace: "ns", Name: "w"}
	r1, changed := Merge(nil, "sha256:aa", repo, Credentials{KubernetesServiceAccounts: []ServiceAccount{x}}, t0)
	if !changed || !reflect.DeepEqual(r1.CredentialMapping[repo], Credentials{KubernetesServiceAccounts: []ServiceAccount{x}}) {
		t.Fatalf("new record %+v", r1.CredentialMapping)
	}
	r2, changed := Merge(r1, "sha256:aa", repo, Credentials{KubernetesSecrets: []Secret{a}}, t0)
	if !changed || !reflect.DeepEqual(r2.CredentialMapping[repo], Credentials{KubernetesSecrets: []Secret{a}, KubernetesServiceAccounts: []ServiceAccount{x}}) {
		t.Fatalf("a secret beside a service account: %+v", r2.CredentialMapping)
	}
	r3, changed := Merge(r2, "sha256:aa", repo, Credentials{KubernetesServiceAccounts: []ServiceAccount{w}}, t0)
	want := Credentials{KubernetesSecrets: []Secret{a}, KubernetesServiceAccounts: []ServiceAccount{w, x}}
	if !changed || !reflect.DeepEqual(r3.CredentialMapping[repo], want) {
		t.Fatalf("another service account: %+v, want %+v", r3.CredentialMapping[repo], want)
	}
	if !reflect.DeepEqual(r2.CredentialMapping[repo].KubernetesServiceAccounts, []ServiceAccount{x}) {
		t.Fatalf("Merge modified its input: %+v", r2.CredentialMapping)
	}
	if r4, changed := Merge(r3, "sha256:aa", repo, Credentials{KubernetesServiceAccounts: []ServiceAccount{x}}, t0); changed || r4 != r3 {
		t.Fatalf("merging a known service account changed the record")
	}
	// Recreated under the same name: another service account.
	x2 := ServiceAccount{UID: "ux2", Namespace: "ns", Name: "x"}
	if r5, changed := Merge(r3, "sha256:aa", repo, Credentials{KubernetesServiceAccounts: []ServiceAccount{x2}}, t0); !changed || len(r5.CredentialMapping[repo].KubernetesServiceAccounts) != 3 {
		t.Fatalf("a recreated service account: %+v", r5.CredentialMapping[repo])
	}
	r6, changed := Merge(r3, "sha256:aa", repo, Credentials{NodePodsAccessible: true}, t0)
	if !changed || !reflect.DeepEqual(r6.CredentialMapping[repo], Credentials{NodePodsAccessible: true}) {
		t.Fatalf("node access: %+v", r6.CredentialMapping[repo])
	}
}
