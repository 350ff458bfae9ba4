package kubelet

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/keyutil"
)

// bootstrapRequestOf is the CertificateSigningRequest a bootstrap of node
// with key creates (its creation refused, so it asks once).
func bootstrapRequestOf(t *testing.T, key crypto.Signer, node string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	client := fake.NewClientset()
	var created *certificatesv1.CertificateSigningRequest
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
		return true, nil, errors.New("refused by the test")
	})
	if _, err := requestClientCertificate(context.Background(), client, key, node); err == nil {
		t.Fatal("bootstrap request succeeded though its creation was refused")
	}
	if created == nil {
		t.Fatal("no CertificateSigningRequest created")
	}
	return created
}

// TestBootstrapRequestUsages: the bootstrap request asks for upstream
// 1.37's usages, which depend on the key: digital signature and client
// auth for the ECDSA key a kubelet makes, key encipherment after them for
// an RSA key (one reused from cert-dir's pair or kubelet-client.key.tmp).
// Before, key encipherment was never asked for.
func TestBootstrapRequestUsages(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		want []certificatesv1.KeyUsage
	}{
		{"ECDSA P-256", ecKey, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
		{"RSA", rsaKey, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageKeyEncipherment}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bootstrapRequestOf(t, tc.key, "n1")
			if !slices.Equal(got.Spec.Usages, tc.want) {
				t.Errorf("usages %q, want %q", got.Spec.Usages, tc.want)
			}
			if got.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
				t.Errorf("signer %q", got.Spec.SignerName)
			}
		})
	}
}

