package registry

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// TestOverlappingVolumePathWarningsMatchesEagerForm: the lazy form
// (reused slices, messages made only for a warning) warns exactly as the
// eager one it replaced, which follows upstream's shape (sets, messages
// built for every source), over random volumes.
func TestOverlappingVolumePathWarningsMatchesEagerForm(t *testing.T) {
	pathGen := rapid.SampledFrom([]string{"", "a", "a/", "a/b", "a/b/c", "b", "token", "x", "x/y", "ca.crt", "namespace", "aa"})
	itemsGen := rapid.Custom(func(t *rapid.T) []corev1.KeyToPath {
		if rapid.Bool().Draw(t, "nilItems") {
			return nil
		}
		ps := rapid.SliceOfN(pathGen, 0, 4).Draw(t, "paths")
		items := make([]corev1.KeyToPath, len(ps))
		for i, p := range ps {
			items[i] = corev1.KeyToPath{Key: "k", Path: p}
		}
		return items
	})
	downGen := rapid.Custom(func(t *rapid.T) []corev1.DownwardAPIVolumeFile {
		if rapid.Bool().Draw(t, "nilDown") {
			return nil
		}
		ps := rapid.SliceOfN(pathGen, 0, 4).Draw(t, "paths")
		items := make([]corev1.DownwardAPIVolumeFile, len(ps))
		for i, p := range ps {
			items[i] = corev1.DownwardAPIVolumeFile{Path: p}
		}
		return items
	})
	sourceGen := rapid.Custom(func(t *rapid.T) corev1.VolumeProjection {
		switch rapid.IntRange(0, 6).Draw(t, "kind") {
		case 0:
			return corev1.VolumeProjection{}
		case 1:
			return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: itemsGen.Draw(t, "items")}}
		case 2:
			return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: itemsGen.Draw(t, "items")}}
		case 3:
			return corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: downGen.Draw(t, "items")}}
		case 4:
			return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: pathGen.Draw(t, "path")}}
		case 5:
			name := "b"
			return corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: &name, Path: pathGen.Draw(t, "path")}}
		default:
			return corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "x/y"}}
		}
	})
	volumeGen := rapid.Custom(func(t *rapid.T) corev1.Volume {
		v := corev1.Volume{Name: "v"}
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: itemsGen.Draw(t, "items")}
		case 1:
			v.Secret = &corev1.SecretVolumeSource{SecretName: "s", Items: itemsGen.Draw(t, "items")}
		case 2:
			v.DownwardAPI = &corev1.DownwardAPIVolumeSource{Items: downGen.Draw(t, "items")}
		default:
			v.Projected = &corev1.ProjectedVolumeSource{Sources: rapid.SliceOfN(sourceGen, 0, 5).Draw(t, "sources")}
		}
		return v
	})
	rapid.Check(t, func(t *rapid.T) {
		vols := rapid.SliceOfN(volumeGen, 0, 3).Draw(t, "volumes")
		got, want := overlappingVolumePathWarnings(vols), eagerOverlappingVolumePathWarnings(vols)
		if !slices.Equal(got, want) {
			t.Fatalf("warnings:\n got  %q\n want %q", got, want)
		}
	})
}

