// Package pullrecords is the kubelet's memory of the images it pulled and
// of the credentials each pull used, and the decision whether a pod may use
// an image already present without pulling it, as upstream's image pull
// manager (pkg/kubelet/images/pullmanager) with KubeletEnsureSecretPulledImages
// (alpha in 1.33, beta and on by default since 1.35).
//
// A record is kept per image reference (the runtime's image id) and maps
// each repository the image was asked for by ("docker.io/library/nginx":
// the pod's image without tag or digest, normalized) to the credentials
// that pulled it: NodePodsAccessible when a pull needed none of a pod's
// secrets (any pod of the node may use it), otherwise the secrets (UID,
// namespace, name and a hash of the credential's contents) whose
// credentials pulled it, or the service accounts (UID, namespace, name)
// whose tokens a credential provider plugin exchanged for them. MustPull decides, with the node's verification
// policy (default NeverVerifyPreloadedImages: images the kubelet did not
// pull are used by any pod), whether a pod must pull a present image again
// to prove it may access it. The decision is a pure function; Store keeps
// the records in memory and, given a directory, in files that survive a
// restart, and after an image garbage collection forgets those of the
// images it did not leave among its candidates, as upstream (the images
// it removed, and also those in use: PruneUnknownRecords, its post GC
// hook).
package pullrecords

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// Policy is the kubelet's imagePullCredentialsVerificationPolicy.
type Policy string

// The verification policies, as upstream's kubelet configuration.
const (
	// NeverVerify: any pod may use any present image.
	NeverVerify Policy = "NeverVerify"
	// NeverVerifyPreloadedImages: images the kubelet did not pull are
	// used by any pod; the ones it pulled are verified. Upstream's default.
	NeverVerifyPreloadedImages Policy = "NeverVerifyPreloadedImages"
	// NeverVerifyAllowlistedImages: images of the allowlist are used by
	// any pod, all others are verified.
	NeverVerifyAllowlistedImages Policy = "NeverVerifyAllowlistedImages"
	// AlwaysVerify: every present image is verified.
	AlwaysVerify Policy = "AlwaysVerify"

	// DefaultPolicy is upstream's default with the feature gate on.
	DefaultPolicy = NeverVerifyPreloadedImages
)

