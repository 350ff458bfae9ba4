package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestKubeletGetsExtendedProjectedToken: through the whole pipeline (the
// ServiceAccount admission plugin's kube-api-access volume asking for
// 3607 s, NodeRestriction, the kubelet's TokenRequest), the token a pod's
// container reads is an extended one, as on a kube-apiserver with
// --service-account-extend-token-expiration: valid one year, with a
// warnafter 3607 s after issue; the API server accepts it as the pod's
// service account.
func TestKubeletGetsExtendedProjectedToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, cs, _ := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 1})
	root, _ := c.KubeletRootDir()
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var token []byte
	deadline := time.Now().Add(time.Minute)
	for token == nil {
		matches, _ := filepath.Glob(filepath.Join(root, "root", "pods", string(pod.UID), "volumes", "kubernetes.io~projected", "kube-api-access-*", "token"))
		if len(matches) == 1 {
			if b, err := os.ReadFile(matches[0]); err == nil && len(b) > 0 {
				token = b
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no projected token for the pod after a minute (%v)", matches)
		}
		time.Sleep(50 * time.Millisecond)
	}
	parts := strings.Split(string(token), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is no JWT", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		IssuedAt   int64 `json:"iat"`
		Expiry     int64 `json:"exp"`
		Kubernetes struct {
			WarnAfter int64 `json:"warnafter"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if exp, warn := claims.Expiry-claims.IssuedAt, claims.Kubernetes.WarnAfter-claims.IssuedAt; exp != 365*24*60*60 || warn != 3607 {
		t.Errorf("projected token: exp %d s and warnafter %d s after issue, want one year and 3607 s", exp, warn)
	}
	cfg := rest.AnonymousClientConfig(c.AdminConfig)
	cfg.BearerToken = string(token)
	r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username != "system:serviceaccount:default:default" {
		t.Fatalf("the projected token authenticates as %+v (%v), want the pod's service account", r, err)
	}
}
