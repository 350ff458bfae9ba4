package registry

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// approvedCondition is an Approved condition as /approval stores it
// (with its times).
func approvedCondition() certificatesv1.CertificateSigningRequestCondition {
	at := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	return certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved",
		LastUpdateTime: at, LastTransitionTime: at}
}

// errorsText joins the errors' texts for matching.
func errorsText(errs field.ErrorList) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

// TestCSRStatusMayNotApprove: /status keeps the stored Approved and
// Denied conditions and refuses to add one, as upstream's
// csrStatusStrategy (approval goes through /approval, where the
// CertificateApproval admission plugin checks the approver).
func TestCSRStatusMayNotApprove(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	old, _ := testCSR(t)

	upd := old.DeepCopy()
	upd.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition()}
	r.Status.PrepareForUpdate(ctx, upd, old)
	errs := r.Status.ValidateUpdate(ctx, upd, old)
	if want := `status.conditions: Forbidden: updates may not add a condition of type "Approved"`; errorsText(errs) != want {
		t.Errorf("approving through /status: errors\n%s\nwant\n%s", errorsText(errs), want)
	}

	// An approved request's Approved condition cannot be rewritten
	// through /status: the stored one is kept, other conditions change.
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition()}
	upd = approved.DeepCopy()
	upd.Status.Conditions[0].Reason = "Rewritten"
	upd.Status.Conditions = append(upd.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure"})
	r.Status.PrepareForUpdate(ctx, upd, approved)
	if errs := r.Status.ValidateUpdate(ctx, upd, approved); len(errs) != 0 {
		t.Fatalf("failing an approved request through /status: %v", errs)
	}
	if got := upd.Status.Conditions[0].Reason; got != "AutoApproved" {
		t.Errorf("Approved reason after /status = %q, want the stored AutoApproved", got)
	}
	if len(upd.Status.Conditions) != 2 || upd.Status.Conditions[1].Type != certificatesv1.CertificateFailed {
		t.Errorf("conditions after /status = %v, want Approved and Failed", upd.Status.Conditions)
	}
}

// TestCSRApprovalMayNotSetCertificate: /approval changes conditions only
// and validates them without the approval restrictions of the other
// endpoints; a certificate or spec sent there is dropped.
func TestCSRApprovalMayNotSetCertificate(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	old, key := testCSR(t)
	upd := old.DeepCopy()
	upd.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition()}
	upd.Status.Certificate = testCertPEM(t, key)
	upd.Spec.SignerName = "example.com/other"
	r.Approval.PrepareForUpdate(ctx, upd, old)
	if errs := r.Approval.ValidateUpdate(ctx, upd, old); len(errs) != 0 {
		t.Fatalf("approving through /approval: %v", errs)
	}
	if len(upd.Status.Certificate) != 0 || upd.Spec.SignerName != old.Spec.SignerName || len(upd.Status.Conditions) != 1 {
		t.Errorf("after /approval: certificate %d bytes, signer %q, conditions %v", len(upd.Status.Certificate), upd.Spec.SignerName, upd.Status.Conditions)
	}
}

// TestCSRStatusCertificateOnPendingRequest: as upstream's validation, a
// signer may write a certificate through /status whatever the conditions
// (the signer decides whether a request is approved); /approval and the
// main endpoint never write it, and a written one never changes.
func TestCSRStatusCertificateOnPendingRequest(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	old, key := testCSR(t)
	upd := old.DeepCopy()
	upd.Status.Certificate = testCertPEM(t, key)
	r.Status.PrepareForUpdate(ctx, upd, old)
	if errs := r.Status.ValidateUpdate(ctx, upd, old); len(errs) != 0 {
		t.Errorf("certificate on a pending request through /status: %v", errs)
	}
	again := upd.DeepCopy()
	again.Status.Certificate = testCertPEM(t, key)
	r.Status.PrepareForUpdate(ctx, again, upd)
	errs := r.Status.ValidateUpdate(ctx, again, upd)
	if want := "status.certificate: Forbidden: updates may not modify existing certificate content"; errorsText(errs) != want {
		t.Errorf("replacing a certificate: errors\n%s\nwant\n%s", errorsText(errs), want)
	}
}

