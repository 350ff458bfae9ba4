package admission

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The certificates.k8s.io plugins, kube-apiserver's CertificateApproval,
// CertificateSigning and CertificateSubjectRestriction (all on by
// default): who may approve and who may sign a CertificateSigningRequest
// is decided per signer, by the verbs approve and sign on the synthetic
// resource signers (certificates.k8s.io), named by the request's signer
// name or by "<domain>/*".

var csrResource = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}

// signerAuthorized reports whether user may verb the signer signerName
// (or every signer of its domain); with no authorizer nobody may.
func signerAuthorized(ctx context.Context, authz auth.Authorizer, user *request.User, verb, signerName string) bool {
	if authz == nil {
		return false
	}
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		info := &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: certificatesv1.GroupName, APIVersion: "*", Resource: "signers", Name: name}
		d, reason, err := authz.Authorize(ctx, auth.Attributes{User: user, Info: info})
		if err != nil {
			slog.Debug("signer authorization failed", "verb", verb, "signer", name, "reason", reason, "err", err)
			continue
		}
		if d == auth.DecisionAllow {
			return true
		}
	}
	return false
}

// oldCSR is the stored request of an update of csrs/<subresource>, or
// nil when a is something else.
func oldCSR(a *Attributes, subresource string) (*certificatesv1.CertificateSigningRequest, error) {
	if a.Operation != Update || a.Subresource != subresource || a.Resource.GroupResource() != csrResource {
		return nil, nil
	}
	old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil, forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.OldObject))
	}
	return old, nil
}

// CertificateApproval lets an update of certificatesigningrequests/approval
// through only when the user may approve the stored request's signer.
type CertificateApproval struct {
	Authorizer auth.Authorizer
}

func newCertificateApproval(d *deps) (any, error) {
	return &CertificateApproval{Authorizer: d.opts.Authorizer}, nil
}

// Validate implements Validator.
func (p *CertificateApproval) Validate(ctx context.Context, a *Attributes) error {
	old, err := oldCSR(a, "approval")
	if old == nil || err != nil {
		return err
	}
	if !signerAuthorized(ctx, p.Authorizer, a.User, "approve", old.Spec.SignerName) {
		return forbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// CertificateSigning lets an update of certificatesigningrequests/status
// that changes status.certificate through only when the user may sign
// for the stored request's signer. As upstream, other /status changes (a
// Failed condition, for one) are not its concern, and "changes" is
// reflect.DeepEqual's: an empty certificate where none is stored is one.
type CertificateSigning struct {
	Authorizer auth.Authorizer
}

func newCertificateSigning(d *deps) (any, error) {
	return &CertificateSigning{Authorizer: d.opts.Authorizer}, nil
}

// Validate implements Validator.
func (p *CertificateSigning) Validate(ctx context.Context, a *Attributes) error {
	old, err := oldCSR(a, "status")
	if old == nil || err != nil {
		return err
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if reflect.DeepEqual(old.Status.Certificate, csr.Status.Certificate) {
		return nil
	}
	if !signerAuthorized(ctx, p.Authorizer, a.User, "sign", old.Spec.SignerName) {
		return forbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// CertificateSubjectRestriction refuses to create a request for the
// kubernetes.io/kube-apiserver-client signer whose subject's organizations
// (the groups of the certificate's user) include system:masters.
type CertificateSubjectRestriction struct{}

func newCertificateSubjectRestriction(*deps) (any, error) {
	return CertificateSubjectRestriction{}, nil
}

// Validate implements Validator.
func (CertificateSubjectRestriction) Validate(_ context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != csrResource {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return forbidden(a, fmt.Errorf("failed to parse CSR: %w", err))
	}
	if slices.Contains(req.Subject.Organization, "system:masters") {
		return forbidden(a, fmt.Errorf("use of %s signer with system:masters group is not allowed", certificatesv1.KubeAPIServerClientSignerName))
	}
	return nil
}

// parseCSR decodes a CSR's PEM CERTIFICATE REQUEST.
func parseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
