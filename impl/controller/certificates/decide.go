// Package certificates is kube-controller-manager's csrapproving,
// csrsigning and csrcleaner controllers for TLS bootstrapping: a kubelet that joined with a
// bootstrap token asks for its client certificate
// (CN=system:node:<name>, O=system:nodes) with a certificates.k8s.io/v1
// CertificateSigningRequest for the kubernetes.io/kube-apiserver-client-kubelet
// signer; the approver approves it when a SubjectAccessReview says the
// requester may create certificatesigningrequests/nodeclient (or
// /selfnodeclient when it renews its own identity); the signer issues the
// certificate with the cluster CA. The signer also issues, once approved
// (by a user RBAC lets approve for the signer), kubelet serving
// certificates (kubernetes.io/kubelet-serving) and client certificates
// for any user (kubernetes.io/kube-apiserver-client), each after its
// signer's checks of subject and usages.
//
// The cleaner deletes requests left behind: pending ones after a day,
// denied, failed and issued ones an hour after that condition, issued
// ones whose certificate has expired, and approved ones a day after their
// approval if no certificate came (DecideCleanup).
//
// The decisions (is this a node client request, which subresource
// authorizes it, what certificate to issue, whether to delete a request)
// are pure functions; Approver, Signer and Cleaner are the thin loops
// around them.
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
	"k8s.io/apimachinery/pkg/util/sets"
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
	MessageSelfAutoApproved  = "Auto approving self kubelet client certificate after SubjectAccessReview."
	ReasonSignerValidation   = "SignerValidationFailure"
	DefaultSigningDuration   = 365 * 24 * time.Hour
	certificateBackdate      = 5 * time.Minute
	shortCertificate         = 8 * time.Hour
	minSigningDuration       = 10 * time.Minute
	nodeClientSubresource    = "nodeclient"
	selfNodeClientSubresouce = "selfnodeclient"
)

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

// Subject checks' errors, as kube-controller-manager reports them.
var (
	errOrganizationNotNodes = errors.New("subject organization is not system:nodes")
	errCommonNameNotNode    = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPRequired      = errors.New("DNS or IP subjectAltName is required")
	errDNSNotAllowed        = errors.New("DNS subjectAltNames are not allowed")
	errEmailNotAllowed      = errors.New("Email subjectAltNames are not allowed")
	errIPNotAllowed         = errors.New("IP subjectAltNames are not allowed")
	errURINotAllowed        = errors.New("URI subjectAltNames are not allowed")
)

// The usage sets a node's requests must have exactly: with key
// encipherment (RSA keys) or without.
var (
	kubeletClientUsages  = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	kubeletServingUsages = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
)

// usagesMatch reports whether usages are exactly want, or want without key
// encipherment.
func usagesMatch(usages []certificatesv1.KeyUsage, want sets.Set[certificatesv1.KeyUsage]) error {
	got := sets.New(usages...)
	if got.Equal(want) || got.Equal(want.Clone().Delete(certificatesv1.UsageKeyEncipherment)) {
		return nil
	}
	return fmt.Errorf("usages did not match %v", sets.List(want))
}

// ValidateKubeletClient checks that req asks for a kubelet client
// certificate and nothing more (upstream's ValidateKubeletClientCSR):
// organization exactly system:nodes, no subject alternative names, common
// name system:node:<name>, usages digital signature and client auth (and
// key encipherment).
func ValidateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSNotAllowed
	case len(req.EmailAddresses) > 0:
		return errEmailNotAllowed
	case len(req.IPAddresses) > 0:
		return errIPNotAllowed
	case len(req.URIs) > 0:
		return errURINotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return errCommonNameNotNode
	}
	return usagesMatch(usages, kubeletClientUsages)
}