// Fixed keys and the names upstream 1.37's bootstrap (digestedName in
// pkg/kubelet/certificate/bootstrap/bootstrap.go, v1.37.2) gives their
// request for node n1, computed with upstream's function.
const (
	goldenECKeyPEM = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIACg5W8F1JXZH2mS7gmz05KQ1UL65xRRgkm8gjeNq6g4oAoGCCqGSM49
AwEHoUQDQgAEgSkYCleqWh+QIahYz8+CTDlv+dA4BHb7SYmu+RAtMUfloRck4ASc
c1ydolO4QJV+V32NPB1m0IhgPZjga7dOXg==
-----END EC PRIVATE KEY-----
`
	goldenECName    = "node-csr-8eo0JkZluGL7W2tZ7fYehj8BmbsAVhl6CuiuIOVspRQ"
	goldenRSAKeyPEM = `-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEAs+GBrD/pJAZcPG3yUo0ylxEHDOeAxyLJTrOmkGGZ8Oo+/A65
+6kUUno0DsN4H7+VYELF8B6y0DWwKv6TgYF0Ix0GGymjAHZuI+Q7T4xldDoiPLAL
2CYGQLFqbO8jKCgSJCBZmII2Gmjn3z9tlOYmggfaBA4h17uR9LmJrnb2tHr2GBp0
7ZZg5YfhoMMY5wYKwGIRGwkNSe6SeNoC2R1XzUspxLtgvknnLK2aHjERR0M+O9vo
JFx53guaFqR6X2X0fQ/xkqFOOEZ1Necqf/PumFwRruByKC48tQbT+qJ+r6uT4Fhy
cVMXOb5arhosot0LS3haL3vMV8tS8dFbkgb3VwIDAQABAoIBAE7ux44kRVPPjq3d
uRXMa8SqbiOVeobnltp4LsDwczKqN5U3iRkLaqV+hlVsJMwZr5yb8GubrO98f59+
MpADlEjMNZ+5t5M+ZLpPLk+L1gEYeWmT/r6MgPXmZEME9LJsUvmTUH2BtegE3Kq0
FIvgKkmo1FwvL16RKkzvFaF/BmbPSOS/4D8lbbUr9SkVCxwm9fkX37G2ClWnf+q7
DAbL3esSBTyAa4tYYVN+6Jd612dSbpxITdB8DJHqhftF2c3Psx/BjPynGDLVUSPu
/bN9xnJBxSsSX9ozK/sMY+O33ZRCprDDw3Wa130ieFsSK7SdSKpEhsD2YJInvjKp
tg/2ghECgYEAwjNhmcpN5+2ecdOLzjmYxYNG7HdExOiHoCJmq0sS2N3O5FwjXIkr
wTytq8UW/PPeYFTiwISicXRTw/2M0s/CktlAtPBxooKa4mxprPtSR1kHHK8eBTYl
KF2EMR1Z3+YY95fC5iMYQp+Pxa7kvPB7hr8jJOIFFCPblZfmNjACYhMCgYEA7R+O
ffY0+EcR/Z3x+uNjrFJmkhCxQAiCcH4ynmEooZdN1hO+hohwoH/jMe13KtQHCqwb
H5rwTp0JXE3vdj9rQXSfpA285nZvhYerKP/bFrdhbL1R6l4hc4A5Yhx4qTghwwwn
e7xljLqRPLHGjDYeq881/TmxB+xc1nyMMTUcni0CgYEAme42P7uOcvbzL1A6MdWP
lYdP8WE8XkPeNPzvmnjgUIvIUVQDJ3cG+p1JH60SYqA+tOaz8VtwkzNcri5MsFDD
7rhLxOANgn25nR3HybhP6IPV0lOwHPtlCpDNlkyoj4OIaMCfWOGaejyVrmDJqEWJ
9C2PAs4wrl0Z0YJclLkLOocCgYEAzuAeOCUKl6Whu4wGJqYmOpx1Ym/vxHboHm7r
iKQph7lyrhfxvHvjDxQkSlXsBtCPCC+ZRlyt1VhKZ16TUa4IzEWMVduqd8LSj0QK
/y0hntMEy5LsmbXgJ12yMre2SaRwSDQdamW2jy3iMnrDR2acIbcZWkDwA4KiiHqG
8RNuUU0CgYATZG8XfnhRrDJPuIwloce/qqvFVyE3xPH3mktMWKsYGzvoYpaSWpFm
0JJX/gNnahyHkwL9M60e/c4MAZ8Yna6Ix0jF5q6CK+I4TJdw/b2fKwKPSQluz73p
Wpf0TASwbHswxvRAaJlpuF912/FomCAE4k8ZWcJrgxJBlk+hE0LPCg==
-----END RSA PRIVATE KEY-----
`
	goldenRSAName = "node-csr-Ir7scsHQwL1S5b3JsiZgie0-d8bO04-CwnswICECCjY"
)

// TestBootstrapRequestNameIsUpstreams: a given key asking for node n1
// names its request exactly as upstream's kubelet does (the golden names
// are upstream's function's), for the ECDSA key a kubelet makes and an
// RSA one (whose usages, part of the name, add key encipherment). Before,
// the digest framed each field with its length instead of upstream's
// base64url-and-"|", so the names differed.
func TestBootstrapRequestNameIsUpstreams(t *testing.T) {
	for _, tc := range []struct{ keyPEM, want string }{
		{goldenECKeyPEM, goldenECName},
		{goldenRSAKeyPEM, goldenRSAName},
	} {
		parsed, err := keyutil.ParsePrivateKeyPEM([]byte(tc.keyPEM))
		if err != nil {
			t.Fatal(err)
		}
		key := parsed.(crypto.Signer)
		if got := bootstrapRequestOf(t, key, "n1").Name; got != tc.want {
			t.Errorf("%T: request named %q, want upstream's %q", key, got, tc.want)
		}
	}
}

// kubeproofBefore4362632bName is the name kubeproof gave a bootstrap
// request before it named them as upstream (each field framed by its
// length), for TestBootstrapAfterAnOldNamedRequest.
func kubeproofBefore4362632bName(t *testing.T, pub crypto.PublicKey, subject pkix.Name, usages []certificatesv1.KeyUsage) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	h := sha512.New512_256()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	field(der)
	field([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		field([]byte(o))
	}
	for _, u := range usages {
		field([]byte(u))
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// TestBootstrapAfterAnOldNamedRequest: a kubelet restarted after an
// upgrade, its key in kubelet-client.key.tmp and its request still
// pending under the name an older kubeproof gave it, does not wait for
// that one: it asks again under upstream's name (what an upstream kubelet
// with that key would ask) and takes the certificate issued for it. The
// old request is left as it is, for the CSR cleaner to remove.
func TestBootstrapAfterAnOldNamedRequest(t *testing.T) {
	parsed, err := keyutil.ParsePrivateKeyPEM([]byte(goldenECKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	key := parsed.(crypto.Signer)
	subject := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	oldName := kubeproofBefore4362632bName(t, key.Public(), subject, usages)
	if oldName == goldenECName {
		t.Fatal("the old name is upstream's: nothing to test")
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	old := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: oldName},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: usages,
		},
	}
	client := fake.NewClientset(old)
	issued := []byte("-----BEGIN CERTIFICATE-----\nissued by the test\n-----END CERTIFICATE-----\n")
	var createdNames []string
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		createdNames = append(createdNames, csr.Name)
		// Approved and issued at once; stored by the fake's tracker.
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = issued
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := requestClientCertificate(ctx, client, key, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(issued) {
		t.Errorf("certificate %q, want the one issued for the new request", got)
	}
	if !slices.Equal(createdNames, []string{goldenECName}) {
		t.Errorf("requests created %q, want upstream's name %q only", createdNames, goldenECName)
	}
	still, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, oldName, metav1.GetOptions{})
	if err != nil || len(still.Status.Conditions) != 0 {
		t.Errorf("the old request is %v (%v), want it left pending", still, err)
	}
}
