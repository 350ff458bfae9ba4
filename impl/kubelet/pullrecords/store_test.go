package pullrecords

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, func() time.Time { return t0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreSurvivesRestart: records and a pull left unfinished are read
// back by a store opened on the same directory, in upstream's
// image_manager/pulled and image_manager/pulling layout.
func TestStoreSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image_manager")
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	s := open(t, dir)
	if err := s.PullStarted("reg.example/private:1", true); err != nil {
		t.Fatal(err)
	}
	s.Pulled("reg.example/private:1", "sha256:11", Credentials{KubernetesSecrets: []Secret{a}})
	if err := s.PullStarted("nginx:1.27", false); err != nil {
		t.Fatal(err)
	}
	s.Pulled("nginx:1.27", "sha256:22", Credentials{})
	if err := s.PullStarted("reg.example/crashed:1", true); err != nil {
		t.Fatal(err)
	}
	// The kubelet stops here, mid-pull.
	for _, f := range []string{"pulled/" + fileName("sha256:11"), "pulled/" + fileName("sha256:22"), "pulling/" + fileName("reg.example/crashed:1")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pulling", fileName("reg.example/private:1"))); !os.IsNotExist(err) {
		t.Errorf("the finished pull's intent is left: %v", err)
	}

	s2 := open(t, dir)
	must := func(image, ref string, secrets ...Secret) bool {
		t.Helper()
		pull, err := s2.MustPull(DefaultPolicy, nil, image, ref, secretsFn(secrets...))
		if err != nil {
			t.Fatal(err)
		}
		return pull
	}
	if must("reg.example/private:1", "sha256:11", a) || !must("reg.example/private:1", "sha256:11", Secret{UID: "ub", Namespace: "ns", Name: "b", CredentialHash: "hb"}) ||
		!must("reg.example/private:1", "sha256:11") {
		t.Errorf("private image after a restart: the secret that pulled it must not pull, another secret or none must")
	}
	if must("nginx:1.27", "sha256:22") {
		t.Errorf("an image pulled without credentials must be usable by any pod after a restart")
	}
	if !must("reg.example/crashed:1", "sha256:33") {
		t.Errorf("an image whose pull was interrupted must be verified")
	}
	if must("busybox:1.36", "sha256:44") {
		t.Errorf("a preloaded image must not be verified")
	}
	// The interrupted image's next pull ends its intent.
	if err := s2.PullStarted("reg.example/crashed:1", false); err != nil {
		t.Fatal(err)
	}
	s2.Pulled("reg.example/crashed:1", "sha256:33", Credentials{})
	if _, err := os.Stat(filepath.Join(dir, "pulling", fileName("reg.example/crashed:1"))); !os.IsNotExist(err) {
		t.Errorf("the interrupted pull's intent is left after its next pull: %v", err)
	}
	if must("reg.example/crashed:1", "sha256:33") {
		t.Errorf("pulled without credentials since: any pod may use it")
	}
}

// TestStoreLearnsMatchedSecret: a secret matching by hash alone is
// recorded, and written.
func TestStoreLearnsMatchedSecret(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	c := Secret{UID: "uc", Namespace: "other", Name: "c", CredentialHash: "ha"}
	s.Pulled("reg.example/app:1", "sha256:11", Credentials{KubernetesSecrets: []Secret{a}})
	if pull, err := s.MustPull(DefaultPolicy, nil, "reg.example/app:1", "sha256:11", secretsFn(c)); pull || err != nil {
		t.Fatalf("same contents: pull %v, %v", pull, err)
	}
	got := open(t, dir).Record("sha256:11").CredentialMapping["reg.example/app"].KubernetesSecrets
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Fatalf("recorded secrets %+v, want %+v and %+v", got, a, c)
	}
}

// TestStoreCommonPathAllocatesNothing: the decision for a pod without
// image pull secrets and a preloaded image, or one pulled without
// credentials, allocates nothing (every container start of the 1,000-node
// benchmark asks it).
func TestStoreCommonPathAllocatesNothing(t *testing.T) {
	s := open(t, "")
	s.Pulled("nginx:1.27", "sha256:22", Credentials{})
	noSecrets := func() (PodCredentials, error) { return PodCredentials{}, nil }
	allocs := testing.AllocsPerRun(100, func() {
		if pull, _ := s.MustPull(DefaultPolicy, nil, "busybox:1.36", "sha256:44", noSecrets); pull {
			t.Fatal("preloaded: pull")
		}
	})
	if allocs != 0 {
		t.Errorf("preloaded image: %v allocations", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if pull, _ := s.MustPull(DefaultPolicy, nil, "nginx:1.27", "sha256:22", noSecrets); pull {
			t.Fatal("node-accessible: pull")
		}
	})
	if allocs != 0 {
		t.Errorf("image pulled without credentials: %v allocations", allocs)
	}
	// Pulled again without credentials (imagePullPolicy Always): nothing
	// to write, no intent file to remove.
	d := open(t, t.TempDir())
	d.Pulled("nginx:1.27", "sha256:22", Credentials{})
	allocs = testing.AllocsPerRun(100, func() {
		if err := d.PullStarted("nginx:1.27", false); err != nil {
			t.Fatal(err)
		}
		d.Pulled("nginx:1.27", "sha256:22", Credentials{})
	})
	if allocs != 0 {
		t.Errorf("a pull without credentials of a recorded image: %v allocations", allocs)
	}
}

// TestStoreServiceAccountPull: a pull with a service account's
// credentials is recorded as that service account (not as one any pod
// may use), in upstream's kubernetesServiceAccounts field, and read back
// after a restart: the same service account uses the image, another one
// pulls it again.
func TestStoreServiceAccountPull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image_manager")
	sa := ServiceAccount{UID: "usa", Namespace: "ns", Name: "puller"}
	s := open(t, dir)
	if err := s.PullStarted("reg.example/app:1", true); err != nil {
		t.Fatal(err)
	}
	s.Pulled("reg.example/app:1", "sha256:11", Credentials{KubernetesServiceAccounts: []ServiceAccount{sa}})
	data, err := os.ReadFile(filepath.Join(dir, "pulled", fileName("sha256:11")))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"credentialMapping":{"reg.example/app":{"kubernetesServiceAccounts":[{"uid":"usa","namespace":"ns","name":"puller"}]}}`; !strings.Contains(string(data), want) {
		t.Fatalf("record %s, want it to hold %s", data, want)
	}
	s2 := open(t, dir)
	must := func(c PodCredentials) bool {
		t.Helper()
		pull, err := s2.MustPull(DefaultPolicy, nil, "reg.example/app:2", "sha256:11", func() (PodCredentials, error) { return c, nil })
		if err != nil {
			t.Fatal(err)
		}
		return pull
	}
	other := ServiceAccount{UID: "uo", Namespace: "ns", Name: "other"}
	if must(PodCredentials{ServiceAccount: &sa}) || !must(PodCredentials{ServiceAccount: &other}) || !must(PodCredentials{}) {
		t.Fatal("the service account that pulled it must not pull; another one, or none, must")
	}
}
