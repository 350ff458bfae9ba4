package registry

import (
	"net"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The own fields of the in-tree volume plugins, checked as upstream's
// validate<Plugin>VolumeSource functions (pkg/apis/core/validation), with
// their messages and paths (including upstream's odd ones: a
// gcePersistentDisk's fields on "persistentDisk", a cephFS's on "cephfs", an
// iscsi initiator name on "initiatorname", a csi secret's name on
// "csi.name"). validateVolumeSource calls validatePluginVolumeSource for the
// one source it checks.

// pdPartitionErrorMsg is upstream's message for a disk partition out of
// 0..255 (it says 1, as upstream's does).
var pdPartitionErrorMsg = validation.InclusiveRangeError(1, 255)

var (
	iscsiIQNRegex = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	iscsiEUIRegex = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	iscsiNAARegex = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)

	// Azure disk caching modes and kinds as upstream lists them (sorted).
	azureCachingModes = []string{string(corev1.AzureDataDiskCachingNone), string(corev1.AzureDataDiskCachingReadOnly),
		string(corev1.AzureDataDiskCachingReadWrite)}
	azureDiskKinds = []string{string(corev1.AzureDedicatedBlobDisk), string(corev1.AzureManagedDisk), string(corev1.AzureSharedBlobDisk)}
)

