package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestTokenFile(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader(
		"tok1,alice,uid-a,\"dev,ops\"\n" +
			"tok2,bob,uid-b\n" +
			",nobody,uid-n\n" +
			"tok1x,carol,uid-c,,extra\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token  string
		want   *request.User
		wantOK bool
	}{
		{"tok1", &request.User{Name: "alice", UID: "uid-a", Groups: []string{"dev", "ops"}}, true},
		{"tok2", &request.User{Name: "bob", UID: "uid-b", Groups: nil}, true},
		{"tok1x", &request.User{Name: "carol", UID: "uid-c"}, true},
		{"", nil, false},
		{"tok3", nil, false},
	}
	for _, tc := range cases {
		u, ok, err := tf.AuthenticateToken(context.Background(), tc.token)
		if err != nil || ok != tc.wantOK || !reflect.DeepEqual(u, tc.want) {
			t.Errorf("token %q: got %+v %v %v, want %+v %v", tc.token, u, ok, err, tc.want, tc.wantOK)
		}
	}
	if _, err := ParseTokenFile(strings.NewReader("tok,user\n")); err == nil || !strings.Contains(err.Error(), "at least 3 columns") {
		t.Fatalf("two columns: err %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	tf, _ := ParseTokenFile(strings.NewReader("good,alice,1\n"))
	b := BearerToken{Tokens: []TokenAuthenticator{tf}}
	cases := []struct {
		header  string
		ok      bool
		wantErr bool
	}{
		{"", false, false},
		{"Basic Zm9vOmJhcg==", false, false},
		{"Bearer good", true, false},
		{"bearer good", true, false},
		{"Bearer ", false, false},
		{"Bearer bad", false, true},
	}
	for _, tc := range cases {
		r, _ := http.NewRequest(http.MethodGet, "/api", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		u, ok, err := b.Authenticate(r)
		if ok != tc.ok || (err != nil) != tc.wantErr {
			t.Errorf("%q: ok %v err %v, want ok %v err %v", tc.header, ok, err, tc.ok, tc.wantErr)
		}
		if ok && u.Name != "alice" {
			t.Errorf("%q: user %v", tc.header, u)
		}
	}
}

func TestWithAuthenticatedGroup(t *testing.T) {
	u := WithAuthenticatedGroup(&request.User{Name: "a", Groups: []string{"g"}})
	if !reflect.DeepEqual(u.Groups, []string{"g", AuthenticatedGroup}) {
		t.Fatalf("groups %v", u.Groups)
	}
	if u := WithAuthenticatedGroup(Anonymous()); !reflect.DeepEqual(u.Groups, []string{"system:unauthenticated"}) {
		t.Fatalf("anonymous groups %v", u.Groups)
	}
}

// objects is an in-memory ObjectGetter.
type objects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
	nodes   map[string]*corev1.Node
}

func newObjects() *objects {
	return &objects{sas: map[string]*corev1.ServiceAccount{}, pods: map[string]*corev1.Pod{},
		secrets: map[string]*corev1.Secret{}, nodes: map[string]*corev1.Node{}}
}

func get[T any](m map[string]*T, res, key string) (*T, error) {
	if v, ok := m[key]; ok {
		return v, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: res}, key)
}

func (o *objects) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return get(o.sas, "serviceaccounts", ns+"/"+name)
}
func (o *objects) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return get(o.pods, "pods", ns+"/"+name)
}
func (o *objects) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return get(o.secrets, "secrets", ns+"/"+name)
}
func (o *objects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return get(o.nodes, "nodes", name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func TestServiceAccountTokens(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, key := range []crypto.Signer{rsaKey, ecKey} {
		alg, _, _ := jwsAlgorithm(key.Public())
		t.Run(alg, func(t *testing.T) { testServiceAccountTokens(t, key, otherKey) })
	}
}

func testServiceAccountTokens(t *testing.T, key, otherKey crypto.Signer) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	objs := newObjects()
	sa := &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}
	pod := &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-uid"), Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
	node := &corev1.Node{ObjectMeta: meta("", "n1", "node-uid")}
	objs.sas["ns/builder"], objs.pods["ns/web"], objs.nodes["n1"] = sa, pod, node
	issuer := "https://kubernetes.default.svc"
	tokens := &ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: key, Objects: objs, Now: clock}
	foreign := &ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: otherKey, Objects: objs, Now: clock}

	issue := func(s *ServiceAccountTokens, r BoundTokenRequest) string {
		t.Helper()
		tok, exp, err := s.IssueBound(r)
		if err != nil {
			t.Fatal(err)
		}
		if !exp.Equal(now.Add(r.Expiration)) {
			t.Fatalf("expiry %v", exp)
		}
		return tok
	}
	plain := issue(tokens, BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Expiration: time.Hour})
	podBound := issue(tokens, BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Expiration: time.Hour, Pod: pod, Node: node})
	otherAud := issue(tokens, BoundTokenRequest{ServiceAccount: sa, Audiences: []string{"vault"}, Expiration: time.Hour})
	shortLived := issue(tokens, BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Expiration: time.Minute})
	wrongKey := issue(foreign, BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Expiration: time.Hour})
	foreignIssuer := issue(&ServiceAccountTokens{Issuers: []string{"https://elsewhere"}, SigningKey: key, Objects: objs, Now: clock},
		BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Expiration: time.Hour})
	legacy, err := tokens.IssueLegacy(sa, "builder-token")
	if err != nil {
		t.Fatal(err)
	}
	objs.secrets["ns/builder-token"] = &corev1.Secret{ObjectMeta: meta("ns", "builder-token", "sec-uid"),
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte(legacy)}}
	tampered := plain[:len(plain)-4] + "AAAA"

	user := ServiceAccountUsername("ns", "builder")
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:ns"}
	cases := []struct {
		name    string
		token   string
		setup   func()
		ok      bool
		wantErr string
		extra   map[string][]string
	}{
		{name: "bound", token: plain, ok: true},
		{name: "pod-bound", token: podBound, ok: true, extra: map[string][]string{
			ExtraPodName: {"web"}, ExtraPodUID: {"pod-uid"}, ExtraNodeName: {"n1"}, ExtraNodeUID: {"node-uid"}}},
		{name: "legacy", token: legacy, ok: true},
		{name: "not a JWT", token: "abc.def", ok: false},
		{name: "other issuer is not ours", token: foreignIssuer, ok: false},
		{name: "wrong audience", token: otherAud, wantErr: "token audiences"},
		{name: "signed by another key", token: wrongKey, wantErr: "invalid token signature"},
		{name: "tampered signature", token: tampered, wantErr: "invalid token signature"},
		{name: "expired", token: shortLived, setup: func() { now = now.Add(3 * time.Minute) }, wantErr: "expired"},
		{name: "pod deleted", token: podBound, setup: func() { delete(objs.pods, "ns/web") }, wantErr: "pod ns/web has been deleted"},
		{name: "pod recreated", token: podBound, setup: func() {
			objs.pods["ns/web"] = &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-uid-2")}
		}, wantErr: "does not match claim"},
		{name: "pod deleting past grace", token: podBound, setup: func() {
			ts := metav1.NewTime(now.Add(-2 * time.Minute))
			p := pod.DeepCopy()
			p.DeletionTimestamp = &ts
			objs.pods["ns/web"] = p
		}, wantErr: "invalidated"},
		{name: "pod deleting within grace", token: podBound, setup: func() {
			ts := metav1.NewTime(now.Add(30 * time.Second))
			p := pod.DeepCopy()
			p.DeletionTimestamp = &ts
			objs.pods["ns/web"] = p
		}, ok: true, extra: map[string][]string{
			ExtraPodName: {"web"}, ExtraPodUID: {"pod-uid"}, ExtraNodeName: {"n1"}, ExtraNodeUID: {"node-uid"}}},
		{name: "legacy secret rotated", token: legacy, setup: func() {
			objs.secrets["ns/builder-token"] = &corev1.Secret{ObjectMeta: meta("ns", "builder-token", "sec-uid"), Data: map[string][]byte{"token": []byte("other")}}
		}, wantErr: "does not match"},
		{name: "legacy secret deleted", token: legacy, setup: func() { delete(objs.secrets, "ns/builder-token") }, wantErr: "Token has been invalidated"},
		{name: "service account deleted", token: plain, setup: func() { delete(objs.sas, "ns/builder") }, wantErr: "service account ns/builder has been deleted"},
		{name: "service account recreated", token: plain, setup: func() {
			objs.sas["ns/builder"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid-2")}
		}, wantErr: "does not match claim"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			saved := *objs
			savedPods, savedSAs, savedSecrets := clone(objs.pods), clone(objs.sas), clone(objs.secrets)
			savedNow := now
			defer func() {
				*objs = saved
				objs.pods, objs.sas, objs.secrets = savedPods, savedSAs, savedSecrets
				now = savedNow
			}()
			if tc.setup != nil {
				tc.setup()
			}
			u, ok, err := tokens.AuthenticateToken(context.Background(), tc.token)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok {
				t.Fatalf("ok %v err %v, want ok %v", ok, err, tc.ok)
			}
			if !ok {
				return
			}
			if u.Name != user || u.UID != "sa-uid" || !reflect.DeepEqual(u.Groups, groups) {
				t.Fatalf("user %+v", u)
			}
			for k, v := range tc.extra {
				if !reflect.DeepEqual(u.Extra[k], v) {
					t.Errorf("extra %s = %v, want %v", k, u.Extra[k], v)
				}
			}
		})
	}
}

