package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodCertificateProjectionValidationAsUpstream: a projected volume's
// podCertificate source (PodCertificateRequest, GA in 1.37) is checked as
// upstream's validateProjectionSources: the signer name's syntax
// (ValidateSignerName), the user annotations' keys and size, a known key
// type, maxExpirationSeconds from an hour to 91 days (24 hours for
// kubernetes.io signers), and at least one credential path, each a local
// non-reserved path claimed once across the volume's sources.
func TestPodCertificateProjectionValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const src = "spec.volumes[0].projected.sources[0].podCertificate"
	valid := func() *corev1.PodCertificateProjection {
		return &corev1.PodCertificateProjection{SignerName: "example.com/foo", KeyType: "ECDSAP256", CredentialBundlePath: "cred.pem"}
	}
	cases := []struct {
		name    string
		mutate  func(pc *corev1.PodCertificateProjection)
		others  []corev1.VolumeProjection
		want    []string
		details []string
	}{
		{"valid: every key type and the three paths", func(pc *corev1.PodCertificateProjection) {
			pc.KeyPath, pc.CertificateChainPath = "tls.key", "certs/chain.pem"
			pc.MaxExpirationSeconds = ptr(int32(7862400))
			pc.UserAnnotations = map[string]string{"Example.com/Key": "any value"}
		}, nil, nil, nil},
		{"nothing set", func(pc *corev1.PodCertificateProjection) {
			*pc = corev1.PodCertificateProjection{}
		}, nil, []string{required + " " + src + ".signerName", notSupported + " " + src + ".keyType", required + " " + src}, []string{
			src + `.keyType: Unsupported value: "": supported values: "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"`,
			src + ": Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath",
		}},
		{"signer without a path", func(pc *corev1.PodCertificateProjection) { pc.SignerName = "signer" }, nil,
			[]string{invalid + " " + src + ".signerName"},
			[]string{src + `.signerName: Invalid value: "signer": must be a fully qualified domain and path of the form 'example.com/signer-name'`}},
		{"signer with a one-label domain and a bad path", func(pc *corev1.PodCertificateProjection) { pc.SignerName = "example/Foo" }, nil,
			[]string{invalid + " " + src + ".signerName", invalid + " " + src + ".signerName"},
			[]string{src + `.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots`,
				src + `.signerName: Invalid value: "Foo": validating label "Foo": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"unknown key type", func(pc *corev1.PodCertificateProjection) { pc.KeyType = "RSA2048" }, nil,
			[]string{notSupported + " " + src + ".keyType"}, nil},
		{"lifetime under an hour", func(pc *corev1.PodCertificateProjection) { pc.MaxExpirationSeconds = ptr(int32(3599)) }, nil,
			[]string{invalid + " " + src + ".maxExpirationSeconds"},
			[]string{src + ".maxExpirationSeconds: Invalid value: 3599: if provided, maxExpirationSeconds must be >= 3600"}},
		{"lifetime over 91 days", func(pc *corev1.PodCertificateProjection) { pc.MaxExpirationSeconds = ptr(int32(7862401)) }, nil,
			[]string{invalid + " " + src + ".maxExpirationSeconds"},
			[]string{src + ".maxExpirationSeconds: Invalid value: 7862401: if provided, maxExpirationSeconds must be <= 7862400"}},
		{"kubernetes.io signers: at most a day", func(pc *corev1.PodCertificateProjection) {
			pc.SignerName, pc.MaxExpirationSeconds = "clusters.kubernetes.io/pods", ptr(int32(86401))
		}, nil, []string{invalid + " " + src + ".maxExpirationSeconds"},
			[]string{src + ".maxExpirationSeconds: Invalid value: 86401: if provided, maxExpirationSeconds must be <= 86400"}},
		{"paths: relative, not reserved, not used twice", func(pc *corev1.PodCertificateProjection) {
			pc.CredentialBundlePath, pc.KeyPath, pc.CertificateChainPath = "ca.pem", "/abs/key", "..chain"
		}, []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "ca.pem"}}}}},
			[]string{invalid + " " + src + ".keyPath", invalid + " " + src + ".certificateChainPath", invalid + " spec.volumes[0].projected"},
			[]string{src + `.keyPath: Invalid value: "/abs/key": must be a relative path`,
				src + `.certificateChainPath: Invalid value: "..chain": must not start with '..'`,
				// The later source reports the conflict, with its own name.
				`spec.volumes[0].projected: Invalid value: "c": conflicting duplicate paths`}},
		{"the key and chain in one file", func(pc *corev1.PodCertificateProjection) {
			pc.CredentialBundlePath, pc.KeyPath, pc.CertificateChainPath = "", "same.pem", "same.pem"
		}, nil, []string{invalid + " spec.volumes[0].projected"},
			[]string{`spec.volumes[0].projected: Invalid value: "same.pem": conflicting duplicate paths`}},
		{"user annotation keys are domain-prefixed", func(pc *corev1.PodCertificateProjection) {
			pc.UserAnnotations = map[string]string{"Plain": "v"}
		}, nil, []string{invalid + " " + src + ".userAnnotations"},
			[]string{src + `.userAnnotations: Invalid value: "plain": must be a domain-prefixed key (such as "acme.io/foo")`}},
		{"user annotations within the annotations' size", func(pc *corev1.PodCertificateProjection) {
			pc.UserAnnotations = map[string]string{"example.com/big": strings.Repeat("x", 256*1024)}
		}, nil, []string{tooLong + " " + src + ".userAnnotations"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pc := valid()
			tc.mutate(pc)
			p := newPod("p")
			p.Spec.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: append([]corev1.VolumeProjection{{PodCertificate: pc}}, tc.others...)}}}}
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestClusterTrustBundleProjectionNamesAsUpstream: a projected
// clusterTrustBundle's name is a ClusterTrustBundle name (a signer's
// bundle "<signer with / as :>:<subdomain>", any other a DNS-1123
// subdomain) and its signerName a signer name, as upstream's
// validateProjectionSources.
func TestClusterTrustBundleProjectionNamesAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const src = "spec.volumes[0].projected.sources[0].clusterTrustBundle"
	cases := []struct {
		name    string
		ctb     corev1.ClusterTrustBundleProjection
		want    []string
		details []string
	}{
		{"a plain name", corev1.ClusterTrustBundleProjection{Name: ptr("ca-bundle")}, nil, nil},
		{"a signer's bundle", corev1.ClusterTrustBundleProjection{Name: ptr("example.com:signer:v1")}, nil, nil},
		{"a name that is no subdomain", corev1.ClusterTrustBundleProjection{Name: ptr("CA_Bundle")},
			[]string{invalid + " " + src + ".name"}, nil},
		{"a signer's bundle with a bad last part", corev1.ClusterTrustBundleProjection{Name: ptr("example.com:signer:V1")},
			[]string{invalid + " " + src + ".name"}, nil},
		{"a slash before the last colon", corev1.ClusterTrustBundleProjection{Name: ptr("example.com/signer:v1")},
			[]string{invalid + " " + src + ".name"},
			[]string{src + `.name: Invalid value: "example.com/signer:v1": not a valid clustertrustbundlename: ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:`}},
		{"an empty name", corev1.ClusterTrustBundleProjection{Name: ptr("")},
			[]string{required + " " + src + ".name", invalid + " " + src + ".name"}, nil},
		{"a signer name", corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/signer")}, nil, nil},
		{"a signer name without a path", corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com")},
			[]string{invalid + " " + src + ".signerName"},
			[]string{src + `.signerName: Invalid value: "example.com": must be a fully qualified domain and path of the form 'example.com/signer-name'`}},
		{"an empty signer name", corev1.ClusterTrustBundleProjection{SignerName: ptr("")},
			[]string{required + " " + src + ".signerName", required + " " + src + ".signerName"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctb := tc.ctb
			ctb.Path = "ca.pem"
			p := newPod("p")
			p.Spec.Volumes = []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &ctb}}}}}}
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