// validatePluginVolumeSource checks the fields of src's kind (a name from
// volumeSourceKinds) for the plugins that have no case of their own in
// validateVolumeSource; p is the volume's path.
func validatePluginVolumeSource(kind string, src *corev1.VolumeSource, p *field.Path) field.ErrorList {
	req := func(fp *field.Path, v string) field.ErrorList {
		if v == "" {
			return field.ErrorList{field.Required(fp, "")}
		}
		return nil
	}
	var errs field.ErrorList
	switch kind {
	case "gcePersistentDisk":
		fp := p.Child("persistentDisk")
		errs = append(errs, req(fp.Child("pdName"), src.GCEPersistentDisk.PDName)...)
		if n := src.GCEPersistentDisk.Partition; n < 0 || n > 255 {
			errs = append(errs, field.Invalid(fp.Child("partition"), n, pdPartitionErrorMsg))
		}
	case "awsElasticBlockStore":
		fp := p.Child("awsElasticBlockStore")
		errs = append(errs, req(fp.Child("volumeID"), src.AWSElasticBlockStore.VolumeID)...)
		if n := src.AWSElasticBlockStore.Partition; n < 0 || n > 255 {
			errs = append(errs, field.Invalid(fp.Child("partition"), n, pdPartitionErrorMsg))
		}
	case "nfs":
		fp := p.Child("nfs")
		errs = append(errs, req(fp.Child("server"), src.NFS.Server)...)
		errs = append(errs, req(fp.Child("path"), src.NFS.Path)...)
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(fp.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case "iscsi":
		errs = append(errs, validateISCSIVolumeSource(src.ISCSI, p.Child("iscsi"))...)
	case "glusterfs":
		fp := p.Child("glusterfs")
		errs = append(errs, req(fp.Child("endpoints"), src.Glusterfs.EndpointsName)...)
		errs = append(errs, req(fp.Child("path"), src.Glusterfs.Path)...)
	case "flocker":
		fp, f := p.Child("flocker"), src.Flocker
		if f.DatasetName == "" && f.DatasetUUID == "" {
			errs = append(errs, field.Required(fp, "one of datasetName and datasetUUID is required"))
		}
		if f.DatasetName != "" && f.DatasetUUID != "" {
			errs = append(errs, field.Invalid(fp, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
		}
		if strings.Contains(f.DatasetName, "/") {
			errs = append(errs, field.Invalid(fp.Child("datasetName"), f.DatasetName, "must not contain '/'"))
		}
	case "rbd":
		fp := p.Child("rbd")
		if len(src.RBD.CephMonitors) == 0 {
			errs = append(errs, field.Required(fp.Child("monitors"), ""))
		}
		errs = append(errs, req(fp.Child("image"), src.RBD.RBDImage)...)
	case "cinder":
		fp := p.Child("cinder")
		errs = append(errs, req(fp.Child("volumeID"), src.Cinder.VolumeID)...)
		if src.Cinder.SecretRef != nil {
			errs = append(errs, req(fp.Child("secretRef", "name"), src.Cinder.SecretRef.Name)...)
		}
	case "cephFS":
		if len(src.CephFS.Monitors) == 0 {
			errs = append(errs, field.Required(p.Child("cephfs", "monitors"), ""))
		}
	case "quobyte":
		errs = append(errs, validateQuobyteVolumeSource(src.Quobyte, p.Child("quobyte"))...)
	case "fc":
		errs = append(errs, validateFCVolumeSource(src.FC, p.Child("fc"))...)
	case "flexVolume":
		fp := p.Child("flexVolume")
		errs = append(errs, req(fp.Child("driver"), src.FlexVolume.Driver)...)
		for k := range src.FlexVolume.Options {
			ns := k
			if before, _, ok := strings.Cut(k, "/"); ok {
				ns = before
			}
			norm := "." + strings.ToLower(ns)
			if strings.HasSuffix(norm, ".kubernetes.io") || strings.HasSuffix(norm, ".k8s.io") {
				errs = append(errs, field.Invalid(fp.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
			}
		}
	case "azureFile":
		fp := p.Child("azureFile")
		errs = append(errs, req(fp.Child("secretName"), src.AzureFile.SecretName)...)
		errs = append(errs, req(fp.Child("shareName"), src.AzureFile.ShareName)...)
	case "vsphereVolume":
		errs = append(errs, req(p.Child("vsphereVolume", "volumePath"), src.VsphereVolume.VolumePath)...)
	case "photonPersistentDisk":
		errs = append(errs, req(p.Child("photonPersistentDisk", "pdID"), src.PhotonPersistentDisk.PdID)...)
	case "portworxVolume":
		errs = append(errs, req(p.Child("portworxVolume", "volumeID"), src.PortworxVolume.VolumeID)...)
	case "azureDisk":
		errs = append(errs, validateAzureDisk(src.AzureDisk, p.Child("azureDisk"))...)
	case "storageos":
		fp, s := p.Child("storageos"), src.StorageOS
		if s.VolumeName == "" {
			errs = append(errs, field.Required(fp.Child("volumeName"), ""))
		} else {
			errs = append(errs, dnsLabel(s.VolumeName, fp.Child("volumeName"))...)
		}
		if s.VolumeNamespace != "" {
			errs = append(errs, dnsLabel(s.VolumeNamespace, fp.Child("volumeNamespace"))...)
		}
		if s.SecretRef != nil {
			errs = append(errs, req(fp.Child("secretRef", "name"), s.SecretRef.Name)...)
		}
	case "scaleIO":
		fp := p.Child("scaleIO")
		errs = append(errs, req(fp.Child("gateway"), src.ScaleIO.Gateway)...)
		errs = append(errs, req(fp.Child("system"), src.ScaleIO.System)...)
		errs = append(errs, req(fp.Child("volumeName"), src.ScaleIO.VolumeName)...)
	case "csi":
		fp, c := p.Child("csi"), src.CSI
		errs = append(errs, validateCSIDriverName(c.Driver, fp.Child("driver"))...)
		if ref := c.NodePublishSecretRef; ref != nil {
			if ref.Name == "" {
				errs = append(errs, field.Required(fp.Child("nodePublishSecretRef", "name"), ""))
			} else {
				errs = append(errs, dnsSubdomain(ref.Name, fp.Child("name"))...)
			}
		}
	}
	return errs
}

// validateCSIDriverName is upstream's ValidateCSIDriverName: required, at
// most 63 characters, a DNS-1123 subdomain once lower-cased.
func validateCSIDriverName(driver string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if driver == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(driver) > 63 {
		errs = append(errs, field.TooLong(p, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(driver)) {
		errs = append(errs, field.Invalid(p, driver, msg))
	}
	return errs
}

// iscsiNameErrors checks an iqn or initiator name: one of the iqn, eui or
// naa formats, with upstream's messages.
func iscsiNameErrors(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !strings.HasPrefix(name, "iqn") && !strings.HasPrefix(name, "eui") && !strings.HasPrefix(name, "naa") {
		errs = append(errs, field.Invalid(p, name, "must be valid format starting with iqn, eui, or naa"))
	}
	switch {
	case strings.HasPrefix(name, "iqn") && !iscsiIQNRegex.MatchString(name),
		strings.HasPrefix(name, "eui") && !iscsiEUIRegex.MatchString(name),
		strings.HasPrefix(name, "naa") && !iscsiNAARegex.MatchString(name):
		errs = append(errs, field.Invalid(p, name, "must be valid format"))
	}
	return errs
}

func validateISCSIVolumeSource(s *corev1.ISCSIVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TargetPortal == "" {
		errs = append(errs, field.Required(p.Child("targetPortal"), ""))
	}
	if s.IQN == "" {
		errs = append(errs, field.Required(p.Child("iqn"), ""))
	} else {
		errs = append(errs, iscsiNameErrors(s.IQN, p.Child("iqn"))...)
	}
	if s.Lun < 0 || s.Lun > 255 {
		errs = append(errs, field.Invalid(p.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		errs = append(errs, field.Required(p.Child("secretRef"), ""))
	}
	if s.InitiatorName != nil {
		errs = append(errs, iscsiNameErrors(*s.InitiatorName, p.Child("initiatorname"))...)
	}
	return errs
}

// validateISCSIVolumeName: with an initiator name, "<volume>:<targetPortal>"
// is at most 64 characters (reported on the volume's name whether or not
// the iscsi source is the one validated, as upstream).
func validateISCSIVolumeName(name string, src *corev1.VolumeSource, p *field.Path) field.ErrorList {
	if src.ISCSI == nil || src.ISCSI.InitiatorName == nil || len(name+":"+src.ISCSI.TargetPortal) <= 64 {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("name"), name,
		"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.")}
}

func validateQuobyteVolumeSource(q *corev1.QuobyteVolumeSource, p *field.Path) field.ErrorList {
	const registryMsg = "must be a host:port pair or multiple pairs separated by commas"
	var errs field.ErrorList
	switch {
	case q.Registry == "":
		errs = append(errs, field.Required(p.Child("registry"), registryMsg))
	case len(q.Tenant) >= 65:
		errs = append(errs, field.Required(p.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, pair := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(pair); err != nil {
				errs = append(errs, field.Invalid(p.Child("registry"), q.Registry, registryMsg))
			}
		}
	}
	if q.Volume == "" {
		errs = append(errs, field.Required(p.Child("volume"), ""))
	}
	return errs
}

func validateFCVolumeSource(fc *corev1.FCVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fc.TargetWWNs) < 1 && len(fc.WWIDs) < 1 {
		errs = append(errs, field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		errs = append(errs, field.Invalid(p.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			errs = append(errs, field.Required(p.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *fc.Lun < 0 || *fc.Lun > 255 {
			errs = append(errs, field.Invalid(p.Child("lun"), *fc.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

func validateAzureDisk(a *corev1.AzureDiskVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.DiskName == "" {
		errs = append(errs, field.Required(p.Child("diskName"), ""))
	}
	if a.DataDiskURI == "" {
		errs = append(errs, field.Required(p.Child("diskURI"), ""))
	}
	if a.CachingMode != nil && !slices.Contains(azureCachingModes, string(*a.CachingMode)) {
		errs = append(errs, field.NotSupported(p.Child("cachingMode"), *a.CachingMode, azureCachingModes))
	}
	if a.Kind != nil && !slices.Contains(azureDiskKinds, string(*a.Kind)) {
		errs = append(errs, field.NotSupported(p.Child("kind"), *a.Kind, azureDiskKinds))
	}
	if a.Kind != nil && *a.Kind == corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), a.DataDiskURI,
			[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if a.Kind != nil && *a.Kind != corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), a.DataDiskURI,
			[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}
