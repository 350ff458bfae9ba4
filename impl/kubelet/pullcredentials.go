package kubelet

import (
	"context"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// Image pull credential verification, as upstream's kubelet with
// KubeletEnsureSecretPulledImages (beta, on by default since 1.35; we have
// no gate to turn it off): an image present on the node is used by a pod
// without a pull only if the verification policy
// (Config.ImagePullCredentialsVerificationPolicy, upstream's default
// NeverVerifyPreloadedImages, and its allowlist) exempts it or the pod can
// prove its access: the image was pulled with none of a
// pod's credentials, or with credentials of one of the pod's pull secrets
// (the same secret, or one of the same contents), or with a credential
// provider plugin's for the pod's service account (token mode). Otherwise an
// IfNotPresent container pulls it again with its own credentials, and a
// Never container fails as if the image were not there (ErrImageNeverPull),
// so that a pod learns nothing of images it may not use.

// openPullRecords opens the kubelet's image pull records: in
// <RootDir>/image_manager as upstream's when the configuration named a
// root directory (rootGiven), in memory otherwise (tests, which would
// share the default /var/lib/kubelet) or when it says so
// (Config.PullRecordsInMemory: simulated nodes sharing a root directory).
func openPullRecords(cfg *Config, rootGiven bool, k *Kubelet) (*pullrecords.Store, error) {
	dir := ""
	if rootGiven && !cfg.PullRecordsInMemory {
		dir = filepath.Join(cfg.RootDir, "image_manager")
	}
	var now func() time.Time
	if cfg.Clock != nil {
		now = cfg.Clock.Now
	}
	return pullrecords.Open(dir, now, k.log)
}

// noPodCredentials is the pull credentials of a pod that has none (a
// function value that costs no allocation per container start).
func noPodCredentials() (pullrecords.PodCredentials, error) { return pullrecords.PodCredentials{}, nil }

// podPullCredentials is what MustPull compares with the records, as
// upstream's getPodCredentials: the pod's credentials for image that came
// from its pull secrets, and the service account of the first that a
// credential provider plugin gave for the pod's service account.
func podPullCredentials(keyring *credentials.Keyring, image string) pullrecords.PodCredentials {
	var out pullrecords.PodCredentials
	for _, t := range keyring.LookupTracked(image) {
		switch {
		case t.Source != nil:
			out.Secrets = append(out.Secrets, pullrecords.Secret{UID: t.Source.UID, Namespace: t.Source.Namespace, Name: t.Source.Name, CredentialHash: t.Hash})
		case t.ServiceAccount != nil && out.ServiceAccount == nil:
			out.ServiceAccount = &pullrecords.ServiceAccount{UID: t.ServiceAccount.UID, Namespace: t.ServiceAccount.Namespace, Name: t.ServiceAccount.Name}
		}
	}
	return out
}

// pulledWith is the record of a pull made with used, as upstream's
// trackedToImagePullCreds: nil, or the node's own credentials: any pod of
// the node may use the image; a secret's: that secret; a service
// account's (a plugin in token mode): that service account.
func pulledWith(used *credentials.Tracked) pullrecords.Credentials {
	switch {
	case used == nil || (used.Source == nil && used.ServiceAccount == nil):
		return pullrecords.Credentials{NodePodsAccessible: true}
	case used.Source != nil:
		return pullrecords.Credentials{KubernetesSecrets: []pullrecords.Secret{{
			UID: used.Source.UID, Namespace: used.Source.Namespace, Name: used.Source.Name, CredentialHash: used.Hash}}}
	default:
		return pullrecords.Credentials{KubernetesServiceAccounts: []pullrecords.ServiceAccount{{
			UID: used.ServiceAccount.UID, Namespace: used.ServiceAccount.Namespace, Name: used.ServiceAccount.Name}}}
	}
}

// serviceAccountAPI is the kubelet's client as credential provider
// plugins in token mode need it (credentials.ServiceAccountAPI), for the
// requests of one pod sync (ctx): a get of the pod's service account, as
// upstream's kubelet (the Node authorizer allows it for the service
// accounts of the node's pods), and a TokenRequest.
type serviceAccountAPI struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (a serviceAccountAPI) ServiceAccount(namespace, name string) (*v1.ServiceAccount, error) {
	return a.client.CoreV1().ServiceAccounts(namespace).Get(a.ctx, name, metav1.GetOptions{})
}

func (a serviceAccountAPI) CreateToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return a.client.CoreV1().ServiceAccounts(namespace).CreateToken(a.ctx, name, tr, metav1.CreateOptions{})
}

// podCredentialsForgetter is node credentials holding something per pod
// (credentialprovider.Providers: the service account tokens requested
// bound to a pod for plugins in token mode).
type podCredentialsForgetter interface {
	ForgetPod(uid types.UID)
}

// forgetPodCredentials drops what the node's credentials hold for the pod
// uid once it is removed from the kubelet, as upstream's kubelet drops the
// pod's service account tokens (DeleteServiceAccountToken, called when its
// projected volumes are torn down; here with the pod's directory,
// removePodDir). No allocation.
func (k *Kubelet) forgetPodCredentials(uid types.UID) {
	if f, ok := k.cfg.ImageCredentialProviders.(podCredentialsForgetter); ok {
		f.ForgetPod(uid)
	}
}

// prunePullRecords is the image garbage collector's post GC hook, as
// upstream's PullManager.PruneUnknownRecords: the pull records of the
// images not among those the collection left (remaining: the candidates
// freeSpace did not remove, so not the images in use; gc.PostGCHook) are
// forgotten, so that an image pulled again is recorded afresh (and one
// put there by other means, or in use, counts as preloaded again).
func (k *Kubelet) prunePullRecords(_ context.Context, remaining []string, began time.Time) {
	k.pulls.PruneUnknownRecords(remaining, began)
}
