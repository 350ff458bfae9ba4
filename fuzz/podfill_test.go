package fuzz

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"
)

// fillFuncs are the randfill functions of the structured targets
// (FuzzDecode, FuzzHTTP's randfill bodies): apimachinery's meta fuzzer
// functions and podFillFuncs.
var fillFuncs = fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, podFillFuncs)

// podFillFuncs steer randfill towards pod fields whose validation looks
// at values plain randfill never produces, or never reaches: left alone
// it sets every volume source of a volume (validation then checks the
// first kind only, so a projected volume's podCertificate and
// clusterTrustBundle sources are never checked), every source of an env
// var, and random strings where validation switches on a few names
// (spec.os, seccomp and AppArmor types, DNS policy, procMount, key
// types). Each function keeps plain randfill's output now and then.
func podFillFuncs(runtimeserializer.CodecFactory) []any {
	return []any{
		func(s *corev1.VolumeSource, c randfill.Continue) {
			c.FillNoCustom(s)
			keepOneField(c, s, "Projected", "EmptyDir", "ConfigMap", "Secret", "DownwardAPI", "HostPath", "PersistentVolumeClaim", "Ephemeral", "Image")
		},
		func(s *corev1.VolumeProjection, c randfill.Continue) {
			c.FillNoCustom(s)
			keepOneField(c, s, "PodCertificate", "ClusterTrustBundle", "ServiceAccountToken")
		},
		func(s *corev1.EnvVarSource, c randfill.Continue) {
			c.FillNoCustom(s)
			keepOneField(c, s, "FileKeyRef")
		},
		func(o *corev1.PodOS, c randfill.Continue) {
			c.FillNoCustom(o)
			o.Name = pickFill(c, o.Name, corev1.Linux, corev1.Windows)
		},
		func(p *corev1.DNSPolicy, c randfill.Continue) {
			*p = pickFill(c, corev1.DNSPolicy(c.String(0)), corev1.DNSNone, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSClusterFirstWithHostNet)
		},
		func(p *corev1.ProcMountType, c randfill.Continue) {
			*p = pickFill(c, corev1.ProcMountType(c.String(0)), corev1.DefaultProcMount, corev1.UnmaskedProcMount)
		},
		func(p *corev1.SeccompProfile, c randfill.Continue) {
			c.FillNoCustom(p)
			p.Type = pickFill(c, p.Type, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost)
			if p.Type != corev1.SeccompProfileTypeLocalhost && c.Intn(4) != 0 {
				p.LocalhostProfile = nil
			}
		},
		func(p *corev1.AppArmorProfile, c randfill.Continue) {
			c.FillNoCustom(p)
			p.Type = pickFill(c, p.Type, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost)
			if p.Type != corev1.AppArmorProfileTypeLocalhost && c.Intn(4) != 0 {
				p.LocalhostProfile = nil
			}
		},
		func(p *corev1.PodCertificateProjection, c randfill.Continue) {
			c.FillNoCustom(p)
			p.SignerName = pickFill(c, p.SignerName, "example.com/signer", "kubernetes.io/kube-apiserver-client-pod", "a.b/c.d")
			p.KeyType = pickFill(c, p.KeyType, "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519")
			if p.MaxExpirationSeconds != nil {
				*p.MaxExpirationSeconds = pickFill(c, *p.MaxExpirationSeconds, 3599, 3600, 86400, 86401, 7862400, 7862401)
			}
			p.CredentialBundlePath = pickFill(c, p.CredentialBundlePath, "", "cred.pem", "../cred.pem")
			p.KeyPath = pickFill(c, p.KeyPath, "", "key.pem", "cred.pem")
			p.CertificateChainPath = pickFill(c, p.CertificateChainPath, "", "chain.pem")
		},
		func(p *corev1.ClusterTrustBundleProjection, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Name != nil {
				*p.Name = pickFill(c, *p.Name, "bundle", "example.com:signer:bundle", "example.com:other:bundle")
			}
			if p.SignerName != nil {
				*p.SignerName = pickFill(c, *p.SignerName, "example.com/signer", "kubernetes.io/kube-apiserver-serving")
			}
			switch c.Intn(4) {
			case 0:
				p.Name = nil
			case 1:
				p.SignerName = nil
			}
			p.Path = pickFill(c, p.Path, "ca.pem", "../ca.pem")
		},
		func(s *corev1.FileKeySelector, c randfill.Continue) {
			c.FillNoCustom(s)
			s.VolumeName = pickFill(c, s.VolumeName, "files")
			s.Path = pickFill(c, s.Path, "env.txt", "../env.txt", "/env.txt")
			s.Key = pickFill(c, s.Key, "KEY", "1BAD")
		},
	}
}

// pickFill is v (randfill's own value) one time in three, else one of
// options.
func pickFill[T any](c randfill.Continue, v T, options ...T) T {
	if n := c.Intn(3 * len(options)); n < 2*len(options) {
		return options[n/2]
	}
	return v
}

// keepOneField clears every pointer field of the struct p points to
// but one (favourites is weighted: half the time one of them; the field
// randfill left nil stays nil), and one time in eight leaves all set.
func keepOneField(c randfill.Continue, p any, favourites ...string) {
	v := reflect.ValueOf(p).Elem()
	if c.Intn(8) == 0 {
		return
	}
	keep := v.Type().Field(c.Intn(v.NumField())).Name
	if len(favourites) > 0 && c.Intn(2) == 0 {
		keep = favourites[c.Intn(len(favourites))]
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && v.Type().Field(i).Name != keep {
			f.SetZero()
		}
	}
}
