package registry

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CSR validation as kube-apiserver's certificates.k8s.io validation: one
// set of rules for create and for each update endpoint, where what an
// endpoint may write (approval conditions through /approval, the
// certificate through /status) is a csrWrites, and flaws already stored in
// the old object are tolerated on update (csrTolerance).

// legacyUnknownSigner is the signer certificates.k8s.io/v1beta1 defaulted
// to; v1 refuses it on create.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// csrWrites says what an update endpoint may write besides what every
// endpoint may.
type csrWrites struct {
	// approval: add or change Approved and Denied conditions (/approval).
	approval bool
	// certificate: set status.certificate (/status).
	certificate bool
}

// csrTolerance lists the flaws an update tolerates because the stored
// object already has them (none on create).
type csrTolerance struct {
	bothApprovedAndDenied, legacySigner, duplicateConditionTypes, emptyConditionType bool
	arbitraryCertificate, unknownUsages, duplicateUsages                             bool
}

func csrToleranceOf(c, old *certificatesv1.CertificateSigningRequest) csrTolerance {
	if old == nil {
		return csrTolerance{}
	}
	seen := map[certificatesv1.RequestConditionType]bool{}
	var t csrTolerance
	for _, cond := range old.Status.Conditions {
		if seen[cond.Type] {
			t.duplicateConditionTypes = true
		}
		seen[cond.Type] = true
		if cond.Type == "" {
			t.emptyConditionType = true
		}
	}
	t.bothApprovedAndDenied = seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied]
	t.legacySigner = old.Spec.SignerName == legacyUnknownSigner
	t.arbitraryCertificate = bytes.Equal(c.Status.Certificate, old.Status.Certificate) || validateCertificatePEM(old.Status.Certificate) != nil
	usages := sets.New[certificatesv1.KeyUsage]()
	for _, u := range old.Spec.Usages {
		if usages.Has(u) {
			t.duplicateUsages = true
		}
		usages.Insert(u)
		if !csrUsages.Has(string(u)) {
			t.unknownUsages = true
		}
	}
	return t
}

var csrUsages = sets.New(
	"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
	"ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
)

// ParseCSRRequest decodes the PEM CERTIFICATE REQUEST of a CSR's spec.
func ParseCSRRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// validateCSRCreate is a new CSR's validation.
func validateCSRCreate(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRObject(c, csrTolerance{})
}

// validateCSRObject checks the spec, the conditions and the certificate.
func validateCSRObject(c *certificatesv1.CertificateSigningRequest, tol csrTolerance) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	// The value is the request's bytes, shown as their base64 JSON.
	if req, err := ParseCSRRequest(c.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), c.Spec.Request, err.Error()))
	} else if err := req.CheckSignature(); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), c.Spec.Request, err.Error()))
	}
	if len(c.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	// Every unknown usage is reported before the first duplicate.
	for i, u := range c.Spec.Usages {
		if !tol.unknownUsages && !csrUsages.Has(string(u)) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, sets.List(csrUsages)))
		}
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range c.Spec.Usages {
		if !tol.duplicateUsages && seen.Has(u) {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen.Insert(u)
	}
	if !tol.legacySigner && c.Spec.SignerName == legacyUnknownSigner {
		errs = append(errs, field.Invalid(spec.Child("signerName"), c.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerNameSyntax(spec.Child("signerName"), c.Spec.SignerName)...)
	}
	if d := c.Spec.ExpirationSeconds; d != nil && *d < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *d, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateCSRConditions(c, tol)...)
	if !tol.arbitraryCertificate && len(c.Status.Certificate) > 0 {
		if err := validateCertificatePEM(c.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// csrTrueOnly are the condition types whose status can only be True.
var csrTrueOnly = sets.New(certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed)

func validateCSRConditions(c *certificatesv1.CertificateSigningRequest, tol csrTolerance) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status", "conditions")
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, cond := range c.Status.Conditions {
		cp := p.Index(i)
		if !tol.emptyConditionType && cond.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		if csrTrueOnly.Has(cond.Type) {
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case cond.Status == "":
			errs = append(errs, field.Required(cp.Child("status"), ""))
		case !sets.New(allowed...).Has(string(cond.Status)):
			errs = append(errs, field.NotSupported(cp.Child("status"), cond.Status, allowed))
		}
		// Reported at the type of each Approved or Denied condition
		// after one of the other kind.
		if !tol.bothApprovedAndDenied &&
			(cond.Type == certificatesv1.CertificateApproved && seen[certificatesv1.CertificateDenied] ||
				cond.Type == certificatesv1.CertificateDenied && seen[certificatesv1.CertificateApproved]) {
			errs = append(errs, field.Invalid(cp.Child("type"), cond.Type, "Approved and Denied conditions are mutually exclusive"))
		}
		if !tol.duplicateConditionTypes && seen[cond.Type] {
			errs = append(errs, field.Duplicate(cp.Child("type"), cond.Type))
		}
		seen[cond.Type] = true
	}
	return errs
}

// validateCertificatePEM requires one or more PEM CERTIFICATE blocks
// without headers, each holding certificates that parse; data outside
// PEM blocks is ignored, as upstream's.
func validateCertificatePEM(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateCSRUpdate is an update's validation through an endpoint that
// may write w: Approved, Denied and Failed conditions are never removed;
// Approved and Denied ones change only through /approval; the certificate
// is set only through /status, and once.
func validateCSRUpdate(c, old *certificatesv1.CertificateSigningRequest, w csrWrites) field.ErrorList {
	errs := validateCSRObject(c, csrToleranceOf(c, old))
	p := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(csrConditionsOf(c, t)) < len(csrConditionsOf(old, t)) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !w.approval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			was, is := csrConditionsOf(old, t), csrConditionsOf(c, t)
			switch {
			case len(is) < len(was):
				// a removal, refused above
			case len(is) > len(was):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(was, is):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(was, is))))
			}
		}
	}
	if !bytes.Equal(c.Status.Certificate, old.Status.Certificate) {
		cp := field.NewPath("status", "certificate")
		switch {
		case !w.certificate:
			errs = append(errs, field.Forbidden(cp, "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(cp, "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func csrConditionsOf(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			out = append(out, cond)
		}
	}
	return out
}

// keepApprovalConditions is /status's: the stored Approved and Denied
// conditions replace the request's, one for one, when it has as many of
// each (otherwise validation refuses the added or removed one).
func keepApprovalConditions(c, old *certificatesv1.CertificateSigningRequest) {
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		var was, is []int
		for i, cond := range old.Status.Conditions {
			if cond.Type == t {
				was = append(was, i)
			}
		}
		for i, cond := range c.Status.Conditions {
			if cond.Type == t {
				is = append(is, i)
			}
		}
		if len(was) != len(is) {
			continue
		}
		for k, i := range is {
			c.Status.Conditions[i] = old.Status.Conditions[was[k]]
		}
	}
}

// fillConditionTimes gives each condition without a lastUpdateTime now,
// and without a lastTransitionTime the stored same type and status
// condition's (now when there is none).
func fillConditionTimes(c, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	t := metav1.NewTime(now)
	for i := range c.Status.Conditions {
		cond := &c.Status.Conditions[i]
		if cond.LastUpdateTime.IsZero() {
			cond.LastUpdateTime = t
		}
		if !cond.LastTransitionTime.IsZero() {
			continue
		}
		cond.LastTransitionTime = t
		for _, o := range old.Status.Conditions {
			if o.Type == cond.Type && o.Status == cond.Status && !o.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}
