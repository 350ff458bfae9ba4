package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// meetingObjects serves a token request's reads; its service account read
// answers only once the pod read has started, so a token request that
// reads them one after the other never gets its service account (until
// the test gives up on it).
type meetingObjects struct {
	sa       *corev1.ServiceAccount
	saErr    error
	pod      *corev1.Pod
	podStart chan struct{} // closed when the pod read starts
	podReads int
}

func (m *meetingObjects) GetServiceAccount(ctx context.Context, _, _ string) (*corev1.ServiceAccount, error) {
	select {
	case <-m.podStart:
		return m.sa, m.saErr
	case <-time.After(10 * time.Second):
		return nil, errors.New("the pod was not read while the service account was")
	}
}

func (m *meetingObjects) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	m.podReads++
	close(m.podStart)
	return m.pod, nil
}

func (m *meetingObjects) GetSecret(context.Context, string, string) (*corev1.Secret, error) {
	return nil, errors.New("no secrets")
}

func (m *meetingObjects) GetNode(context.Context, string) (*corev1.Node, error) {
	return nil, errors.New("no nodes")
}

func (m *meetingObjects) GetCachedNodeRef(_ context.Context, name string) (*corev1.Node, error) {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-uid"}}, nil
}

func tokenTestServer(t *testing.T) *Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sa := &ServiceAccountConfig{Issuers: []string{"https://kubernetes.default.svc"}, SigningKey: key}
	return &Server{cfg: Config{ServiceAccounts: sa}, saTokens: &auth.ServiceAccountTokens{Issuers: sa.Issuers, SigningKey: key}}
}

// A pod-bound token request reads the service account and the pod at
// once (both quorum reads: one wait for etcd instead of two), and answers
// as before: the token, bound to the pod and its node; or, the service
// account missing, its NotFound.
func TestTokenRequestReadsServiceAccountAndPodAtOnce(t *testing.T) {
	s := tokenTestServer(t)
	req := func() *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{"https://kubernetes.default.svc"},
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "pod-uid"},
		}}
	}
	objects := &meetingObjects{
		sa:       &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns", UID: "sa-uid"}},
		pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "node-1"}},
		podStart: make(chan struct{}),
	}
	out, err := s.createToken(context.Background(), objects, "ns", "default", req(), nil)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	if out.Status.Token == "" || out.Spec.BoundObjectRef.UID != "pod-uid" || objects.podReads != 1 {
		t.Fatalf("token %q bound to %+v after %d pod reads", out.Status.Token, out.Spec.BoundObjectRef, objects.podReads)
	}

	missing := &meetingObjects{
		saErr:    apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, "default"),
		pod:      objects.pod,
		podStart: make(chan struct{}),
	}
	if _, err := s.createToken(context.Background(), missing, "ns", "default", req(), nil); !apierrors.IsNotFound(err) {
		t.Fatalf("token request for a missing service account: %v, want NotFound", err)
	}
}
