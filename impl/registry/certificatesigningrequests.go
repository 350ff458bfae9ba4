package registry

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// certificateSigningRequests serves certificates.k8s.io/v1
// CertificateSigningRequests. Approval conditions are written through
// /approval (kubectl certificate approve/deny), the issued certificate
// through /status (which, more leniently than upstream, also accepts
// condition changes).
func certificateSigningRequests(now func() time.Time) *resource.Resource {
	k := kind[*certificatesv1.CertificateSigningRequest]{
		namespaced: false,
		prepareForCreate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = certificatesv1.CertificateSigningRequestStatus{}
		},
		// As upstream, the main endpoint changes metadata only.
		prepareForUpdate: func(c, old *certificatesv1.CertificateSigningRequest) {
			c.Spec = old.Spec
			c.Status = old.Status
		},
		validate: validateCSR,
		table:    &tableSpec[*certificatesv1.CertificateSigningRequest]{columns: csrColumns, cells: csrCells},
	}
	s := csrStrategy{strategy: newStrategy(k, now)}
	return &resource.Resource{
		GroupVersion: certificatesv1.SchemeGroupVersion,
		Name:         "certificatesigningrequests", SingularName: "certificatesigningrequest", Kind: "CertificateSigningRequest",
		Namespaced: false, ShortNames: []string{"csr"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:  func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		Strategy: s,
		Status: statusStrategy[*certificatesv1.CertificateSigningRequest]{s: s.strategy, k: statusKind[*certificatesv1.CertificateSigningRequest]{
			keep:     func(c, old *certificatesv1.CertificateSigningRequest) { c.Spec = old.Spec },
			validate: validateCSRStatusUpdate,
		}},
		Approval: statusStrategy[*certificatesv1.CertificateSigningRequest]{s: s.strategy, k: statusKind[*certificatesv1.CertificateSigningRequest]{
			keep: func(c, old *certificatesv1.CertificateSigningRequest) {
				c.Spec = old.Spec
				c.Status.Certificate = old.Status.Certificate
			},
			validate: validateCSRStatusUpdate,
		}},
	}
}

// csrStrategy records the requesting user in the spec on create, which
// needs the request context.
type csrStrategy struct {
	strategy[*certificatesv1.CertificateSigningRequest]
}

func (s csrStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s.strategy.PrepareForCreate(ctx, obj)
	c := s.typed(obj)
	c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra = "", "", nil, nil
	if u := request.UserFrom(ctx); u != nil {
		c.Spec.Username = u.Name
		c.Spec.UID = u.UID
		c.Spec.Groups = append([]string(nil), u.Groups...)
		if len(u.Extra) > 0 {
			c.Spec.Extra = map[string]certificatesv1.ExtraValue{}
			for key, v := range u.Extra {
				c.Spec.Extra[key] = append(certificatesv1.ExtraValue(nil), v...)
			}
		}
	}
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
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

func validateCSR(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if _, err := ParseCSRRequest(c.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "<request>", err.Error()))
	}
	errs = append(errs, validateSignerName(c.Spec.SignerName, spec.Child("signerName"))...)
	if d := c.Spec.ExpirationSeconds; d != nil && *d < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *d, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	if len(c.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), "usages must be provided"))
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range c.Spec.Usages {
		p := spec.Child("usages").Index(i)
		if !csrUsages.Has(string(u)) {
			errs = append(errs, field.NotSupported(p, u, sets.List(csrUsages)))
		}
		if seen.Has(u) {
			errs = append(errs, field.Duplicate(p, u))
		}
		seen.Insert(u)
	}
	errs = append(errs, validateCSRStatus(c)...)
	return errs
}

// validateSignerName requires a fully qualified "domain/path" name.
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || domain == "" || path == "" || !strings.Contains(domain, ".") {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	return nil
}

func validateCSRStatus(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status", "conditions")
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, cond := range c.Status.Conditions {
		cp := p.Index(i)
		if cond.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		switch cond.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied:
			if cond.Status != corev1.ConditionTrue {
				errs = append(errs, field.NotSupported(cp.Child("status"), cond.Status, []string{string(corev1.ConditionTrue)}))
			}
		default:
			switch cond.Status {
			case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
			default:
				errs = append(errs, field.NotSupported(cp.Child("status"), cond.Status, []string{string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown)}))
			}
		}
		if seen[cond.Type] {
			errs = append(errs, field.Duplicate(cp.Child("type"), cond.Type))
		}
		seen[cond.Type] = true
	}
	if seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(p, c.Status.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(c.Status.Certificate) > 0 {
		cp := field.NewPath("status", "certificate")
		if !seen[certificatesv1.CertificateApproved] {
			errs = append(errs, field.Invalid(cp, "<certificate data>", "certificate may only be set on approved requests"))
		}
		if err := validateCertificatePEM(c.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(cp, "<certificate data>", err.Error()))
		}
	}
	return errs
}

// validateCertificatePEM requires one or more PEM CERTIFICATE blocks that
// parse, and nothing else.
func validateCertificatePEM(data []byte) error {
	rest := data
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("invalid certificate: %w", err)
		}
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		return fmt.Errorf("must contain one or more PEM-encoded CERTIFICATE blocks")
	}
	return nil
}

// validateCSRStatusUpdate: approval conditions cannot be removed and an
// issued certificate cannot change.
func validateCSRStatusUpdate(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := validateCSRStatus(c)
	p := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if hasCSRCondition(old, t) && !hasCSRCondition(c, t) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if len(old.Status.Certificate) > 0 && string(old.Status.Certificate) != string(c.Status.Certificate) {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", "updates may not modify existing certificate content"))
	}
	return errs
}

func hasCSRCondition(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return true
		}
	}
	return false
}

var csrColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	ageColumn(),
	column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
	column("Requestor", "string", "Name of the user requesting the certificate"),
	column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
	column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
}

func csrCells(c *certificatesv1.CertificateSigningRequest, now time.Time) []any {
	requested := "<none>"
	if d := c.Spec.ExpirationSeconds; d != nil {
		requested = duration.HumanDuration(time.Duration(*d) * time.Second)
	}
	return []any{c.Name, age(c.CreationTimestamp, now), c.Spec.SignerName, c.Spec.Username, requested, csrConditionText(c)}
}

// csrConditionText is kubectl's CONDITION cell: "Pending", or the
// condition types joined by commas, with "Issued" once a certificate is set.
func csrConditionText(c *certificatesv1.CertificateSigningRequest) string {
	var types []string
	for _, cond := range c.Status.Conditions {
		types = append(types, string(cond.Type))
	}
	if len(types) == 0 {
		types = append(types, "Pending")
	}
	if len(c.Status.Certificate) > 0 {
		types = append(types, "Issued")
	}
	return strings.Join(types, ",")
}
