package certificates

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestApproverTriesSelfThenNodeClient: as kube-controller-manager's
// csrapproving recognizers, a node's request for its own identity is
// approved when the node may create certificatesigningrequests/selfnodeclient
// ("Auto approving self kubelet client certificate after
// SubjectAccessReview."), else when it may create /nodeclient (the new
// node message); another requester's only through /nodeclient; with
// neither nothing is written and the sync fails, to be retried.
func TestApproverTriesSelfThenNodeClient(t *testing.T) {
	cases := map[string]struct {
		requester string
		allowed   []string // subresources the SubjectAccessReview allows
		asked     []string
		message   string // "" = not approved
	}{
		"self, selfnodeclient":     {"system:node:joiner", []string{"selfnodeclient"}, []string{"selfnodeclient"}, MessageSelfAutoApproved},
		"self, nodeclient only":    {"system:node:joiner", []string{"nodeclient"}, []string{"selfnodeclient", "nodeclient"}, MessageAutoApproved},
		"self, neither":            {"system:node:joiner", nil, []string{"selfnodeclient", "nodeclient"}, ""},
		"bootstrapper, nodeclient": {"system:bootstrap:abcdef", []string{"nodeclient", "selfnodeclient"}, []string{"nodeclient"}, MessageAutoApproved},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			csr := csrFor(t, tc.requester, joiner)
			client := fake.NewSimpleClientset(csr)
			var asked []string
			client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				sub := sar.Spec.ResourceAttributes.Subresource
				asked = append(asked, sub)
				for _, a := range tc.allowed {
					if a == sub && sar.Spec.User == tc.requester {
						sar.Status.Allowed = true
					}
				}
				return true, sar, nil
			})
			a := &Approver{l: &loop{client: client, now: time.Now}}
			err := a.sync(context.Background(), csr)
			if tc.message != "" && err != nil {
				t.Fatal(err)
			}
			// Not approved: an error, so the request is retried with
			// back-off (RBAC may allow it later), upstream's message.
			if want := `recognized csr "node-csr-1" as [selfnodeclient nodeclient] but subject access review was not approved`; tc.message == "" && (err == nil || err.Error() != want) {
				t.Errorf("error %v, want %q", err, want)
			}
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked %v, want %v", asked, tc.asked)
			}
			got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), csr.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.message == "" && len(got.Status.Conditions) != 0:
				t.Errorf("conditions %+v, want none", got.Status.Conditions)
			case tc.message != "" && (len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved ||
				got.Status.Conditions[0].Reason != ReasonAutoApproved || got.Status.Conditions[0].Message != tc.message):
				t.Errorf("conditions %+v, want Approved AutoApproved %q", got.Status.Conditions, tc.message)
			}
		})
	}
}
