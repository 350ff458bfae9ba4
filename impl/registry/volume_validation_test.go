package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodVolumeAndDNSValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	cmVolume := func(items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: items}}}
	}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"items inside the volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: "conf/a.yaml"})}
		}, nil},
		{"item escaping the volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: "../../etc/passwd"}, corev1.KeyToPath{Key: "b", Path: "/abs"},
				corev1.KeyToPath{Path: "..data"})}
		}, []string{invalid + " spec.volumes[0].configMap.items[0].path", invalid + " spec.volumes[0].configMap.items[1].path",
			required + " spec.volumes[0].configMap.items[2].key", invalid + " spec.volumes[0].configMap.items[2].path"}},
		{"item path \"..\": both upstream errors (contains and starts with \"..\")", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume(corev1.KeyToPath{Key: "a", Path: ".."})}
		}, []string{invalid + " spec.volumes[0].configMap.items[0].path", invalid + " spec.volumes[0].configMap.items[0].path"}},
		{"two sources", func(p *corev1.Pod) {
			v := cmVolume()
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
			p.Spec.Volumes = []corev1.Volume{v}
		}, []string{forbidden + " spec.volumes[0]"}},
		{"subPath escaping", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{cmVolume()}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", SubPath: "a/../../b"}}
		}, []string{invalid + " spec.containers[0].volumeMounts[0].subPath"}},
		{"short token", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(60))}}}}}}}
		}, []string{invalid + " spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"}},
		{"downward API item without source", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "labels"}}}}}}
		}, []string{required + " spec.volumes[0].downwardAPI.items[0]"}},
		{"dns config", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "bogus"},
				Options: []corev1.PodDNSConfigOption{{Value: ptr("2")}}}
		}, []string{invalid + " spec.dnsConfig.nameservers", invalid + " spec.dnsConfig.nameservers[3]", required + " spec.dnsConfig.options[0]"}},
		{"host alias", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"ok.example", "Not_OK"}}, {IP: "x"}}
		}, []string{invalid + " spec.hostAliases[0].hostnames[1]", invalid + " spec.hostAliases[1].ip"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(p)
			defaultPod(p)
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}
}
