package serviceaccount

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The decisions of the tokens controller (kube-controller-manager's
// "serviceaccount-token"): pure functions of the observed secret and
// service account; tokens.go does the reads and writes.

// TokenSecretAction is what the tokens controller does about one
// kubernetes.io/service-account-token Secret.
type TokenSecretAction int

// The tokens controller's actions on a secret.
const (
	// TokenSecretKeep: nothing to write.
	TokenSecretKeep TokenSecretAction = iota
	// TokenSecretDelete: its service account does not exist (or was
	// recreated under another uid); the secret is deleted with a uid
	// precondition.
	TokenSecretDelete
	// TokenSecretFill: data.token, data.namespace or data.ca.crt are to be
	// (re)written (TokenSecretDecision says which), with the account's
	// name and uid annotations.
	TokenSecretFill
)

// TokenSecretDecision is the controller's decision for one secret.
type TokenSecretDecision struct {
	Action TokenSecretAction
	// With TokenSecretFill: which data keys to write. SetCA: ca.crt differs
	// from the root CA; SetNamespace: namespace is empty; SetToken: token
	// is empty.
	SetCA, SetNamespace, SetToken bool
}

// IsTokenSecretOf reports whether secret is a service account token secret
// of the account namespace/name: its type is kubernetes.io/service-account-token,
// its kubernetes.io/service-account.name annotation names the account and
// its kubernetes.io/service-account.uid annotation, when set, is uid.
func IsTokenSecretOf(secret *corev1.Secret, namespace, name string, uid types.UID) bool {
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Namespace != namespace {
		return false
	}
	if secret.Annotations[corev1.ServiceAccountNameKey] != name {
		return false
	}
	annotated := secret.Annotations[corev1.ServiceAccountUIDKey]
	return annotated == "" || uid == "" || annotated == string(uid)
}

// DecideTokenSecret decides what to do about secret, whose service account
// (the one its annotations name, with the annotated uid when there is one)
// is sa, nil when there is no such account. rootCA is the bundle written as
// ca.crt (--root-ca-file; empty: ca.crt is left alone).
func DecideTokenSecret(secret *corev1.Secret, sa *corev1.ServiceAccount, rootCA []byte) TokenSecretDecision {
	if secret == nil || secret.Type != corev1.SecretTypeServiceAccountToken {
		return TokenSecretDecision{}
	}
	if sa == nil {
		return TokenSecretDecision{Action: TokenSecretDelete}
	}
	d := TokenSecretDecision{
		SetCA:        len(rootCA) > 0 && !bytes.Equal(secret.Data[corev1.ServiceAccountRootCAKey], rootCA),
		SetNamespace: len(secret.Data[corev1.ServiceAccountNamespaceKey]) == 0,
		SetToken:     len(secret.Data[corev1.ServiceAccountTokenKey]) == 0,
	}
	if d.SetCA || d.SetNamespace || d.SetToken {
		d.Action = TokenSecretFill
	}
	return d
}

// FillTokenSecret is secret as the controller writes it for decision d: a
// copy with the data keys d names filled (token is the signed legacy token,
// used when d.SetToken) and the account's name and uid annotations set.
func FillTokenSecret(secret *corev1.Secret, sa *corev1.ServiceAccount, d TokenSecretDecision, rootCA []byte, token string) *corev1.Secret {
	out := secret.DeepCopy()
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if d.SetCA {
		out.Data[corev1.ServiceAccountRootCAKey] = bytes.Clone(rootCA)
	}
	if d.SetNamespace {
		out.Data[corev1.ServiceAccountNamespaceKey] = []byte(out.Namespace)
	}
	if d.SetToken {
		out.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	out.Annotations[corev1.ServiceAccountNameKey] = sa.Name
	out.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	return out
}

// TokenSecretsOfDeletedAccount are the secrets to delete once the service
// account namespace/name with uid is gone: every token secret of it.
func TokenSecretsOfDeletedAccount(namespace, name string, uid types.UID, secrets []*corev1.Secret) []*corev1.Secret {
	var out []*corev1.Secret
	for _, s := range secrets {
		if IsTokenSecretOf(s, namespace, name, uid) {
			out = append(out, s)
		}
	}
	return out
}

// WithoutSecretReference is sa with secretName taken out of .secrets, or
// nil when sa does not reference it (nothing to write).
func WithoutSecretReference(sa *corev1.ServiceAccount, secretName string) *corev1.ServiceAccount {
	var kept []corev1.ObjectReference
	found := false
	for _, ref := range sa.Secrets {
		if ref.Name == secretName {
			found = true
			continue
		}
		kept = append(kept, ref)
	}
	if !found {
		return nil
	}
	out := sa.DeepCopy()
	out.Secrets = kept
	return out
}
