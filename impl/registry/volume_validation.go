package registry

import (
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks each volume as upstream's ValidateVolumes: a name
// (a DNS-1123 label, unique among the valid volumes before it) and its
// source (validateVolumeSource). It returns the valid volumes by name: a
// volume with errors is not there, so mounting it is also NotFound, as
// upstream. pod, the pod's metadata (nil for a template), adds the checks
// only pods get (an image volume's reference; an ephemeral volume's claim
// name, see ephemeralClaims).
func validateVolumes(volumes []corev1.Volume, path *field.Path, pod *metav1.ObjectMeta, opts podValidationOptions) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	claims := ephemeralClaims(volumes, pod)
	for i, v := range volumes {
		p := path.Index(i)
		el := validateVolumeSource(&v.VolumeSource, p, pod != nil, opts)
		el = append(el, validateEphemeralClaimName(&v, pod, p)...)
		el = append(el, validateISCSIVolumeName(v.Name, &v.VolumeSource, p)...)
		if v.Name == "" {
			el = append(el, field.Required(p.Child("name"), ""))
		} else {
			el = append(el, dnsLabel(v.Name, p.Child("name"))...)
		}
		if _, dup := byName[v.Name]; dup {
			el = append(el, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(el) == 0 {
			byName[v.Name] = v.VolumeSource
		}
		errs = append(errs, el...)
		// Not one of the volume's own errors: it stays mountable.
		if v.PersistentVolumeClaim != nil && claims.Has(v.PersistentVolumeClaim.ClaimName) {
			errs = append(errs, field.Invalid(p.Child("persistentVolumeClaim", "claimName"), v.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return byName, errs
}

// validateTokensHaveServiceAccount: a pod (not a template) that names no
// service account may not project its token, as upstream's
// validatePodMetadataAndSpec (the ServiceAccount admission plugin names
// "default" before validation when the pod names none).
func validateTokensHaveServiceAccount(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	if s.ServiceAccountName != "" {
		return nil
	}
	var errs field.ErrorList
	for vi, v := range s.Volumes {
		if v.Projected == nil {
			continue
		}
		for si, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				errs = append(errs, field.Forbidden(path.Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
					"must not be specified when serviceAccountName is not set"))
			}
		}
	}
	return errs
}

// volumeSourceKind is one kind of volume source: its field name and
// whether src sets it.
type volumeSourceKind struct {
	name string
	set  func(src *corev1.VolumeSource) bool
}

// volumeSourceKinds in the order upstream's validateVolumeSource checks
// them: the first set is validated, each later one is Forbidden on its own
// path (downwardAPI's path is misspelt "downwarAPI" there, and so here).
var volumeSourceKinds = []volumeSourceKind{
	{"emptyDir", func(s *corev1.VolumeSource) bool { return s.EmptyDir != nil }},
	{"hostPath", func(s *corev1.VolumeSource) bool { return s.HostPath != nil }},
	{"gitRepo", func(s *corev1.VolumeSource) bool { return s.GitRepo != nil }},
	{"gcePersistentDisk", func(s *corev1.VolumeSource) bool { return s.GCEPersistentDisk != nil }},
	{"awsElasticBlockStore", func(s *corev1.VolumeSource) bool { return s.AWSElasticBlockStore != nil }},
	{"secret", func(s *corev1.VolumeSource) bool { return s.Secret != nil }},
	{"nfs", func(s *corev1.VolumeSource) bool { return s.NFS != nil }},
	{"iscsi", func(s *corev1.VolumeSource) bool { return s.ISCSI != nil }},
	{"glusterfs", func(s *corev1.VolumeSource) bool { return s.Glusterfs != nil }},
	{"flocker", func(s *corev1.VolumeSource) bool { return s.Flocker != nil }},
	{"persistentVolumeClaim", func(s *corev1.VolumeSource) bool { return s.PersistentVolumeClaim != nil }},
	{"rbd", func(s *corev1.VolumeSource) bool { return s.RBD != nil }},
	{"cinder", func(s *corev1.VolumeSource) bool { return s.Cinder != nil }},
	{"cephFS", func(s *corev1.VolumeSource) bool { return s.CephFS != nil }},
	{"quobyte", func(s *corev1.VolumeSource) bool { return s.Quobyte != nil }},
	{"downwarAPI", func(s *corev1.VolumeSource) bool { return s.DownwardAPI != nil }},
	{"fc", func(s *corev1.VolumeSource) bool { return s.FC != nil }},
	{"flexVolume", func(s *corev1.VolumeSource) bool { return s.FlexVolume != nil }},
	{"configMap", func(s *corev1.VolumeSource) bool { return s.ConfigMap != nil }},
	{"azureFile", func(s *corev1.VolumeSource) bool { return s.AzureFile != nil }},
	{"vsphereVolume", func(s *corev1.VolumeSource) bool { return s.VsphereVolume != nil }},
	{"photonPersistentDisk", func(s *corev1.VolumeSource) bool { return s.PhotonPersistentDisk != nil }},
	{"portworxVolume", func(s *corev1.VolumeSource) bool { return s.PortworxVolume != nil }},
	{"azureDisk", func(s *corev1.VolumeSource) bool { return s.AzureDisk != nil }},
	{"storageos", func(s *corev1.VolumeSource) bool { return s.StorageOS != nil }},
	{"projected", func(s *corev1.VolumeSource) bool { return s.Projected != nil }},
	{"scaleIO", func(s *corev1.VolumeSource) bool { return s.ScaleIO != nil }},
	{"csi", func(s *corev1.VolumeSource) bool { return s.CSI != nil }},
	{"ephemeral", func(s *corev1.VolumeSource) bool { return s.Ephemeral != nil }},
	{"image", func(s *corev1.VolumeSource) bool { return s.Image != nil }},
}

// validateVolumeSource checks that a volume has one source and that
// source's fields, as upstream's validateVolumeSource (the in-tree
// plugins' own fields in volume_plugin_validation.go).
func validateVolumeSource(src *corev1.VolumeSource, p *field.Path, isPod bool, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	first := firstSourceKind(src)
	for _, k := range volumeSourceKinds {
		if k.name != first && k.set(src) {
			errs = append(errs, field.Forbidden(p.Child(k.name), "may not specify more than 1 volume type"))
		}
	}
	switch first {
	case "":
		errs = append(errs, field.Required(p, "must specify a volume type"))
	case "emptyDir":
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case "hostPath":
		errs = append(errs, validateHostPathVolumeSource(src.HostPath, p.Child("hostPath"))...)
	case "gitRepo":
		if src.GitRepo.Repository == "" {
			errs = append(errs, field.Required(p.Child("gitRepo", "repository"), ""))
		}
		errs = append(errs, validateLocalDescendingPath(src.GitRepo.Directory, p.Child("gitRepo", "directory"))...)
	case "secret":
		sp := p.Child("secret")
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(sp.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(src.Secret.DefaultMode, sp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("items"))...)
	case "persistentVolumeClaim":
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case "downwarAPI":
		dp := p.Child("downwardAPI")
		errs = append(errs, validateFileMode(src.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
		errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, dp)...)
	case "configMap":
		cp := p.Child("configMap")
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(src.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, cp.Child("items"))...)
	case "projected":
		pp := p.Child("projected")
		errs = append(errs, validateFileMode(src.Projected.DefaultMode, pp.Child("defaultMode"))...)
		errs = append(errs, validateProjectedSources(src.Projected.Sources, pp, opts)...)
	case "ephemeral":
		errs = append(errs, validateEphemeralVolumeSource(src.Ephemeral, p.Child("ephemeral"))...)
	case "image":
		// Upstream's validateImageVolumeSource requires the reference of
		// pods only (a template's may be filled in later); the pull
		// policy (defaulted from the reference) of both.
		if isPod && src.Image.Reference == "" {
			errs = append(errs, field.Required(p.Child("image", "reference"), ""))
		}
		errs = append(errs, validatePullPolicy(src.Image.PullPolicy, p.Child("image", "pullPolicy"))...)
	default:
		errs = append(errs, validatePluginVolumeSource(first, src, p)...)
	}
	return errs
}

// validateEphemeralVolumeSource checks a generic ephemeral volume as
// upstream's validateEphemeralVolumeSource: a claim template whose
// metadata has labels and annotations only and whose spec is a claim's.
func validateEphemeralVolumeSource(e *corev1.EphemeralVolumeSource, p *field.Path) field.ErrorList {
	tp := p.Child("volumeClaimTemplate")
	if e.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(tp, "")}
	}
	t := e.VolumeClaimTemplate
	mp := tp.Child("metadata")
	errs := apivalidation.ValidateAnnotations(t.Annotations, mp.Child("annotations"))
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, mp.Child("labels"))...)
	// Upstream's ValidateTemplateObjectMeta: every other set field of the
	// metadata "cannot be set".
	mv, mt := reflect.ValueOf(t.ObjectMeta), reflect.TypeOf(t.ObjectMeta)
	for i := range mt.NumField() {
		f := mt.Field(i)
		if f.Name == "Labels" || f.Name == "Annotations" || !f.IsExported() || mv.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(mp.Child(strings.ToLower(f.Name[:1])+f.Name[1:]), "cannot be set"))
	}
	return append(errs, validateClaimSpec(&t.Spec, tp.Child("spec"))...)
}

