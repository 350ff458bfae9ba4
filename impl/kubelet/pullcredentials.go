package kubelet

import (
	"context"
	"path/filepath"
	"time"

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
// (the same secret, or one of the same contents). Otherwise an
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

// noPodSecrets is the pull secrets of a pod that has none (a function
// value that costs no allocation per container start).
func noPodSecrets() ([]pullrecords.Secret, error) { return nil, nil }

// podPullSecrets is what MustPull compares with the records: the pod's
// credentials for image that came from its pull secrets.
func podPullSecrets(keyring *credentials.Keyring, image string) []pullrecords.Secret {
	var out []pullrecords.Secret
	for _, t := range keyring.LookupTracked(image) {
		if t.Source != nil {
			out = append(out, pullrecords.Secret{UID: t.Source.UID, Namespace: t.Source.Namespace, Name: t.Source.Name, CredentialHash: t.Hash})
		}
	}
	return out
}

// pulledWith is the record of a pull made with used (nil, or not from a
// secret: any pod of the node may use the image).
func pulledWith(used *credentials.Tracked) pullrecords.Credentials {
	if used == nil || used.Source == nil {
		return pullrecords.Credentials{NodePodsAccessible: true}
	}
	return pullrecords.Credentials{KubernetesSecrets: []pullrecords.Secret{{
		UID: used.Source.UID, Namespace: used.Source.Namespace, Name: used.Source.Name, CredentialHash: used.Hash}}}
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
