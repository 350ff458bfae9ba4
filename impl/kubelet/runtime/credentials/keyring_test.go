package credentials

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func dockerConfigJSON(name, json string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(json)},
	}
}

func auth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// users returns the usernames of the credentials Lookup finds, in order.
func users(kr *Keyring, image string) string {
	var out []string
	for _, a := range kr.Lookup(image) {
		out = append(out, a.Username)
	}
	return strings.Join(out, ",")
}

func TestLookupLongestPrefixFirst(t *testing.T) {
	kr, err := FromSecrets([]*v1.Secret{
		dockerConfigJSON("regcred", `{"auths": {
			"registry.example.com": {"auth": "`+auth("host", "p1")+`"},
			"registry.example.com/team": {"username": "team", "password": "p2"},
			"https://registry.example.com/v2/team/app": {"username": "app", "password": "p3"},
			"registry.example.com:5000": {"username": "port", "password": "p4"},
			"*.corp.example": {"username": "glob", "password": "p5"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "p6"}
		}}`),
		{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "ns"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"quay.io": {"auth": "` + auth("quay", "p7") + `", "email": "a@b.c"}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: "ns"}, Type: v1.SecretTypeOpaque,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths": {"quay.io": {"username": "ignored"}}}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for image, want := range map[string]string{
		"registry.example.com/team/app:1.0":                               "app,team,host",
		"registry.example.com/team/app@sha256:" + strings.Repeat("a", 64): "app,team,host",
		"registry.example.com/team/other":                                 "team,host",
		"registry.example.com/teamx/app":                                  "team,host", // a path prefix, as upstream's keyring matches
		"registry.example.com/solo/app":                                   "host",
		"registry.example.com:5000/team/app":                              "port",
		"registry.example.com:6000/app":                                   "",
		"Registry.Example.com/solo/app":                                   "host",
		"a.corp.example/app":                                              "glob",
		"a.b.corp.example/app":                                            "", // a glob covers one DNS label
		"quay.io/org/app:v1":                                              "quay",
		"nginx:1.27":                                                      "hub",
		"library/nginx":                                                   "hub",
		"docker.io/library/nginx":                                         "hub",
		"other.example.com/app":                                           "",
	} {
		if got := users(kr, image); got != want {
			t.Errorf("Lookup(%q) = %q, want %q", image, got, want)
		}
	}
	// No ServerAddress, as upstream's keyring sends none: containerd drops
	// credentials whose ServerAddress does not parse as a URL of the
	// pulled host, which a location without scheme ("registry.example.com")
	// or a glob ("*.corp.example") does not.
	creds := kr.Lookup("registry.example.com/solo/app")
	if len(creds) != 1 || creds[0].Password != "p1" || creds[0].ServerAddress != "" {
		t.Fatalf("credentials from auth: %+v", creds)
	}
	if creds := kr.Lookup("a.corp.example/app"); len(creds) != 1 || creds[0].ServerAddress != "" {
		t.Fatalf("credentials of a glob: %+v", creds)
	}
}

func TestMalformedSecrets(t *testing.T) {
	for name, s := range map[string]*v1.Secret{
		"bad json": dockerConfigJSON("bad", `{"auths": `),
		"bad auth": dockerConfigJSON("bad", `{"auths": {"reg.io": {"auth": "%%%"}}}`),
		"no colon": dockerConfigJSON("bad", `{"auths": {"reg.io": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}}`),
	} {
		if _, err := FromSecrets([]*v1.Secret{s}); err == nil || !strings.Contains(err.Error(), "ns/bad") {
			t.Errorf("%s: error %v does not name the secret", name, err)
		}
	}
	var empty *Keyring
	if got := empty.Lookup("nginx"); got != nil {
		t.Fatalf("nil keyring found %v", got)
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		key, repo string
		want      bool
	}{
		{"reg.io", "reg.io/a/b", true},
		{"reg.io/a", "reg.io/a/b", true},
		{"reg.io/a/b/c", "reg.io/a/b", false},
		{"*.reg.io", "x.reg.io/a", true},
		{"*.reg.io", "reg.io/a", false},
		{"reg.*", "reg.io/a", true},
		{"reg.io:443", "reg.io/a", false},
		{"reg.io", "reg.io:443/a", false},
	} {
		if got := Matches(tc.key, tc.repo); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v", tc.key, tc.repo, got)
		}
	}
}