// Access and volume modes as upstream lists them (sorted).
var (
	claimAccessModes = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce),
		string(corev1.ReadWriteOncePod)}
	claimVolumeModes = []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
)

// validateClaimSpec checks a claim template's spec as upstream's
// ValidatePersistentVolumeClaimSpec: access modes (at least one, known,
// ReadWriteOncePod alone), the selector, a positive storage request, the
// storage and volume attributes class names, the volume mode and the data
// source and its reference (which agree unless the reference names a
// namespace, and then there is no data source).
func validateClaimSpec(s *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.AccessModes) == 0 {
		errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
	}
	if s.Selector != nil {
		errs = append(errs, validateLabelSelector(s.Selector, p.Child("selector"))...)
	}
	rwop, other := false, false
	for _, m := range s.AccessModes {
		if !slices.Contains(claimAccessModes, string(m)) {
			errs = append(errs, field.NotSupported(p.Child("accessModes"), m, claimAccessModes))
		} else if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}
	sp := p.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(sp, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(sp, q.String(), "must be greater than zero"))
	}
	if s.StorageClassName != nil && *s.StorageClassName != "" {
		errs = append(errs, dnsSubdomain(*s.StorageClassName, p.Child("storageClassName"))...)
	}
	if s.VolumeMode != nil && !slices.Contains(claimVolumeModes, string(*s.VolumeMode)) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *s.VolumeMode, claimVolumeModes))
	}
	if ds := s.DataSource; ds != nil {
		errs = append(errs, validateClaimDataSource(ds.APIGroup, ds.Kind, ds.Name, p.Child("dataSource"))...)
	}
	if ref := s.DataSourceRef; ref != nil {
		rp := p.Child("dataSourceRef")
		errs = append(errs, validateClaimDataSource(ref.APIGroup, ref.Kind, ref.Name, rp)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			errs = append(errs, dnsLabel(*ref.Namespace, rp.Child("namespace"))...)
		}
	}
	if ref := s.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if s.DataSource != nil {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if ds := s.DataSource; ds != nil && ref != nil {
		if !reflect.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if s.VolumeAttributesClassName != nil && *s.VolumeAttributesClassName != "" {
		errs = append(errs, dnsSubdomain(*s.VolumeAttributesClassName, p.Child("volumeAttributesClassName"))...)
	}
	return errs
}

// validateClaimDataSource checks a claim's dataSource or dataSourceRef as
// upstream's validateDataSource/validateDataSourceRef: a name and a kind; in
// the core group only a PersistentVolumeClaim; another group a DNS-1123
// subdomain.
func validateClaimDataSource(apiGroup *string, kind, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(p, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		errs = append(errs, dnsSubdomain(group, p.Child("apiGroup"))...)
	}
	return errs
}

// ephemeralClaims are the claims "<pod>-<volume>" a pod's ephemeral
// volumes create, none when the pod's name is not known (a template, or a
// pod without a name, which is refused elsewhere), as upstream's
// ValidateVolumes.
func ephemeralClaims(volumes []corev1.Volume, pod *metav1.ObjectMeta) sets.Set[string] {
	claims := sets.New[string]()
	if pod == nil || pod.Name == "" {
		return claims
	}
	for _, v := range volumes {
		if v.Ephemeral != nil {
			claims.Insert(pod.Name + "-" + v.Name)
		}
	}
	return claims
}

// validateEphemeralClaimName: the claim a pod's ephemeral volume creates,
// "<pod>-<volume>", has a valid object name (reported on the volume's
// name), as upstream's validateVolumeSource given the pod's metadata: an
// error of the volume, so its mounts are NotFound. Checked when the
// ephemeral source is the one validated and the pod's name is known.
func validateEphemeralClaimName(v *corev1.Volume, pod *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	if pod == nil || pod.Name == "" || v.Name == "" || firstSourceKind(&v.VolumeSource) != "ephemeral" {
		return nil
	}
	claim := pod.Name + "-" + v.Name
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(claim) {
		errs = append(errs, field.Invalid(p.Child("name"), v.Name, fmt.Sprintf("PVC name %q: %v", claim, msg)))
	}
	return errs
}

// firstSourceKind is the name of the source validateVolumeSource checks
// (the first set in upstream's order), "" if none is set.
func firstSourceKind(src *corev1.VolumeSource) string {
	for _, k := range volumeSourceKinds {
		if k.set(src) {
			return k.name
		}
	}
	return ""
}

// hostPathTypes are upstream's supportedHostPathTypes, sorted as it lists
// them (HostPathUnset is "").
var hostPathTypes = []string{string(corev1.HostPathUnset), string(corev1.HostPathBlockDev), string(corev1.HostPathCharDev),
	string(corev1.HostPathDirectory), string(corev1.HostPathDirectoryOrCreate), string(corev1.HostPathFile),
	string(corev1.HostPathFileOrCreate), string(corev1.HostPathSocket)}

// validateHostPathVolumeSource: a path (nothing else is checked without
// one) without ".." elements, and a known type.
func validateHostPathVolumeSource(h *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(h.Path, p.Child("path"))
	if h.Type != nil && !slices.Contains(hostPathTypes, string(*h.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), *h.Type, hostPathTypes))
	}
	return errs
}