// ValidateKubeletServing checks that req asks for a kubelet serving
// certificate (upstream's ValidateKubeletServingCSR): organization exactly
// system:nodes, at least one DNS or IP name and no other kind, usages
// digital signature and server auth (and key encipherment), common name
// system:node:<name>.
func ValidateKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errDNSOrIPRequired
	case len(req.EmailAddresses) > 0:
		return errEmailNotAllowed
	case len(req.URIs) > 0:
		return errURINotAllowed
	}
	if err := usagesMatch(usages, kubeletServingUsages); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return errCommonNameNotNode
	}
	return nil
}

// ValidateAPIServerClient checks the usages of a
// kubernetes.io/kube-apiserver-client request: client auth, optionally
// digital signature and key encipherment, nothing else. Any subject goes
// (the CertificateSubjectRestriction admission plugin keeps
// system:masters out).
func ValidateAPIServerClient(_ *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	clientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !clientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// signerChecks are the signers kube-controller-manager's csrsigning runs
// with the cluster CA, each with its check of a request's subject and
// usages. (kubernetes.io/legacy-unknown, which it also signs without
// checks, cannot be requested through certificates.k8s.io/v1.)
var signerChecks = map[string]func(*x509.CertificateRequest, []certificatesv1.KeyUsage) error{
	certificatesv1.KubeAPIServerClientKubeletSignerName: ValidateKubeletClient,
	certificatesv1.KubeletServingSignerName:             ValidateKubeletServing,
	certificatesv1.KubeAPIServerClientSignerName:        ValidateAPIServerClient,
}

// ApprovalCheck is one question the approver asks the authorizer before
// approving: may the requester create certificatesigningrequests/<Subresource>?
// Message is the Approved condition's when it may.
type ApprovalCheck struct {
	Subresource string
	Message     string
}

// DecideApproval returns the authorization checks to make for csr, in
// order, the first allowed approving it; none when the approver leaves it
// alone (already approved, denied or issued; another signer; not a
// kubelet client request — upstream never denies). As upstream's
// recognizers, a node renewing its own certificate is asked for
// selfnodeclient, then for nodeclient like any other requester.
func DecideApproval(csr *certificatesv1.CertificateSigningRequest) []ApprovalCheck {
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
	nodeClient := ApprovalCheck{Subresource: nodeClientSubresource, Message: MessageAutoApproved}
	if req.Subject.CommonName == csr.Spec.Username {
		return []ApprovalCheck{{Subresource: selfNodeClientSubresouce, Message: MessageSelfAutoApproved}, nodeClient}
	}
	return []ApprovalCheck{nodeClient}
}

// Approve returns a copy of csr with the AutoApproved condition of a new
// node's request appended.
func Approve(csr *certificatesv1.CertificateSigningRequest, now time.Time) *certificatesv1.CertificateSigningRequest {
	return approveWith(csr, MessageAutoApproved, now)
}

// approveWith returns a copy of csr with an AutoApproved condition saying
// message appended.
func approveWith(csr *certificatesv1.CertificateSigningRequest, message string, now time.Time) *certificatesv1.CertificateSigningRequest {
	out := csr.DeepCopy()
	out.Status.Conditions = append(out.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ReasonAutoApproved, Message: message,
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
// approved, not yet issued, not failed requests for the signers of
// signerChecks are handled; one that fails its signer's check is marked
// Failed. The certificate carries the request's subject, subject
// alternative names and usages, lives min(expirationSeconds, maxDuration)
// (at least ten minutes), starting five minutes back for skew (validity);
// an expired CA is an error, retried.
func DecideSigning(csr *certificatesv1.CertificateSigningRequest, ca *CA, maxDuration time.Duration, now time.Time) (*SignDecision, error) {
	if !Approved(csr) || Failed(csr) || len(csr.Status.Certificate) > 0 {
		return nil, nil
	}
	check, ok := signerChecks[csr.Spec.SignerName]
	if !ok {
		return nil, nil
	}
	req, err := ParseRequest(csr)
	if err != nil {
		return nil, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}
	if err := check(req, csr.Spec.Usages); err != nil {
		return &SignDecision{Failed: true, Message: err.Error()}, nil
	}
	ttl := maxDuration
	if ttl <= 0 {
		ttl = DefaultSigningDuration
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < ttl {
		ttl = max(time.Duration(*e)*time.Second, minSigningDuration)
	}
	notBefore, notAfter, err := validity(now, ttl, ca.Cert.NotAfter)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	ku, eku := keyUsages(csr.Spec.Usages)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              ku,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", csr.Name, err)
	}
	return &SignDecision{Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// validity is a certificate's lifetime as kube-controller-manager's
// permissive signing policy gives it: it starts certificateBackdate
// before now; it ends ttl after now when ttl is shorter than
// shortCertificate, else ttl less the backdate after now (a long
// certificate's whole lifetime is ttl); never after the CA's notAfter. A
// CA that has expired signs nothing.
func validity(now time.Time, ttl time.Duration, caNotAfter time.Time) (notBefore, notAfter time.Time, err error) {
	notBefore = now.Add(-certificateBackdate)
	notAfter = now.Add(ttl)
	if ttl >= shortCertificate {
		notAfter = notAfter.Add(-certificateBackdate)
	}
	if !notAfter.Before(caNotAfter) {
		notAfter = caNotAfter
	}
	if !notBefore.Before(caNotAfter) {
		return notBefore, notAfter, fmt.Errorf("the signer has expired: NotAfter=%v", caNotAfter)
	}
	if !now.Before(caNotAfter) {
		return notBefore, notAfter, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", caNotAfter)
	}
	return notBefore, notAfter, nil
}

// x509 key usages and extended key usages of the API's usage names.
var (
	x509KeyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
		certificatesv1.UsageSigning: x509.KeyUsageDigitalSignature, certificatesv1.UsageDigitalSignature: x509.KeyUsageDigitalSignature,
		certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment, certificatesv1.UsageKeyEncipherment: x509.KeyUsageKeyEncipherment,
		certificatesv1.UsageKeyAgreement: x509.KeyUsageKeyAgreement, certificatesv1.UsageDataEncipherment: x509.KeyUsageDataEncipherment,
		certificatesv1.UsageCertSign: x509.KeyUsageCertSign, certificatesv1.UsageCRLSign: x509.KeyUsageCRLSign,
		certificatesv1.UsageEncipherOnly: x509.KeyUsageEncipherOnly, certificatesv1.UsageDecipherOnly: x509.KeyUsageDecipherOnly,
	}
	x509ExtKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
		certificatesv1.UsageAny: x509.ExtKeyUsageAny, certificatesv1.UsageServerAuth: x509.ExtKeyUsageServerAuth,
		certificatesv1.UsageClientAuth: x509.ExtKeyUsageClientAuth, certificatesv1.UsageCodeSigning: x509.ExtKeyUsageCodeSigning,
		certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection, certificatesv1.UsageSMIME: x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageIPsecEndSystem: x509.ExtKeyUsageIPSECEndSystem, certificatesv1.UsageIPsecTunnel: x509.ExtKeyUsageIPSECTunnel,
		certificatesv1.UsageIPsecUser: x509.ExtKeyUsageIPSECUser, certificatesv1.UsageTimestamping: x509.ExtKeyUsageTimeStamping,
		certificatesv1.UsageOCSPSigning: x509.ExtKeyUsageOCSPSigning, certificatesv1.UsageMicrosoftSGC: x509.ExtKeyUsageMicrosoftServerGatedCrypto,
		certificatesv1.UsageNetscapeSGC: x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// keyUsages maps a request's usages to the certificate's, extended ones
// deduplicated and sorted.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for _, u := range usages {
		ku |= x509KeyUsages[u]
		if e, ok := x509ExtKeyUsages[u]; ok && !slices.Contains(eku, e) {
			eku = append(eku, e)
		}
	}
	slices.Sort(eku)
	return ku, eku
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
