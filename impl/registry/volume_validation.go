package registry

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks names (unique DNS-1123 labels) and that each
// volume has exactly one source; it returns the volumes by name.
func validateVolumes(volumes []corev1.Volume, path *field.Path, opts podValidationOptions) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		p := path.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, dnsLabel(v.Name, p.Child("name"))...)
		}
		if _, dup := byName[v.Name]; dup && v.Name != "" {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		byName[v.Name] = v.VolumeSource
		switch n := countVolumeSources(&v.VolumeSource); {
		case n == 0:
			errs = append(errs, field.Required(p, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(p, "may not specify more than 1 volume type"))
		}
		src := v.VolumeSource
		checkMode := func(mode *int32, mp *field.Path) {
			if mode != nil && (*mode < 0 || *mode > 0777) {
				errs = append(errs, field.Invalid(mp, *mode, fileModeErrorMsg))
			}
		}
		switch {
		case src.ConfigMap != nil:
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("configMap", "name"), ""))
			}
			checkMode(src.ConfigMap.DefaultMode, p.Child("configMap", "defaultMode"))
			errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("configMap", "items"))...)
		case src.Secret != nil:
			if src.Secret.SecretName == "" {
				errs = append(errs, field.Required(p.Child("secret", "secretName"), ""))
			}
			checkMode(src.Secret.DefaultMode, p.Child("secret", "defaultMode"))
			errs = append(errs, validateKeyToPaths(src.Secret.Items, p.Child("secret", "items"))...)
		case src.HostPath != nil:
			if src.HostPath.Path == "" {
				errs = append(errs, field.Required(p.Child("hostPath", "path"), ""))
			}
		case src.PersistentVolumeClaim != nil:
			if src.PersistentVolumeClaim.ClaimName == "" {
				errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
			}
		case src.Projected != nil:
			checkMode(src.Projected.DefaultMode, p.Child("projected", "defaultMode"))
			errs = append(errs, validateProjectedSources(src.Projected.Sources, p.Child("projected"), opts)...)
		case src.DownwardAPI != nil:
			checkMode(src.DownwardAPI.DefaultMode, p.Child("downwardAPI", "defaultMode"))
			errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, p.Child("downwardAPI", "items"))...)
		}
	}
	return byName, errs
}

// countVolumeSources counts the non-nil sources of a volume.
func countVolumeSources(s *corev1.VolumeSource) int {
	n := 0
	for _, set := range []bool{
		s.HostPath != nil, s.EmptyDir != nil, s.GCEPersistentDisk != nil, s.AWSElasticBlockStore != nil,
		s.GitRepo != nil, s.Secret != nil, s.NFS != nil, s.ISCSI != nil, s.Glusterfs != nil,
		s.PersistentVolumeClaim != nil, s.RBD != nil, s.FlexVolume != nil, s.Cinder != nil,
		s.CephFS != nil, s.Flocker != nil, s.DownwardAPI != nil, s.FC != nil, s.AzureFile != nil,
		s.ConfigMap != nil, s.VsphereVolume != nil, s.Quobyte != nil, s.AzureDisk != nil,
		s.PhotonPersistentDisk != nil, s.Projected != nil, s.PortworxVolume != nil, s.ScaleIO != nil,
		s.StorageOS != nil, s.CSI != nil, s.Ephemeral != nil, s.Image != nil,
	} {
		if set {
			n++
		}
	}
	return n
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

func validateDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		ip := p.Index(i)
		if item.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(item.Path, ip.Child("path"))...)
		errs = append(errs, validateFileMode(item.Mode, ip.Child("mode"))...)
		switch {
		case item.FieldRef != nil && item.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(ip, "", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case item.FieldRef == nil && item.ResourceFieldRef == nil:
			errs = append(errs, field.Required(ip, "must specify one of: `fieldRef` or `resourceFieldRef`"))
		case item.ResourceFieldRef != nil:
			errs = append(errs, validateResourceFieldSelector(item.ResourceFieldRef, ip.Child("resourceFieldRef"), true)...)
		}
	}
	return errs
}

// validateProjectedSources checks a projected volume's sources (projected:
// the volume's projected path). A service account token's path is checked
// as upstream's validateProjectionSources: required, and (unless opts
// allow what the old object had) a local non-reserved path, both reported
// on the projected volume's path (upstream's fldPath.Child("path"), not
// the source's).
func validateProjectedSources(sources []corev1.VolumeProjection, projected *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	p := projected.Child("sources")
	for i, src := range sources {
		sp := p.Index(i)
		switch {
		case src.ConfigMap != nil:
			errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, sp.Child("configMap", "items"))...)
		case src.Secret != nil:
			errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("secret", "items"))...)
		case src.DownwardAPI != nil:
			errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"))...)
		case src.ServiceAccountToken != nil:
			tp := sp.Child("serviceAccountToken")
			if exp := src.ServiceAccountToken.ExpirationSeconds; exp != nil && *exp < 10*60 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
			}
			if src.ServiceAccountToken.Path == "" {
				errs = append(errs, field.Required(projected.Child("path"), ""))
			} else if !opts.allowNonLocalProjectedTokenPath {
				errs = append(errs, validateLocalNonReservedPath(src.ServiceAccountToken.Path, projected.Child("path"))...)
			}
		}
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
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(p, target, "must not contain '..'"))
			break
		}
	}
	return errs
}