// TestLookupTracked: each credential names the secret it came from and a
// hash of its contents: equal contents hash alike whatever the secret,
// changed contents do not.
func TestLookupTracked(t *testing.T) {
	a := dockerConfigJSON("a", `{"auths": {"reg.example": {"auth": "`+auth("u", "p1")+`"}}}`)
	a.UID = "uid-a"
	b := dockerConfigJSON("b", `{"auths": {"reg.example": {"username": "u", "password": "p1"}}}`)
	b.UID = "uid-b"
	c := dockerConfigJSON("c", `{"auths": {"reg.example": {"username": "u", "password": "p2"}}}`)
	kr, err := FromSecrets([]*v1.Secret{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	got := kr.LookupTracked("reg.example/app:1")
	if len(got) != 3 {
		t.Fatalf("%d credentials, want 3", len(got))
	}
	for i, want := range []Source{{"uid-a", "ns", "a"}, {"uid-b", "ns", "b"}, {"", "ns", "c"}} {
		if got[i].Source == nil || *got[i].Source != want {
			t.Errorf("credential %d from %+v, want %+v", i, got[i].Source, want)
		}
		if got[i].Hash != HashAuth(got[i].Auth) || len(got[i].Hash) != 64 {
			t.Errorf("credential %d hash %q", i, got[i].Hash)
		}
	}
	if got[0].Hash != got[1].Hash || got[1].Hash == got[2].Hash {
		t.Errorf("hashes %q %q %q: want the first two equal, the third different", got[0].Hash, got[1].Hash, got[2].Hash)
	}
	var added Keyring
	if err := added.Add(DockerConfig{"reg.example": {Username: "u", Password: "p1"}}); err != nil {
		t.Fatal(err)
	}
	if tr := added.LookupTracked("reg.example/app"); len(tr) != 1 || tr[0].Source != nil || tr[0].Hash != got[0].Hash {
		t.Errorf("Add's credential %+v: want no source and the same hash", tr)
	}
}

// nodeCreds is a fixed NodeCredentials recording the pods and
// repositories asked.
type nodeCreds struct {
	creds []Tracked
	asked []string
	pods  []Pod
}

func (n *nodeCreds) LookupTracked(pod Pod, repo string) []Tracked {
	n.asked = append(n.asked, repo)
	n.pods = append(n.pods, pod)
	return n.creds
}

// TestWithNodeAfterSecrets: as upstream's MakeDockerKeyring, the node's
// credentials (credential provider plugins') follow the pod's secrets',
// also for a pod without secrets, and are asked for the image's
// repository (no tag, Docker Hub's host made explicit) and the pod.
func TestWithNodeAfterSecrets(t *testing.T) {
	s := dockerConfigJSON("a", `{"auths": {"reg.example": {"username": "pod", "password": "p"}}}`)
	kr, err := FromSecrets([]*v1.Secret{s})
	if err != nil {
		t.Fatal(err)
	}
	node := &nodeCreds{creds: []Tracked{{Auth: &runtimeapi.AuthConfig{Username: "node"}}}}
	pod := Pod{Namespace: "ns", Name: "web", UID: "uid-1", ServiceAccountName: "puller"}
	got := kr.WithNode(node, pod).LookupTracked("reg.example/app:1")
	if len(got) != 2 || got[0].Auth.Username != "pod" || got[0].Source == nil || got[1].Auth.Username != "node" || got[1].Source != nil {
		t.Fatalf("credentials %+v: want the secret's, then the node's", got)
	}
	var none *Keyring
	got = none.WithNode(node, Pod{}).LookupTracked("nginx")
	if len(got) != 1 || got[0].Auth.Username != "node" {
		t.Fatalf("without secrets: %+v, want the node's", got)
	}
	if want := []string{"reg.example/app", "docker.io/library/nginx"}; !reflect.DeepEqual(node.asked, want) {
		t.Errorf("node asked for %q, want %q", node.asked, want)
	}
	if want := []Pod{pod, {}}; !reflect.DeepEqual(node.pods, want) {
		t.Errorf("node asked for pods %+v, want %+v", node.pods, want)
	}
}

// TestAddFor: credentials a plugin answered for a service account's token
// name the service account, not a secret; Add's name neither.
func TestAddFor(t *testing.T) {
	kr := &Keyring{}
	sa := &ServiceAccount{UID: "u", Namespace: "ns", Name: "puller"}
	if err := kr.AddFor(DockerConfig{"reg.example": {Username: "sa", Password: "p"}}, sa); err != nil {
		t.Fatal(err)
	}
	if err := kr.Add(DockerConfig{"reg.example": {Username: "node", Password: "p"}}); err != nil {
		t.Fatal(err)
	}
	got := kr.LookupTracked("reg.example/app")
	if len(got) != 2 || got[0].ServiceAccount != sa || got[0].Source != nil || got[1].ServiceAccount != nil || got[1].Source != nil || got[0].Hash == "" {
		t.Fatalf("tracked %+v", got)
	}
}