func clone[T any](m map[string]*T) map[string]*T {
	out := make(map[string]*T, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestSplitServiceAccountUsername(t *testing.T) {
	for in, want := range map[string][2]string{
		"system:serviceaccount:ns:name": {"ns", "name"},
		"system:serviceaccount:ns":      {},
		"system:serviceaccount::name":   {},
		"system:serviceaccount:ns:a:b":  {},
		"alice":                         {},
	} {
		ns, name, ok := SplitServiceAccountUsername(in)
		if ok != (want[0] != "") || ns != want[0] || name != want[1] {
			t.Errorf("%q: %q %q %v", in, ns, name, ok)
		}
	}
}

func TestBootstrapTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	objs := newObjects()
	secret := func(id, sec string, mutate func(*corev1.Secret)) {
		s := &corev1.Secret{ObjectMeta: meta("kube-system", "bootstrap-token-"+id, "u-"+id), Type: SecretTypeBootstrapToken,
			Data: map[string][]byte{"token-id": []byte(id), "token-secret": []byte(sec), "usage-bootstrap-authentication": []byte("true")}}
		if mutate != nil {
			mutate(s)
		}
		objs.secrets["kube-system/"+s.Name] = s
	}
	secret("abcdef", "0123456789abcdef", func(s *corev1.Secret) {
		s.Data["auth-extra-groups"] = []byte("system:bootstrappers:kubeadm:default-node-token")
		s.Data["expiration"] = []byte(now.Add(time.Hour).Format(time.RFC3339))
	})
	secret("expire", "0123456789abcdef", func(s *corev1.Secret) { s.Data["expiration"] = []byte(now.Add(-time.Hour).Format(time.RFC3339)) })
	secret("nouse0", "0123456789abcdef", func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") })
	secret("badgrp", "0123456789abcdef", func(s *corev1.Secret) { s.Data["auth-extra-groups"] = []byte("system:masters") })
	secret("wrongt", "0123456789abcdef", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })
	b := &BootstrapTokens{Secrets: objs, Now: func() time.Time { return now }}
	cases := []struct {
		token   string
		ok      bool
		wantErr string
	}{
		{"abcdef.0123456789abcdef", true, ""},
		{"abcdef.0123456789abcdee", false, "does not match"},
		{"zzzzzz.0123456789abcdef", false, "not found"},
		{"expire.0123456789abcdef", false, "expired"},
		{"nouse0.0123456789abcdef", false, "usage-bootstrap-authentication"},
		{"badgrp.0123456789abcdef", false, "auth-extra-groups"},
		{"wrongt.0123456789abcdef", false, "type"},
		{"ABCDEF.0123456789abcdef", false, ""},
		{"some-other-token", false, ""},
	}
	for _, tc := range cases {
		u, ok, err := b.AuthenticateToken(context.Background(), tc.token)
		if ok != tc.ok || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: ok %v err %v, want ok %v err %q", tc.token, ok, err, tc.ok, tc.wantErr)
			continue
		}
		if ok {
			want := &request.User{Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"}}
			if !reflect.DeepEqual(u, want) {
				t.Errorf("user %+v, want %+v", u, want)
			}
		}
	}
}