func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0777) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateKeyToPaths checks the items of a configMap or secret volume:
// a key and a relative path inside the volume.
func validateKeyToPaths(items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		ip := p.Index(i)
		if item.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if item.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(item.Path, ip.Child("path"))...)
		errs = append(errs, validateFileMode(item.Mode, ip.Child("mode"))...)
	}
	return errs
}

// validateDownwardAPIFiles checks the files of a downwardAPI volume or
// projection as upstream's validateDownwardAPIVolumeFile, which reports
// every file's errors on p, the downwardAPI path itself (no items[i]).
func validateDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, item := range items {
		if item.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(item.Path, p.Child("path"))...)
		switch {
		case item.FieldRef != nil:
			errs = append(errs, validateVolumeFieldRef(item.FieldRef, p.Child("fieldRef"))...)
			if item.ResourceFieldRef != nil {
				errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
			}
		case item.ResourceFieldRef != nil:
			errs = append(errs, validateResourceFieldSelector(item.ResourceFieldRef, p.Child("resourceFieldRef"), true)...)
		default:
			errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
		}
		errs = append(errs, validateFileMode(item.Mode, p.Child("mode"))...)
	}
	return errs
}

// downwardAPIVolumeFields are the fields a downward API volume file may
// name (upstream's validVolumeDownwardAPIFieldPathExpressions, sorted).
var downwardAPIVolumeFields = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// downwardAPIConvertibleFields are the v1 field labels upstream's
// ConvertDownwardAPIFieldLabel accepts (spec.host, the old name of
// spec.nodeName, too); others fail conversion and are Invalid rather than
// NotSupported.
var downwardAPIConvertibleFields = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
	"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// validateVolumeFieldRef checks a downward API volume file's fieldRef as
