package registry

import (
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the Warning headers of pods and of pod templates, as
// upstream's pkg/api/pod/warnings.go (GetWarningsForPod,
// GetWarningsForPodTemplate): things validation lets through that are
// probably mistakes (deprecated node labels, annotations and volume
// plugins, fractional byte quantities, env vars hiding earlier ones,
// duplicate or overlapping ports, overlapping volume paths, ...). Where
// upstream ranges over a map (nodeSelector, annotations) the warnings come
// in key order here; upstream's follow map order.

// podCreateWarnings are the Warning headers of a valid pod create, as
// upstream's podStrategy.WarningsOnCreate: the name as a DNS label, then
// GetWarningsForPod. An update gets none, as upstream's
// podStrategy.WarningsOnUpdate (pods are updated often, mostly by
// controllers, and their spec is mostly immutable).
func podCreateWarnings(p, old *corev1.Pod) []string {
	if old != nil {
		return nil
	}
	var warnings []string
	if msgs := validation.IsDNS1123Label(p.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, podSpecAndMetaWarnings(nil, &p.Spec, &p.ObjectMeta)...)
}

// podTemplateWarnings are upstream's GetWarningsForPodTemplate: the pod
// warnings of a template, with its fields under path (spec.template for
// workloads).
func podTemplateWarnings(path *field.Path, t *corev1.PodTemplateSpec) []string {
	return podSpecAndMetaWarnings(path, &t.Spec, &t.ObjectMeta)
}

// workloadWarnings are the Warning headers of a Deployment or ReplicaSet
// create or update, as upstream's strategies: on create the name as a DNS
// label (it prefixes pod names) and the template's warnings; on update
// the template's warnings when the generation changed (the spec did),
// none otherwise.
func workloadWarnings(meta, oldMeta *metav1.ObjectMeta, t *corev1.PodTemplateSpec) []string {
	if oldMeta != nil {
		if meta.Generation == oldMeta.Generation {
			return nil
		}
		return podTemplateWarnings(field.NewPath("spec", "template"), t)
	}
	var warnings []string
	if msgs := validation.IsDNS1123Label(meta.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, podTemplateWarnings(field.NewPath("spec", "template"), t)...)
}

// deprecatedPodAnnotations are annotations that no longer do anything,
// with upstream's messages.
var deprecatedPodAnnotations = []struct{ key, message string }{
	{`scheduler.alpha.kubernetes.io/critical-pod`, `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{`security.alpha.kubernetes.io/sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
	{`security.alpha.kubernetes.io/unsafe-sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
}

const (
	seccompPodAnnotation              = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotationPrefix  = "container.seccomp.security.alpha.kubernetes.io/"
	appArmorContainerAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
)

// podSpecAndMetaWarnings is upstream's warningsForPodSpecAndMeta; path is
// nil for a pod and the template's path for a template.
func podSpecAndMetaWarnings(path *field.Path, spec *corev1.PodSpec, meta *metav1.ObjectMeta) []string {
	var warnings []string
	// Paths are built only for a warning: most pods warn of nothing.
	specPath := func() *field.Path { return path.Child("spec") }

	// Deprecated node labels in the node selector, node affinity and
	// topology spread constraints.
	for _, k := range sortedKeys(spec.NodeSelector) {
		if msg, ok := deprecatedNodeLabels[k]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", specPath().Child("nodeSelector").Key(k), msg))
		}
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		n := spec.Affinity.NodeAffinity
		if n.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			terms := specPath().Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			for i, term := range n.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				warnings = append(warnings, nodeSelectorTermWarnings(term, terms.Index(i))...)
			}
		}
		preferred := specPath().Child("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			warnings = append(warnings, nodeSelectorTermWarnings(term.Preference, preferred.Index(i).Child("preference"))...)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		p := specPath().Child("topologySpreadConstraints").Index(i)
		if msg, ok := deprecatedNodeLabels[c.TopologyKey]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", p.Child("topologyKey"), c.TopologyKey, msg))
		}
		if c.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", p.Child("labelSelector")))
		}
	}

	// Deprecated annotations.
	annotations := func() *field.Path { return path.Child("metadata", "annotations") }
	for _, d := range deprecatedPodAnnotations {
		if _, ok := meta.Annotations[d.key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", annotations().Key(d.key), d.message))
		}
	}

	// Deprecated and removed volume plugins.
	for i, v := range spec.Volumes {
		p := specPath().Child("volumes").Index(i)
		for _, d := range []struct {
			set  bool
			name string
			msg  string
		}{
			{v.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"},
			{v.GitRepo != nil, "gitRepo", "deprecated in v1.11"},
			{v.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+"},
			{v.Flocker != nil, "flocker", "deprecated in v1.22, non-functional in v1.25+"},
			{v.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+"},
			{v.Quobyte != nil, "quobyte", "deprecated in v1.22, non-functional in v1.25+"},
			{v.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+"},
			{v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil, "ephemeral", ""},
			{v.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+"},
			{v.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+"},
		} {
			switch {
			case !d.set:
			case d.name == "ephemeral":
				// The claim template's own warnings, in upstream's place
				// among the volume plugins.
				warnings = append(warnings, claimSpecWarnings(p.Child("ephemeral", "volumeClaimTemplate", "spec"), v.Ephemeral.VolumeClaimTemplate.Spec)...)
			default:
				warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child(d.name), d.msg))
			}
		}
	}
	warnings = append(warnings, overlappingVolumePathWarnings(spec.Volumes)...)

	// Duplicate hostAliases IPs and imagePullSecrets, and empty
	// imagePullSecrets names.
	if len(spec.HostAliases) > 1 {
		seen := sets.New[string]()
		for i, a := range spec.HostAliases {
			if seen.Has(a.IP) {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate ip %q", specPath().Child("hostAliases").Index(i).Child("ip"), a.IP))
			}
			seen.Insert(a.IP)
		}
	}
	if len(spec.ImagePullSecrets) > 1 {
		seen := sets.New[string]()
		for i, s := range spec.ImagePullSecrets {
			if seen.Has(s.Name) {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate name %q", specPath().Child("imagePullSecrets").Index(i).Child("name"), s.Name))
			}
			seen.Insert(s.Name)
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			warnings = append(warnings, fmt.Sprintf("%s: invalid empty name %q", specPath().Child("imagePullSecrets").Index(i).Child("name"), s.Name))
		}
	}

	// Fractional byte quantities in the overhead.
	if len(spec.Overhead) > 0 {
		warnings = append(warnings, fractionalByteWarnings(spec.Overhead, specPath().Child("overhead"))...)
	}

	// Seccomp annotations without the field.
	if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
		if _, ok := meta.Annotations[seccompPodAnnotation]; ok {
			warnings = append(warnings, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotations().Key(seccompPodAnnotation)))
		}
	}
	podAppArmor := spec.SecurityContext != nil && spec.SecurityContext.AppArmorProfile != nil
	visitContainersWithPath(spec, path, func(cp containerWithPath) {
		c := cp.c
		if len(meta.Annotations) > 0 && (c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil) {
			if _, ok := meta.Annotations[seccompContainerAnnotationPrefix+c.Name]; ok {
				warnings = append(warnings, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotations().Key(seccompContainerAnnotationPrefix+c.Name)))
			}
		}
		// Upstream warns of a pod's AppArmor annotations elsewhere (its
		// AppArmor version skew handling), so only templates here.
		if path != nil && len(meta.Annotations) > 0 && !podAppArmor && (c.SecurityContext == nil || c.SecurityContext.AppArmorProfile == nil) {
			if _, ok := meta.Annotations[appArmorContainerAnnotationPrefix+c.Name]; ok {
				warnings = append(warnings, fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, annotations().Key(appArmorContainerAnnotationPrefix+c.Name)))
			}
		}
		warnings = append(warnings, containerResourceWarnings(cp)...)
		warnings = append(warnings, hiddenEnvWarnings(cp)...)
	})
	warnings = append(warnings, containerPortWarnings(spec, path)...)

	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		warnings = append(warnings, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", specPath().Child("terminationGracePeriodSeconds")))
	}

	if a := spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			p := specPath().Child("affinity", "podAffinity")
			warnings = append(warnings, podAffinityTermWarnings(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			p := specPath().Child("affinity", "podAntiAffinity")
			warnings = append(warnings, podAffinityTermWarnings(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
	}

	// Non-standard IPs (KEP-4858).
	if spec.DNSConfig != nil {
		for i, ns := range spec.DNSConfig.Nameservers {
			warnings = append(warnings, validation.GetWarningsForIP(specPath().Child("dnsConfig", "nameservers").Index(i), ns)...)
		}
	}
	for i, ha := range spec.HostAliases {
		warnings = append(warnings, validation.GetWarningsForIP(specPath().Child("hostAliases").Index(i).Child("ip"), ha.IP)...)
	}
	return warnings
}

// claimSpecWarnings are upstream's GetWarningsForPersistentVolumeClaimSpec:
// a storage request or limit that is not a whole number of bytes.
func claimSpecWarnings(path *field.Path, s corev1.PersistentVolumeClaimSpec) []string {
	var warnings []string
	for _, l := range []struct {
		list corev1.ResourceList
		name string
	}{{s.Resources.Requests, "requests"}, {s.Resources.Limits, "limits"}} {
		if q := l.list[corev1.ResourceStorage]; q.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path.Child("resources", l.name).Key(string(corev1.ResourceStorage)), q.String()))
		}
	}
	return warnings
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nodeSelectorTermWarnings are upstream's GetWarningsForNodeSelectorTerm
// (without label value checks, which pods do not ask for).
func nodeSelectorTermWarnings(term corev1.NodeSelectorTerm, path *field.Path) []string {
	var warnings []string
	for i, e := range term.MatchExpressions {
		if msg, ok := deprecatedNodeLabels[e.Key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", path.Child("matchExpressions").Index(i).Child("key"), e.Key, msg))
		}
	}
	return warnings
}

func podAffinityTermWarnings(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) []string {
	var warnings []string
	for i, t := range required {
		if t.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector")))
		}
	}
	for i, t := range preferred {
		if t.PodAffinityTerm.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector")))
		}
	}
	return warnings
}

// fractionalByteWarnings: memory and ephemeral-storage are counted in
// whole bytes.
func fractionalByteWarnings(l corev1.ResourceList, path *field.Path) []string {
	var warnings []string
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := l[name]; ok && q.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path.Key(string(name)), q.String()))
		}
	}
	return warnings
}

// containerResourceWarnings checks limits and requests in upstream's order
// (memory limit, memory request, ephemeral-storage limit, request).
func containerResourceWarnings(cp containerWithPath) []string {
	var warnings []string
	r := cp.c.Resources
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		for _, l := range []struct {
			list corev1.ResourceList
			name string
		}{{r.Limits, "limits"}, {r.Requests, "requests"}} {
			if q, ok := l.list[name]; ok && q.MilliValue()%1000 != 0 {
				warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", cp.path().Child("resources", l.name).Key(string(name)), q.String()))
			}
		}
	}
	return warnings
}

// hiddenEnvWarnings: a repeated env var name replaces the earlier one
// (which server-side apply may then drop), unless the new value refers to
// it as $(NAME) (and is not just that, and has no valueFrom).
func hiddenEnvWarnings(cp containerWithPath) []string {
	env := cp.c.Env
	if len(env) < 2 {
		return nil
	}
	var warnings []string
	seen := sets.New[string]()
	for i, e := range env {
		if !seen.Has(e.Name) {
			seen.Insert(e.Name)
			continue
		}
		ref := "$(" + e.Name + ")"
		if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
			warnings = append(warnings, fmt.Sprintf("%s: hides previous definition of %q, which may be dropped when using apply", cp.path().Child("env").Index(i), e.Name))
		}
	}
	return warnings
}

// containerWithPath is a container and where it is; its path is built
// only for a warning.
type containerWithPath struct {
	c     *corev1.Container
	root  *field.Path // nil for a pod, the template's path for a template
	list  string
	index int
}

func (cp containerWithPath) path() *field.Path {
	return cp.root.Child("spec", cp.list).Index(cp.index)
}

// visitContainersWithPath calls f for init, app and ephemeral containers,
// as upstream's VisitContainersWithPath.
func visitContainersWithPath(s *corev1.PodSpec, root *field.Path, f func(containerWithPath)) {
	for i := range s.InitContainers {
		f(containerWithPath{&s.InitContainers[i], root, "initContainers", i})
	}
	for i := range s.Containers {
		f(containerWithPath{&s.Containers[i], root, "containers", i})
	}
	for i := range s.EphemeralContainers {
		f(containerWithPath{(*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon), root, "ephemeralContainers", i})
	}
}

// containerPortWarnings: a hostIP without a hostPort, and container ports
// (across all containers) of the same number and protocol that are
// duplicates, overlap (one without a hostPort) or are ambiguous (the same
// hostPort, one with a hostIP and one without).
func containerPortWarnings(spec *corev1.PodSpec, root *field.Path) []string {
	type portAt struct {
		cp    containerWithPath
		index int
		port  *corev1.ContainerPort
	}
	pathOf := func(p portAt) *field.Path { return p.cp.path().Child("ports").Index(p.index) }
	type portKey struct {
		port     int32
		protocol corev1.Protocol
	}
	var warnings []string
	var all map[portKey][]portAt
	visitContainersWithPath(spec, root, func(cp containerWithPath) {
		for i := range cp.c.Ports {
			port := &cp.c.Ports[i]
			this := portAt{cp, i, port}
			if port.HostIP != "" && port.HostPort == 0 {
				warnings = append(warnings, fmt.Sprintf("%s: hostIP set without hostPort: %+v", pathOf(this), *port))
			}
			if all == nil {
				all = map[portKey][]portAt{}
			}
			k := portKey{port.ContainerPort, port.Protocol}
			for _, other := range all[k] {
				switch a, b := port.HostIP == "", other.port.HostIP == ""; {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					warnings = append(warnings, fmt.Sprintf("%s: duplicate port definition with %s", pathOf(this), pathOf(other)))
				case port.HostPort == 0 || other.port.HostPort == 0:
					warnings = append(warnings, fmt.Sprintf("%s: overlapping port definition with %s", pathOf(this), pathOf(other)))
				case port.HostPort == other.port.HostPort && a != b:
					warnings = append(warnings, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", pathOf(this), pathOf(other)))
				}
			}
			all[k] = append(all[k], this)
		}
	})
	return warnings
}

// overlappingVolumePathWarnings: within one configMap, secret, downwardAPI
// or projected volume, two items written to the same path, or one to a
// path inside another's, overwrite each other or fail to mount; a
// projected source that is empty is named too.
//
// Every pod has a projected volume (kube-api-access: a token, a configMap
// item, a downwardAPI item), so this runs on each create: the paths are
// gathered in reused slices and a warning's text is made only when there
// is one (upstream builds the messages and sets eagerly).
func overlappingVolumePathWarnings(volumes []corev1.Volume) []string {
	var warnings []string
	var pathsBuf, seenBuf, orderedBuf, allBuf [8]string
	paths, seen, ordered := pathsBuf[:0], seenBuf[:0], orderedBuf[:0]
	for i := range volumes {
		v := &volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.Items != nil {
			paths = appendKeyToPaths(paths[:0], v.ConfigMap.Items)
			warnings, seen = volumePathOverlaps(warnings, paths, overlapMessage{v.Name, "ConfigMap", v.ConfigMap.Name, true}, seen)
		}
		if v.Secret != nil && v.Secret.Items != nil {
			paths = appendKeyToPaths(paths[:0], v.Secret.Items)
			warnings, seen = volumePathOverlaps(warnings, paths, overlapMessage{v.Name, "Secret", v.Secret.SecretName, true}, seen)
		}
		if v.DownwardAPI != nil && v.DownwardAPI.Items != nil {
			paths = appendDownwardAPIPaths(paths[:0], v.DownwardAPI.Items)
			warnings, seen = volumePathOverlaps(warnings, paths, overlapMessage{v.Name, "DownwardAPI", "", false}, seen)
		}
		if v.Projected == nil {
			continue
		}
		paths = paths[:0]
		var message overlapMessage
		all := allBuf[:0] // sorted, each path once
		for _, s := range v.Projected.Sources {
			switch {
			case s == (corev1.VolumeProjection{}):
				warnings = append(warnings, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
				continue
			case s.ConfigMap != nil && s.ConfigMap.Items != nil:
				paths = appendKeyToPaths(paths[:0], s.ConfigMap.Items)
				message = overlapMessage{v.Name, "Projected ConfigMap", s.ConfigMap.Name, true}
			case s.Secret != nil && s.Secret.Items != nil:
				paths = appendKeyToPaths(paths[:0], s.Secret.Items)
				message = overlapMessage{v.Name, "Projected Secret", s.Secret.Name, true}
			case s.DownwardAPI != nil && s.DownwardAPI.Items != nil:
				paths = appendDownwardAPIPaths(paths[:0], s.DownwardAPI.Items)
				message = overlapMessage{v.Name, "Projected DownwardAPI", "", false}
			case s.ServiceAccountToken != nil:
				paths = append(paths[:0], s.ServiceAccountToken.Path)
				message = overlapMessage{v.Name, "Projected ServiceAccountToken", "", false}
			case s.ClusterTrustBundle != nil:
				paths = append(paths[:0], s.ClusterTrustBundle.Path)
				name := s.ClusterTrustBundle.SignerName
				if s.ClusterTrustBundle.Name != nil {
					name = s.ClusterTrustBundle.Name
				}
				message = overlapMessage{v.Name, "Projected ClusterTrustBundle", derefString(name), true}
			}
			// As upstream, a source with nothing to add (say a
			// podCertificate, or a configMap without items) checks
			// the previous source's paths again.
			if len(paths) == 0 {
				continue
			}
			warnings, seen = volumePathOverlaps(warnings, paths, message, seen)
			// This source's paths (each once) with every earlier
			// source's, sorted: a path two sources write is a
			// collision with itself.
			ordered = append(ordered[:0], all...)
			for j, p := range paths {
				if !slices.Contains(paths[:j], p) {
					ordered = append(ordered, p)
				}
			}
			slices.Sort(ordered)
			warnings, seen = volumePathOverlaps(warnings, ordered, message, seen)
			for _, p := range paths {
				all = insertSorted(all, p)
			}
		}
	}
	return warnings
}

// overlapMessage is the start of a path overlap warning, rendered only
// when there is one: `volume "v" (kind "name"): overlapping paths`, the
// name left out where upstream's message has none.
type overlapMessage struct {
	volume, kind, name string
	named              bool
}

func (m overlapMessage) String() string {
	if m.named {
		return fmt.Sprintf("volume %q (%s %q): overlapping paths", m.volume, m.kind, m.name)
	}
	return fmt.Sprintf("volume %q (%s): overlapping paths", m.volume, m.kind)
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func appendKeyToPaths(dst []string, items []corev1.KeyToPath) []string {
	for _, it := range items {
		dst = append(dst, it.Path)
	}
	return dst
}

func appendDownwardAPIPaths(dst []string, items []corev1.DownwardAPIVolumeFile) []string {
	for _, it := range items {
		dst = append(dst, it.Path)
	}
	return dst
}

// insertSorted adds p to the sorted set s (a sorted slice, each element
// once).
func insertSorted(s []string, p string) []string {
	i, found := slices.BinarySearch(s, p)
	if found {
		return s
	}
	return slices.Insert(s, i, p)
}

// volumePathOverlaps appends a warning for each path (trailing separators
// dropped) equal to, or in a prefix relation with, one before it. seen is
// scratch space, returned for reuse.
func volumePathOverlaps(warnings, paths []string, message overlapMessage, seen []string) ([]string, []string) {
	sep := string(os.PathSeparator)
	seen = seen[:0] // sorted, each path once: upstream's set, listed in order
	for _, p := range paths {
		p = strings.TrimRight(p, sep)
		if c := volumePathCollision(seen, p); c != "" {
			warnings = append(warnings, fmt.Sprintf("%s: %q with %q", message, p, c))
		}
		seen = insertSorted(seen, p)
	}
	return warnings, seen
}

// volumePathCollision is upstream's checkForOverlap, which ranges over a
// set: with several candidates the one named (and whether an empty path
// ends the search first) follows map order there; here the first in
// sorted order (seen is sorted).
func volumePathCollision(seen []string, p string) string {
	sep := string(os.PathSeparator)
	for _, item := range seen {
		switch {
		case item == "" || p == "":
			return ""
		case item == p, strings.HasPrefix(item+sep, p), strings.HasPrefix(p+sep, item):
			return item
		}
	}
	return ""
}