// TestCSRConditionRules: each condition's status (True only for
// Approved, Denied and Failed), duplicate types and Approved with Denied,
// with upstream's messages.
func TestCSRConditionRules(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	cases := map[string]struct {
		conds []certificatesv1.CertificateSigningRequestCondition
		want  string
	}{
		"failed false": {
			[]certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionFalse}},
			`status.conditions[0].status: Unsupported value: "False": supported values: "True"`,
		},
		"status missing": {
			[]certificatesv1.CertificateSigningRequestCondition{{Type: "Custom"}},
			`status.conditions[0].status: Required value`,
		},
		"approved and denied": {
			[]certificatesv1.CertificateSigningRequestCondition{approvedCondition(), {Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}},
			`status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive`,
		},
		"duplicate": {
			[]certificatesv1.CertificateSigningRequestCondition{{Type: "Custom", Status: corev1.ConditionTrue}, {Type: "Custom", Status: corev1.ConditionFalse}},
			`status.conditions[1].type: Duplicate value: "Custom"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old, _ := testCSR(t)
			upd := old.DeepCopy()
			upd.Status.Conditions = tc.conds
			r.Approval.PrepareForUpdate(ctx, upd, old)
			if got := errorsText(r.Approval.ValidateUpdate(ctx, upd, old)); got != tc.want {
				t.Errorf("errors\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestCSRConditionTimestamps: /approval and /status fill a condition's
// missing lastUpdateTime with now and its lastTransitionTime with the
// stored same type and status condition's, else now.
func TestCSRConditionTimestamps(t *testing.T) {
	now := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	r := certificateSigningRequests(func() time.Time { return now })
	ctx := context.Background()
	old, _ := testCSR(t)
	old.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Custom", Status: corev1.ConditionTrue, LastUpdateTime: earlier, LastTransitionTime: earlier}}
	upd := old.DeepCopy()
	fresh := approvedCondition()
	fresh.LastUpdateTime, fresh.LastTransitionTime = metav1.Time{}, metav1.Time{}
	upd.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Custom", Status: corev1.ConditionTrue}, fresh}
	r.Approval.PrepareForUpdate(ctx, upd, old)
	c := upd.Status.Conditions
	if !c[0].LastUpdateTime.Time.Equal(now) || !c[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("Custom times update %v transition %v, want %v and %v", c[0].LastUpdateTime, c[0].LastTransitionTime, now, earlier)
	}
	if !c[1].LastUpdateTime.Time.Equal(now) || !c[1].LastTransitionTime.Time.Equal(now) {
		t.Errorf("Approved times update %v transition %v, want both %v", c[1].LastUpdateTime, c[1].LastTransitionTime, now)
	}
}

// TestCSRCreateChecks: upstream's create-only checks: the request's
// signature, the legacy signer, certificate PEM content rules.
func TestCSRCreateChecks(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()

	csr, _ := testCSR(t)
	csr.Spec.SignerName = "kubernetes.io/legacy-unknown"
	if got, want := errorsText(r.Strategy.Validate(ctx, csr)), `spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this API version`; got != want {
		t.Errorf("legacy signer: errors\n%s\nwant\n%s", got, want)
	}

	// A request whose signature does not verify: the last byte of its
	// ECDSA signature flipped (the DER still parses).
	csr, _ = testCSR(t)
	block, _ := pem.Decode(csr.Spec.Request)
	raw := append([]byte(nil), block.Bytes...)
	raw[len(raw)-1] ^= 0xff
	if _, err := x509.ParseCertificateRequest(raw); err != nil {
		t.Fatal(err)
	}
	csr.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: raw})
	if errs := r.Strategy.Validate(ctx, csr); len(errs) != 1 || errs[0].Field != "spec.request" || !strings.Contains(errs[0].Detail, "verification failure") {
		t.Errorf("bad signature: errors %v, want one on spec.request: the signature's verification failure", errs)
	}
}

// TestCSRRequestAndUsageErrors: an unparsable request is reported with
// its bytes as the value (the base64 JSON of a []byte), as upstream's
// field.Invalid(spec.request, csr.Spec.Request, ...); unknown usages are
// all reported before the duplicates, upstream's two loops.
func TestCSRRequestAndUsageErrors(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	csr, _ := testCSR(t)
	csr.Spec.Request = []byte("invalid data")
	if got, want := errorsText(r.Strategy.Validate(ctx, csr)), `spec.request: Invalid value: "aW52YWxpZCBkYXRh": PEM block type must be CERTIFICATE REQUEST`; got != want {
		t.Errorf("invalid request: errors\n%s\nwant\n%s", got, want)
	}

	csr, _ = testCSR(t)
	csr.Spec.Usages = []certificatesv1.KeyUsage{"unknown", "unknown", "bogus"}
	errs := r.Strategy.Validate(ctx, csr)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+" "+string(e.Type))
	}
	want := []string{"spec.usages[0] FieldValueNotSupported", "spec.usages[1] FieldValueNotSupported", "spec.usages[2] FieldValueNotSupported", "spec.usages[1] FieldValueDuplicate"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("usages: errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCSRCertificatePEMRules: status.certificate must hold CERTIFICATE
// blocks without headers, at least one, as upstream's validateCertificate.
func TestCSRCertificatePEMRules(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	old, key := testCSR(t)
	cert := testCertPEM(t, key)
	block, _ := pem.Decode(cert)
	withHeader := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"a": "b"}, Bytes: block.Bytes})
	cases := map[string]struct {
		data []byte
		want string
	}{
		"headers":   {withHeader, "status.certificate: Invalid value: \"<certificate data>\": no PEM block headers are permitted"},
		"no blocks": {[]byte("junk"), "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"},
		"trailing":  {append(append([]byte(nil), cert...), "junk"...), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			upd := old.DeepCopy()
			upd.Status.Certificate = tc.data
			r.Status.PrepareForUpdate(ctx, upd, old)
			if got := errorsText(r.Status.ValidateUpdate(ctx, upd, old)); got != tc.want {
				t.Errorf("errors\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