// TestOverlappingVolumePathWarningsAllocations: a pod's kube-api-access
// volume without overlaps costs no allocation.
func TestOverlappingVolumePathWarningsAllocations(t *testing.T) {
	vols := []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}}}}
	if n := testing.AllocsPerRun(100, func() { _ = overlappingVolumePathWarnings(vols) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}

// eagerOverlappingVolumePathWarnings is the form session 28 wrote after
// upstream's (sets and messages built for every source), kept as the
// reference the lazy form is checked against.
func eagerOverlappingVolumePathWarnings(volumes []corev1.Volume) []string {
	var warnings []string
	for _, v := range volumes {
		if v.ConfigMap != nil && v.ConfigMap.Items != nil {
			warnings = append(warnings, eagerVolumePathOverlaps(eagerKeyToPaths(v.ConfigMap.Items), fmt.Sprintf("volume %q (ConfigMap %q): overlapping paths", v.Name, v.ConfigMap.Name))...)
		}
		if v.Secret != nil && v.Secret.Items != nil {
			warnings = append(warnings, eagerVolumePathOverlaps(eagerKeyToPaths(v.Secret.Items), fmt.Sprintf("volume %q (Secret %q): overlapping paths", v.Name, v.Secret.SecretName))...)
		}
		if v.DownwardAPI != nil && v.DownwardAPI.Items != nil {
			warnings = append(warnings, eagerVolumePathOverlaps(eagerDownwardAPIPaths(v.DownwardAPI.Items), fmt.Sprintf("volume %q (DownwardAPI): overlapping paths", v.Name))...)
		}
		if v.Projected == nil {
			continue
		}
		var paths []string
		var message string
		all := sets.New[string]()
		for _, s := range v.Projected.Sources {
			switch {
			case s == (corev1.VolumeProjection{}):
				warnings = append(warnings, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
				continue
			case s.ConfigMap != nil && s.ConfigMap.Items != nil:
				paths = eagerKeyToPaths(s.ConfigMap.Items)
				message = fmt.Sprintf("volume %q (Projected ConfigMap %q): overlapping paths", v.Name, s.ConfigMap.Name)
			case s.Secret != nil && s.Secret.Items != nil:
				paths = eagerKeyToPaths(s.Secret.Items)
				message = fmt.Sprintf("volume %q (Projected Secret %q): overlapping paths", v.Name, s.Secret.Name)
			case s.DownwardAPI != nil && s.DownwardAPI.Items != nil:
				paths = eagerDownwardAPIPaths(s.DownwardAPI.Items)
				message = fmt.Sprintf("volume %q (Projected DownwardAPI): overlapping paths", v.Name)
			case s.ServiceAccountToken != nil:
				paths = []string{s.ServiceAccountToken.Path}
				message = fmt.Sprintf("volume %q (Projected ServiceAccountToken): overlapping paths", v.Name)
			case s.ClusterTrustBundle != nil:
				paths = []string{s.ClusterTrustBundle.Path}
				name := s.ClusterTrustBundle.SignerName
				if s.ClusterTrustBundle.Name != nil {
					name = s.ClusterTrustBundle.Name
				}
				message = fmt.Sprintf("volume %q (Projected ClusterTrustBundle %q): overlapping paths", v.Name, derefString(name))
			}
			// As upstream, a source with nothing to add (say a
			// podCertificate, or a configMap without items) checks
			// the previous source's paths again.
			if len(paths) == 0 {
				continue
			}
			warnings = append(warnings, eagerVolumePathOverlaps(paths, message)...)
			unique := sets.New(paths...).UnsortedList()
			ordered := append(unique, all.UnsortedList()...)
			sort.Strings(ordered)
			warnings = append(warnings, eagerVolumePathOverlaps(ordered, message)...)
			all.Insert(unique...)
		}
	}
	return warnings
}

func eagerKeyToPaths(items []corev1.KeyToPath) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Path)
	}
	return out
}

func eagerDownwardAPIPaths(items []corev1.DownwardAPIVolumeFile) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Path)
	}
	return out
}

func eagerVolumePathOverlaps(paths []string, message string) []string {
	var warnings []string
	sep := string(os.PathSeparator)
	seen := sets.New[string]()
	for _, p := range paths {
		p = strings.TrimRight(p, sep)
		if c := eagerVolumePathCollision(seen, p); c != "" {
			warnings = append(warnings, fmt.Sprintf("%s: %q with %q", message, p, c))
		}
		seen.Insert(p)
	}
	return warnings
}

func eagerVolumePathCollision(seen sets.Set[string], p string) string {
	sep := string(os.PathSeparator)
	for _, item := range sets.List(seen) {
		switch {
		case item == "" || p == "":
			return ""
		case item == p, strings.HasPrefix(item+sep, p), strings.HasPrefix(p+sep, item):
			return item
		}
	}
	return ""
}