// Secret is an image pull secret whose credential pulled an image: its
// coordinates and the hash of the credential (credentials.HashAuth), as
// upstream's ImagePullSecret.
type Secret struct {
	UID            string `json:"uid"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	CredentialHash string `json:"credentialHash"`
}

// ServiceAccount is a pod's service account whose token a credential
// provider plugin exchanged for the credentials that pulled an image
// (KubeletServiceAccountTokenForCredentialProviders), as upstream's
// ImagePullServiceAccount.
type ServiceAccount struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Credentials are what pulled an image for one repository, as upstream's
// ImagePullCredentials.
type Credentials struct {
	KubernetesSecrets         []Secret         `json:"kubernetesSecrets,omitempty"`
	KubernetesServiceAccounts []ServiceAccount `json:"kubernetesServiceAccounts,omitempty"`
	NodePodsAccessible        bool             `json:"nodePodsAccessible,omitempty"`
}

// empty: no credentials named (a pull the kubelet cannot attribute).
func (c Credentials) empty() bool {
	return !c.NodePodsAccessible && len(c.KubernetesSecrets) == 0 && len(c.KubernetesServiceAccounts) == 0
}

// PodCredentials are what a pod proves its access to an image with: its
// credentials for the image that came from its pull secrets, and the
// service account of the first that came from a credential provider
// plugin in service account token mode (nil: none), as upstream's
// getPodCredentials (one service account per pod: the audience is not
// compared).
type PodCredentials struct {
	Secrets        []Secret
	ServiceAccount *ServiceAccount
}

// Record is what the kubelet knows of the pulls of one image, as upstream's
// ImagePulledRecord (and stored in the same JSON shape).
type Record struct {
	Kind              string                 `json:"kind"`
	APIVersion        string                 `json:"apiVersion"`
	LastUpdatedTime   time.Time              `json:"lastUpdatedTime"`
	ImageRef          string                 `json:"imageRef"`
	CredentialMapping map[string]Credentials `json:"credentialMapping,omitempty"`
}

// Record kind and version, as upstream's.
const (
	recordKind       = "ImagePulledRecord"
	recordAPIVersion = "kubelet.config.k8s.io/v1alpha1"
)

// writeWhileMatchingLimit: past this many secrets in a record, a match by
// hash alone or by coordinates alone is not written back (upstream's
// writeRecordWhileMatchingLimit, against namespace churn).
const writeWhileMatchingLimit = 100

// Repository is image without tag or digest, normalized
// ("nginx:1.27" is "docker.io/library/nginx"): the key of a record's
// credential mapping, as upstream's trimImageTagDigest.
func Repository(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", err
	}
	return named.Name(), nil
}

// RequireVerification reports whether policy wants a pod's access to the
// image of repository repo (Repository's; "" when the image does not
// parse) verified; pulledByKubelet says the kubelet pulled it (or is
// pulling it), allowlist holds NeverVerifyAllowlistedImages' patterns: a
// repository ("registry.example/app") or a prefix ending in "/*"
// ("registry.example/team/*"). As upstream's ImagePullPolicyEnforcers.
func RequireVerification(policy Policy, allowlist []string, repo string, pulledByKubelet bool) bool {
	switch policy {
	case NeverVerify:
		return false
	case NeverVerifyPreloadedImages:
		return pulledByKubelet
	case NeverVerifyAllowlistedImages:
		if repo == "" {
			return true
		}
		for _, p := range allowlist {
			if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasSuffix(prefix, "/") {
				if strings.HasPrefix(repo, prefix) {
					return false
				}
			} else if p == repo {
				return false
			}
		}
		return true
	default: // AlwaysVerify, and any policy we do not know
		return true
	}
}

// Validate checks a kubelet's imagePullCredentialsVerificationPolicy
// (already defaulted: "" is not valid) and preloadedImagesVerificationAllowlist
// (ValidationErrors). Several errors are reported as upstream's aggregate
// ("[a, b]").
func Validate(policy Policy, allowlist []string) error {
	errs := ValidationErrors(policy, allowlist)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}

// ValidationErrors are the errors upstream's kubelet configuration
// validation finds, with KubeletEnsureSecretPulledImages on, in a policy
// and allowlist, in its order and with its messages (its typo
// "Vertification" too): a known policy; an allowlist only with
// NeverVerifyAllowlistedImages, its patterns checked otherwise
// (allowlistPattern; the first bad one reported).
func ValidationErrors(policy Policy, allowlist []string) []error {
	var errs []error
	switch policy {
	case NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify:
	default:
		errs = append(errs, fmt.Errorf("invalid configuration: option %q specified for imagePullCredentialsVerificationPolicy. Valid options are %q, %q, %q or %q",
			policy, NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify))
	}
	if len(allowlist) > 0 && policy != NeverVerifyAllowlistedImages {
		errs = append(errs, errors.New("invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""))
	} else {
		for _, p := range allowlist {
			if err := allowlistPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: %w", err))
				break
			}
		}
	}
	return errs
}

// allowlistPattern checks one allowlist pattern as upstream's
// getAllowlistImagePattern: no surrounding spaces; either a repository
// without tag or digest, written as it normalizes
// ("docker.io/library/nginx", not "nginx"), or a prefix ending in "/*"
// with something before it and no other "*".
func allowlistPattern(pattern string) error {
	if pattern != strings.TrimSpace(pattern) {
		return fmt.Errorf("leading/trailing spaces are not allowed: %s", pattern)
	}
	trimmed, wildcard := pattern, false
	if strings.HasSuffix(pattern, "/*") {
		trimmed, wildcard = strings.TrimSuffix(pattern, "*"), true
	}
	if trimmed == "" {
		return fmt.Errorf("the supplied pattern is too short: %s", pattern)
	}
	if strings.ContainsRune(trimmed, '*') {
		return fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s", pattern)
	}
	if wildcard {
		if len(trimmed) == 1 {
			return errors.New("at least registry hostname is required")
		}
		return nil
	}
	named, err := reference.ParseNormalizedNamed(trimmed)
	if err != nil {
		return fmt.Errorf("failed to parse as an image name: %w", err)
	}
	if trimmed != named.Name() {
		return fmt.Errorf("neither tag nor digest is accepted in an image reference: %s", pattern)
	}
	return nil
}

// Verdict is MustPull's answer.
type Verdict struct {
	// Pull: the pod must pull the image (IfNotPresent and Always) or may
	// not use it (Never, as if it were not present).
	Pull bool
	// Learned, when not nil, is a pod secret that matched the record by
	// credential hash alone (another secret with the same contents) or by
	// coordinates alone (the secret's contents changed since): upstream
	// records it, so that it matches outright next time.
	Learned *Secret
}

// MustPull decides whether a pod may use an image of repository repo
// (Repository's; "" when the image does not parse), present on the node,
// or must pull it again, as upstream's PullManager.MustAttemptImagePull: rec
// is the image's record (nil: none), pulling that a pull of image by the
// kubelet is under way or was interrupted, podCreds the pod's credentials
// for the image (asked only when the record holds secrets or service
// accounts to compare with; its error is returned, with a pull).
//
//   - Images the policy exempts are used (for the default policy: images
//     the kubelet neither pulled nor is pulling).
//   - With no record, or none for image's repository, the pod pulls.
//   - A repository pulled without a pod's credentials is used by any pod.
//   - Otherwise the pod may use it if one of its secrets has the credential
//     hash of one that pulled it, or is the same secret (UID, namespace,
//     name) whatever its contents now, or if its service account (UID,
//     namespace and name, all three) is one whose token pulled it.
func MustPull(policy Policy, allowlist []string, repo string, rec *Record, pulling bool, podCreds func() (PodCredentials, error)) (Verdict, error) {
	if !RequireVerification(policy, allowlist, repo, rec != nil || pulling) {
		return Verdict{}, nil
	}
	if rec == nil || repo == "" {
		return Verdict{Pull: true}, nil // "": cannot tell which credentials, verify
	}
	cached, ok := rec.CredentialMapping[repo]
	if !ok {
		return Verdict{Pull: true}, nil
	}
	if cached.NodePodsAccessible {
		return Verdict{}, nil
	}
	if len(cached.KubernetesSecrets) == 0 && len(cached.KubernetesServiceAccounts) == 0 {
		return Verdict{Pull: true}, nil
	}
	pod, err := podCreds()
	if err != nil {
		return Verdict{Pull: true}, err
	}
	learn := len(cached.KubernetesSecrets) < writeWhileMatchingLimit
	for i := range pod.Secrets {
		s := &pod.Secrets[i]
		for _, c := range cached.KubernetesSecrets {
			hashes := c.CredentialHash != "" && s.CredentialHash == c.CredentialHash
			coords := s.UID == c.UID && s.Namespace == c.Namespace && s.Name == c.Name
			switch {
			case hashes && coords:
				return Verdict{}, nil
			case hashes:
				// Another secret with the same contents.
				v := Verdict{}
				if learn {
					learned := *s
					v.Learned = &learned
				}
				return v, nil
			case coords && learn:
				// The same secret, its contents changed since. (Past
				// the limit upstream does not accept it: a quirk kept.)
				learned := *s
				return Verdict{Learned: &learned}, nil
			}
		}
	}
	if pod.ServiceAccount != nil && slices.Contains(cached.KubernetesServiceAccounts, *pod.ServiceAccount) {
		return Verdict{}, nil
	}
	return Verdict{Pull: true}, nil
}

// Merge is rec (nil: none yet) for image ref after a pull of repo with
// creds at now, and whether it changed; rec itself is never modified (a
// changed record is a copy), as upstream's pulledRecordMergeNewCreds:
// NodePodsAccessible replaces any secrets and service accounts and is
// kept once set; secrets are added (or their hash updated) by
// coordinates, kept sorted by namespace, name and UID; failing secrets,
// service accounts are added (UID, namespace and name), kept sorted the
// same way. A new record with empty creds maps nothing: the kubelet
// pulled the image with credentials it cannot name, so every pod is
// verified.
func Merge(rec *Record, ref, repo string, creds Credentials, now time.Time) (*Record, bool) {
	empty := creds.empty()
	if rec == nil {
		out := &Record{Kind: recordKind, APIVersion: recordAPIVersion, LastUpdatedTime: now, ImageRef: ref,
			CredentialMapping: map[string]Credentials{}}
		if !empty {
			out.CredentialMapping[repo] = creds
		}
		return out, true
	}
	if empty {
		return rec, false
	}
	cur, found := rec.CredentialMapping[repo]
	var next Credentials
	switch {
	case !found:
		next = creds
	case cur.NodePodsAccessible:
		return rec, false
	case creds.NodePodsAccessible:
		next = Credentials{NodePodsAccessible: true}
	case len(creds.KubernetesSecrets) > 0:
		merged, changed := mergeSecrets(cur.KubernetesSecrets, creds.KubernetesSecrets)
		if !changed {
			return rec, false
		}
		next = Credentials{KubernetesSecrets: merged, KubernetesServiceAccounts: cur.KubernetesServiceAccounts}
	default:
		merged, changed := mergeServiceAccounts(cur.KubernetesServiceAccounts, creds.KubernetesServiceAccounts)
		if !changed {
			return rec, false
		}
		next = Credentials{KubernetesSecrets: cur.KubernetesSecrets, KubernetesServiceAccounts: merged}
	}
	out := &Record{Kind: recordKind, APIVersion: recordAPIVersion, LastUpdatedTime: now, ImageRef: rec.ImageRef,
		CredentialMapping: make(map[string]Credentials, len(rec.CredentialMapping)+1)}
	for k, v := range rec.CredentialMapping {
		out.CredentialMapping[k] = v
	}
	out.CredentialMapping[repo] = next
	return out, true
}

// mergeServiceAccounts adds add to orig (a service account is its UID,
// namespace and name), sorted by namespace, name and UID; orig itself is
// not modified.
func mergeServiceAccounts(orig, add []ServiceAccount) ([]ServiceAccount, bool) {
	out := append([]ServiceAccount(nil), orig...)
	changed := false
	for _, sa := range add {
		if !slices.Contains(out, sa) {
			out = append(out, sa)
			changed = true
		}
	}
	if !changed {
		return orig, false
	}
	slices.SortFunc(out, func(a, b ServiceAccount) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.UID, b.UID)
	})
	return out, true
}

// mergeSecrets adds add to orig by coordinates (an added secret's hash
// wins), sorted by namespace, name and UID; orig itself is not modified.
func mergeSecrets(orig, add []Secret) ([]Secret, bool) {
	out := append([]Secret(nil), orig...)
	changed := false
	for _, s := range add {
		i := 0
		for ; i < len(out); i++ {
			if out[i].UID == s.UID && out[i].Namespace == s.Namespace && out[i].Name == s.Name {
				break
			}
		}
		switch {
		case i == len(out):
			out = append(out, s)
			changed = true
		case out[i].CredentialHash != s.CredentialHash:
			out[i].CredentialHash = s.CredentialHash
			changed = true
		}
	}
	if !changed {
		return orig, false
	}
	sortSecrets(out)
	return out, true
}

func sortSecrets(s []Secret) {
	slices.SortFunc(s, func(a, b Secret) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.UID, b.UID)
	})
}

// Unknown is which of records (by image reference) to forget after an
// image garbage collection that began at until and left the images of
// keep: those of images not kept, last updated before until (a record
// written since may be of an image pulled during the collection), as
// upstream's PruneUnknownRecords. Sorted.
func Unknown(records map[string]*Record, keep []string, until time.Time) []string {
	var out []string
	for ref, r := range records {
		if r.LastUpdatedTime.Before(until) && !slices.Contains(keep, ref) {
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}