// upstream's validateObjectFieldSelector with the volume's fields.
func validateVolumeFieldRef(fs *corev1.ObjectFieldSelector, p *field.Path) field.ErrorList {
	return validateObjectFieldSelector(fs, downwardAPIVolumeFields, p)
}

// validateObjectFieldSelector checks a downward API fieldRef (of a volume
// file or an env var) as upstream's function of that name: an apiVersion
// (v1) and a fieldPath, which converts, and is one of fields (sorted) or a
// label or annotation subscript with a qualified key.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, fields []string, p *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	fp := fs.FieldPath
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fp, "error converting fieldPath: unsupported pod version: "+fs.APIVersion)}
	}
	if base, sub, ok := splitSubscriptedPath(fp); ok {
		var errs field.ErrorList
		switch base {
		case "metadata.annotations":
			sub = strings.ToLower(sub)
		case "metadata.labels":
		default:
			return field.ErrorList{field.Invalid(p.Child("fieldPath"), fp, "error converting fieldPath: field label does not support subscript: "+fp)}
		}
		for _, msg := range validation.IsQualifiedName(sub) {
			errs = append(errs, field.Invalid(p, sub, msg))
		}
		return errs
	}
	if fp == "spec.host" {
		fp = "spec.nodeName"
	} else if !slices.Contains(downwardAPIConvertibleFields, fp) {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fp, "error converting fieldPath: field label not supported: "+fp)}
	}
	if !slices.Contains(fields, fp) {
		return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fp, fields)}
	}
	return nil
}

