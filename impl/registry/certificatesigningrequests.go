package registry

import (
	"context"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// certificateSigningRequests serves certificates.k8s.io/v1
// CertificateSigningRequests as kube-apiserver's registry: the main
// endpoint changes metadata only; /approval changes only the conditions
// (kubectl certificate approve/deny; the CertificateApproval admission
// plugin checks the approver); /status changes the certificate and the
// conditions other than Approved and Denied (the signer; the
// CertificateSigning admission plugin checks it). Both subresources give
// conditions missing timestamps now.
func certificateSigningRequests(now func() time.Time) *resource.Resource {
	k := kind[*certificatesv1.CertificateSigningRequest]{
		namespaced: false,
		// Any name, as kube-apiserver's (its name validation accepts
		// every name; the request path still refuses "/", "%", "." and
		// ".."): the kubelet's bootstrap requests are
		// node-csr-<base64url digest>, with upper case and "_".
		nameFn: func(string, bool) []string { return nil },
		prepareForCreate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = certificatesv1.CertificateSigningRequestStatus{}
		},
		prepareForUpdate: func(c, old *certificatesv1.CertificateSigningRequest) {
			c.Spec = old.Spec
			c.Status = old.Status
		},
		validateCreate: validateCSRCreate,
		validateUpdate: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
			return validateCSRUpdate(c, old, csrWrites{})
		},
		table: &tableSpec[*certificatesv1.CertificateSigningRequest]{columns: csrColumns, cells: csrCells},
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
			keep: func(c, old *certificatesv1.CertificateSigningRequest) {
				c.Spec = old.Spec
				keepApprovalConditions(c, old)
				fillConditionTimes(c, old, now())
			},
			validate: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
				return validateCSRUpdate(c, old, csrWrites{certificate: true})
			},
		}},
		Approval: statusStrategy[*certificatesv1.CertificateSigningRequest]{s: s.strategy, k: statusKind[*certificatesv1.CertificateSigningRequest]{
			keep: func(c, old *certificatesv1.CertificateSigningRequest) {
				fillConditionTimes(c, old, now())
				conditions := c.Status.Conditions
				c.Spec = old.Spec
				c.Status = *old.Status.DeepCopy()
				c.Status.Conditions = conditions
			},
			validate: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
				return validateCSRUpdate(c, old, csrWrites{approval: true})
			},
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
