// Package certificates is kube-controller-manager's csrapproving and
// csrsigning controllers for TLS bootstrapping: a kubelet that joined with a
// bootstrap token asks for its client certificate
// (CN=system:node:<name>, O=system:nodes) with a certificates.k8s.io/v1
// CertificateSigningRequest for the kubernetes.io/kube-apiserver-client-kubelet
// signer; the approver approves it when a SubjectAccessReview says the
// requester may create certificatesigningrequests/nodeclient (or
// /selfnodeclient when it renews its own identity); the signer issues the
// certificate with the cluster CA.
//
// The decisions (is this a node client request, which subresource
// authorizes it, what certificate to issue) are pure functions; Approver and
// Signer are the thin loops around them.
package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// Node identities (the Node authorizer's user and group).
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// Condition reasons and messages, as kube-controller-manager writes them.
const (
	ReasonAutoApproved       = "AutoApproved"
	MessageAutoApproved      = "Auto approving kubelet client certificate after SubjectAccessReview."
	ReasonSignerValidation   = "SignerValidationFailure"
	DefaultSigningDuration   = 365 * 24 * time.Hour
	certificateBackdate      = 5 * time.Minute
	nodeClientSubresource    = "nodeclient"
	selfNodeClientSubresouce = "selfnodeclient"
)

// kubeletClientUsages are the key usages a kubelet client request may ask for.
var kubeletClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// Approved, Denied and Failed report a CSR's terminal conditions.
func Approved(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateApproved)
}

// Denied reports whether csr carries a Denied condition.
func Denied(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateDenied)
}

// Failed reports whether csr carries a Failed condition.
func Failed(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateFailed)
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// ParseRequest decodes the PEM CERTIFICATE REQUEST in csr's spec.
func ParseRequest(csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("checking certificate request signature: %w", err)
	}
	return req, nil
}

// ValidateKubeletClient checks that req asks for a kubelet client
// certificate and nothing more: CN system:node:<name>, O exactly
// system:nodes, no subject alternative names, client auth among usages
// limited to key encipherment, digital signature and client auth.
func ValidateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) || len(req.Subject.CommonName) == len(NodeUserPrefix) {
		return fmt.Errorf("subject common name %q does not begin with %q", req.Subject.CommonName, NodeUserPrefix)
	}
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return fmt.Errorf("subject organization %v is not [%s]", req.Subject.Organization, NodesGroup)
	}
	if len(req.DNSNames) > 0 || len(req.EmailAddresses) > 0 || len(req.IPAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("subject alternative names are not allowed")
	}
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) {
		return errors.New("usages do not include client auth")
	}
	for _, u := range usages {
		if !slices.Contains(kubeletClientUsages, u) {
			return fmt.Errorf("usage %q is not allowed", u)
		}
	}
	return nil
}

// ApprovalCheck is what the approver asks the authorizer before approving:
// may the requester create certificatesigningrequests/<Subresource>?
type ApprovalCheck struct {
	Subresource string
}

// DecideApproval returns the authorization check to make for csr, or nil
// when the approver leaves it alone (already approved, denied or issued;
// another signer; not a kubelet client request — upstream never denies).
func DecideApproval(csr *certificatesv1.CertificateSigningRequest) *ApprovalCheck {
	if Approved(csr) || Denied(csr) || len(csr.Status.Certificate) > 0 {
		return nil
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	req, err := ParseRequest(csr)
	if err != nil || ValidateKubeletClient(req, csr.Spec.Usages) != nil {
		return nil
	}
	if req.Subject.CommonName == csr.Spec.Username {
		return &ApprovalCheck{Subresource: selfNodeClientSubresouce}
	}
	return &ApprovalCheck{Subresource: nodeClientSubresource}
}

// Approve returns a copy of csr with the AutoApproved condition appended.
func Approve(csr *certificatesv1.CertificateSigningRequest, now time.Time) *certificatesv1.CertificateSigningRequest {
	out := csr.DeepCopy()
	out.Status.Conditions = append(out.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ReasonAutoApproved, Message: MessageAutoApproved,
	})
	setConditionTimes(out, now)
	return out
}

func setConditionTimes(csr *certificatesv1.CertificateSigningRequest, now time.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime.Time = now
			c.LastTransitionTime.Time = now
		}
	}
}

// CA is the cluster signing certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// ParseCA reads a PEM certificate and a PEM private key (PKCS#8, EC or
// PKCS#1).
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("cluster signing certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cluster signing certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("cluster signing key: no PEM block")
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster signing key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("cluster signing key: %T cannot sign", key)
	}
	return &CA{Cert: cert, Key: signer}, nil
}

// SignDecision is what the signer does with a CSR: nothing (nil), issue
// Certificate, or mark it Failed with Message.
type SignDecision struct {
	Certificate []byte
	Failed      bool
	Message     string
}

// DecideSigning returns the signer's decision for csr at now: only
// approved, not yet issued, not failed requests for the kubelet client
// signer are handled. The certificate lives min(expirationSeconds,
// maxDuration), never past the CA, and is backdated five minutes for skew.
func DecideSigning(csr *certificatesv1.CertificateSigningRequest, ca *CA, maxDuration time.Duration, now time.Time) (*SignDecision, error) {
	if !Approved(csr) || Denied(csr) || Failed(csr) || len(csr.Status.Certificate) > 0 {
		return nil, nil
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil, nil
	}
	req, err := ParseRequest(csr)
	if err != nil {
		return &SignDecision{Failed: true, Message: err.Error()}, nil
	}
	if err := ValidateKubeletClient(req, csr.Spec.Usages); err != nil {
		return &SignDecision{Failed: true, Message: err.Error()}, nil
	}
	ttl := maxDuration
	if ttl <= 0 {
		ttl = DefaultSigningDuration
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < ttl {
		ttl = time.Duration(*e) * time.Second
	}
	notAfter := now.Add(ttl)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		NotBefore:    now.Add(-certificateBackdate),
		NotAfter:     notAfter,
		KeyUsage:     keyUsage(csr.Spec.Usages),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", csr.Name, err)
	}
	return &SignDecision{Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func keyUsage(usages []certificatesv1.KeyUsage) x509.KeyUsage {
	var ku x509.KeyUsage
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			ku |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			ku |= x509.KeyUsageKeyEncipherment
		}
	}
	return ku
}

// Apply returns a copy of csr carrying decision d's result.
func Apply(csr *certificatesv1.CertificateSigningRequest, d *SignDecision, now time.Time) *certificatesv1.CertificateSigningRequest {
	out := csr.DeepCopy()
	if d.Failed {
		out.Status.Conditions = append(out.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: ReasonSignerValidation, Message: d.Message,
		})
		setConditionTimes(out, now)
		return out
	}
	out.Status.Certificate = d.Certificate
	return out
}