// splitSubscriptedPath splits "metadata.labels['key']" into the path and
// the key, as upstream's fieldpath.SplitMaybeSubscriptedPath.
func splitSubscriptedPath(fp string) (string, string, bool) {
	if !strings.HasSuffix(fp, "']") {
		return fp, "", false
	}
	base, sub, ok := strings.Cut(strings.TrimSuffix(fp, "']"), "['")
	if !ok || base == "" {
		return fp, "", false
	}
	return base, sub, true
}

// validateProjectedSources checks a projected volume's sources (projected:
// the volume's projected path) as upstream's validateProjectionSources:
// each kind a source sets is checked (a secret or configMap names its
// object), a source setting more than one kind is Forbidden, and a file
// path used twice across the sources is Invalid on the projected path. A
// service account token expires in 10 minutes to 2^32 seconds; its path is
// required and (unless opts allow what the old object had) a local
// non-reserved path, both reported on the projected volume's path
// (upstream's fldPath.Child("path"), not the source's). A podCertificate
// source is checked by validatePodCertificateProjection.
func validateProjectedSources(sources []corev1.VolumeProjection, projected *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	claim := func(path string, value any) {
		if path == "" {
			return
		}
		if paths.Has(path) {
			errs = append(errs, field.Invalid(projected, value, "conflicting duplicate paths"))
		}
		paths.Insert(path)
	}
	for i, src := range sources {
		sp := projected.Child("sources").Index(i)
		kinds := 0
		if src.Secret != nil {
			kinds++
			if src.Secret.Name == "" {
				errs = append(errs, field.Required(sp.Child("secret", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("secret", "items"))...)
			for _, item := range src.Secret.Items {
				claim(item.Path, src.Secret.Name)
			}
		}
		if src.ConfigMap != nil {
			kinds++
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, sp.Child("configMap", "items"))...)
			for _, item := range src.ConfigMap.Items {
				claim(item.Path, src.ConfigMap.Name)
			}
		}
		if src.DownwardAPI != nil {
			kinds++
			errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, sp.Child("downwardAPI"))...)
			for _, item := range src.DownwardAPI.Items {
				claim(item.Path, item.Path)
			}
		}
		if src.ServiceAccountToken != nil {
			kinds++
			tp := sp.Child("serviceAccountToken")
			if exp := src.ServiceAccountToken.ExpirationSeconds; exp != nil {
				if *exp < 10*60 {
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
				}
				if *exp > 1<<32 {
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if src.ServiceAccountToken.Path == "" {
				errs = append(errs, field.Required(projected.Child("path"), ""))
			} else if !opts.allowNonLocalProjectedTokenPath {
				errs = append(errs, validateLocalNonReservedPath(src.ServiceAccountToken.Path, projected.Child("path"))...)
			}
		}
		if b := src.ClusterTrustBundle; b != nil {
			kinds++
			bp := sp.Child("clusterTrustBundle")
			switch {
			case b.Name != nil && b.SignerName != nil:
				errs = append(errs, field.Invalid(bp, b, "only one of name and signerName may be used"))
			case b.Name != nil:
				if *b.Name == "" {
					errs = append(errs, field.Required(bp.Child("name"), "must be a valid object name"))
				}
				errs = append(errs, validateClusterTrustBundleName(*b.Name, bp.Child("name"))...)
				if b.LabelSelector != nil {
					errs = append(errs, field.Invalid(bp.Child("labelSelector"), b.LabelSelector, "labelSelector must be unset if name is specified"))
				}
			case b.SignerName != nil:
				if *b.SignerName == "" {
					errs = append(errs, field.Required(bp.Child("signerName"), "must be a valid signer name"))
				}
				errs = append(errs, validateSignerNameSyntax(bp.Child("signerName"), *b.SignerName)...)
				errs = append(errs, validateLabelSelector(b.LabelSelector, bp.Child("labelSelector"))...)
			default:
				errs = append(errs, field.Required(bp, "either name or signerName must be specified"))
			}
			if b.Path == "" {
				errs = append(errs, field.Required(bp.Child("path"), ""))
			}
			errs = append(errs, validateLocalNonReservedPath(b.Path, bp.Child("path"))...)
			// Upstream claims a bundle's path even when empty.
			if paths.Has(b.Path) {
				errs = append(errs, field.Invalid(projected, b.Path, "conflicting duplicate paths"))
			}
			paths.Insert(b.Path)
		}
		if pc := src.PodCertificate; pc != nil {
			kinds++
			errs = append(errs, validatePodCertificateProjection(pc, sp.Child("podCertificate"), claim)...)
		}
		if kinds > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateClusterTrustBundleName checks the name a clusterTrustBundle
// projection names as upstream's validateProjectionSources does with
// ValidateClusterTrustBundleName: a name with a ":" is a signer's bundle,
// "<signer name with / as :>:<DNS-1123 subdomain>" (the signer taken from
// the part before the last ":"), any other a DNS-1123 subdomain.
func validateClusterTrustBundleName(name string, p *field.Path) field.ErrorList {
	var msgs []string
	if i := strings.LastIndex(name, ":"); i >= 0 {
		signer := strings.ReplaceAll(name[:i], ":", "/")
		prefix := strings.ReplaceAll(signer, "/", ":") + ":"
		if strings.HasPrefix(name, prefix) {
			msgs = validation.IsDNS1123Subdomain(strings.TrimPrefix(name, prefix))
		} else {
			msgs = []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
		}
	} else {
		msgs = validation.IsDNS1123Subdomain(name)
	}
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, name, "not a valid clustertrustbundlename: "+msg))
	}
	return errs
}

