package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// certExpiringAt is a PEM certificate whose NotAfter is notAfter.
func certExpiringAt(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "system:node:n1"}, NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestDecideCleanup: kube-controller-manager's csrcleaner rules. A
// pending request (no condition) goes 24 h after its creation; a denied
// or failed one an hour after that condition's last update; an approved
// one holding its certificate an hour after its approval's last update,
// or as soon as its certificate has expired; one approved but never
// issued 24 h after its approval's last update (upstream since 1.34). An
// unparsable certificate counts as not expired, and zero timestamps never
// count as old.
func TestDecideCleanup(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(typ certificatesv1.RequestConditionType, updated metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: "True", LastUpdateTime: updated}
	}
	valid := certExpiringAt(t, now.Add(time.Hour))
	expired := certExpiringAt(t, now.Add(-time.Second))
	cases := map[string]struct {
		created    metav1.Time
		conditions []certificatesv1.CertificateSigningRequestCondition
		cert       []byte
		want       CleanupReason
	}{
		"pending 23h59m":                      {created: ago(24*time.Hour - time.Minute)},
		"pending exactly 24h":                 {created: ago(24 * time.Hour)},
		"pending 24h+1s":                      {created: ago(24*time.Hour + time.Second), want: CleanupPending},
		"pending, no creation time":           {},
		"denied 59m":                          {created: ago(48 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(59*time.Minute))}},
		"denied 61m":                          {created: ago(2 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(61*time.Minute))}, want: CleanupDenied},
		"denied, no update time":              {created: ago(48 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, metav1.Time{})}},
		"failed 61m":                          {created: ago(2 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(62*time.Minute)), cond(certificatesv1.CertificateFailed, ago(61*time.Minute))}, want: CleanupFailed},
		"failed 30m":                          {created: ago(2 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(62*time.Minute)), cond(certificatesv1.CertificateFailed, ago(30*time.Minute))}},
		"approved, not issued, 23h":           {created: ago(48 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(23*time.Hour))}},
		"approved, not issued, 24h+1s":        {created: ago(48 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(24*time.Hour+time.Second))}, want: CleanupUnissued},
		"approved, not issued, no update":     {created: ago(48 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, metav1.Time{})}},
		"issued 59m":                          {created: ago(2 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(59*time.Minute))}, cert: valid},
		"issued 61m":                          {created: ago(2 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(61*time.Minute))}, cert: valid, want: CleanupIssued},
		"issued 1m, certificate expired":      {created: ago(2 * time.Minute), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Minute))}, cert: expired, want: CleanupIssuedExpired},
		"issued 1m, not PEM":                  {created: ago(2 * time.Minute), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Minute))}, cert: []byte("not a certificate")},
		"issued 1m, PEM not X.509":            {created: ago(2 * time.Minute), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(time.Minute))}, cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}})},
		"issued 2h, not PEM":                  {created: ago(3 * time.Hour), conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(2*time.Hour))}, cert: []byte("not a certificate"), want: CleanupIssued},
		"expired certificate, never approved": {created: ago(2 * time.Minute), conditions: []certificatesv1.CertificateSigningRequestCondition{cond("Custom", ago(time.Minute))}, cert: expired},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: tc.created},
				Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: tc.conditions, Certificate: tc.cert},
			}
			if got := DecideCleanup(csr, now); got != tc.want {
				t.Errorf("DecideCleanup = %q, want %q", got, tc.want)
			}
		})
	}
}