// Key types and lifetimes of a podCertificate projection (upstream's, and
// certificates.MaxMaxExpirationSeconds and KubernetesMaxMaxExpirationSeconds:
// 91 days, 24 hours for kubernetes.io signers).
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

const (
	podCertificateMinExpirationSeconds           = 3600
	podCertificateMaxExpirationSeconds           = 91 * 24 * 60 * 60
	podCertificateKubernetesMaxExpirationSeconds = 24 * 60 * 60
)

// validatePodCertificateProjection checks a projected volume's
// podCertificate source (PodCertificateRequest, GA in 1.37) at p as
// upstream's validateProjectionSources: the signer name's syntax
// (validateSignerNameSyntax), the user annotations (domain-prefixed keys,
// the annotations' size), a known key type, a maxExpirationSeconds, if
// given, from an hour to 91 days (24 hours for kubernetes.io signers), and
// at least one of the credential bundle, key and certificate chain paths,
// each a local non-reserved path not used by another source (claim
// reports that, on the projected volume's path).
func validatePodCertificateProjection(pc *corev1.PodCertificateProjection, p *field.Path, claim func(path string, value any)) field.ErrorList {
	errs := validateSignerNameSyntax(p.Child("signerName"), pc.SignerName)
	if pc.UserAnnotations != nil {
		errs = append(errs, validateUserAnnotations(pc.UserAnnotations, p.Child("userAnnotations"))...)
	}
	if !slices.Contains(podCertificateKeyTypes, pc.KeyType) {
		errs = append(errs, field.NotSupported(p.Child("keyType"), pc.KeyType, podCertificateKeyTypes))
	}
	if exp := pc.MaxExpirationSeconds; exp != nil {
		if *exp < podCertificateMinExpirationSeconds {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", podCertificateMinExpirationSeconds)))
		}
		most := podCertificateMaxExpirationSeconds
		if isKubernetesSignerName(pc.SignerName) {
			most = podCertificateKubernetesMaxExpirationSeconds
		}
		if *exp > int32(most) {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", most)))
		}
	}
	paths := 0
	for _, f := range []struct{ name, path string }{
		{"credentialBundlePath", pc.CredentialBundlePath}, {"keyPath", pc.KeyPath}, {"certificateChainPath", pc.CertificateChainPath},
	} {
		if f.path == "" {
			continue
		}
		paths++
		errs = append(errs, validateLocalNonReservedPath(f.path, p.Child(f.name))...)
		claim(f.path, f.path)
	}
	if paths == 0 {
		errs = append(errs, field.Required(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

// validateUserAnnotations checks a podCertificate projection's
// userAnnotations as upstream's ValidateUserAnnotations: each key
// (lower-cased) a domain-prefixed label key, and the annotations within
// the object annotations' total size.
func validateUserAnnotations(annotations map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		errs = append(errs, validation.IsDomainPrefixedKey(p, strings.ToLower(k))...)
	}
	if apivalidation.ValidateAnnotationsSize(annotations) != nil {
		errs = append(errs, field.TooLong(p, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// isKubernetesSignerName: a signer name reserved by the Kubernetes project
// (its domain kubernetes.io or a subdomain of it), as upstream's.
func isKubernetesSignerName(name string) bool {
	host, _, _ := strings.Cut(name, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}

// validateSignerNameSyntax checks a signer name as upstream's
// ValidateSignerName: required; one "/" between a domain and a path (else
// nothing more is checked); the domain at most 253 characters of DNS-1123
// labels (the first bad one reported) with at least one dot; the path of
// DNS-1123 subdomains separated by dots (the first bad one reported); the
// whole name at most 571 characters.
func validateSignerNameSyntax(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	domain, rest := segments[0], segments[1]
	if len(domain) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, "", validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(p, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(rest, ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, rest, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if most := 2*validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2; len(name) > most {
		errs = append(errs, field.TooLong(p, "", most))
	}
	return errs
}

// validateLocalNonReservedPath is validateLocalDescendingPath plus: the
// path may not start with ".." (the kubelet keeps its own "..data" there);
// ".." itself gets both errors, as upstream's ValidateLocalNonReservedPath.
func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

// validateLocalDescendingPath: a path inside a volume is relative and never
// climbs out of it.
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, p)...)
}

// validatePathNoBacksteps: no ".." element (one error however many).
func validatePathNoBacksteps(target string, p *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(target, "/"), "..") {
		return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
	}
	return nil
}
