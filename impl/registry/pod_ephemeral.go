package registry

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Ephemeral containers (pods/ephemeralcontainers, `kubectl debug`) are
// added to a running pod through their own subresource only: a create may
// not carry them, the main endpoint may not change them (validatePodUpdate
// keeps the whole spec but a few fields), and the subresource takes
// nothing but spec.ephemeralContainers, to which containers may be
// appended but never removed or changed.

// ephemeralContainerFields are the fields (by Go name) of
// EphemeralContainerCommon an ephemeral container may set; everything else
// (ports, resources, probes, lifecycle, restart and resize policies, and
// any field added later until it is considered) is forbidden, since an
// ephemeral container may not be relied on for the pod's own service.
var ephemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath", "TerminationMessagePolicy",
	"ImagePullPolicy", "SecurityContext", "Stdin", "StdinOnce", "TTY",
)

const notForEphemeral = "cannot be set for an Ephemeral Container"

// validatePodCreate: ephemeral containers are added to existing pods only.
func validatePodCreate(p *corev1.Pod) field.ErrorList {
	if len(p.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

// validateEphemeralContainers checks a pod spec's ephemeral containers:
// each as a container (name, image, env, mounts, ...) but with only the
// allowed fields set, a name unique among all the pod's containers (names
// holds the init and app containers' names) and a targetContainerName, if
// any, naming an init or app container.
func validateEphemeralContainers(s *corev1.PodSpec, volumes map[string]corev1.VolumeSource, names sets.Set[string], path *field.Path) field.ErrorList {
	if len(s.EphemeralContainers) == 0 {
		return nil
	}
	// The possible targets, before names takes the ephemeral ones too.
	targets := names.Clone()
	var errs field.ErrorList
	for i := range s.EphemeralContainers {
		ec := &s.EphemeralContainers[i]
		p := path.Index(i)
		errs = append(errs, validateContainerName(ec.Name, names, p.Child("name"))...)
		errs = append(errs, forbiddenEphemeralFields(&ec.EphemeralContainerCommon, p)...)
		// The common container checks, without the fields forbidden above
		// (which would be reported twice).
		c := allowedEphemeralFields(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainer(&c, volumes, p, false)...)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		// Sub-path mounts are bind mounts that live until the pod ends.
		for j, m := range ec.VolumeMounts {
			mp := p.Child("volumeMounts").Index(j)
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(mp.Child("subPath"), notForEphemeral))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(mp.Child("subPathExpr"), notForEphemeral))
			}
		}
	}
	return errs
}

// forbiddenEphemeralFields reports every set field outside
// ephemeralContainerFields, by its JSON name.
func forbiddenEphemeralFields(c *corev1.EphemeralContainerCommon, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if ephemeralContainerFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		errs = append(errs, field.Forbidden(path.Child(name), notForEphemeral))
	}
	return errs
}

// allowedEphemeralFields is c as a Container with only the allowed fields.
func allowedEphemeralFields(c *corev1.EphemeralContainerCommon) corev1.Container {
	var out corev1.Container
	src := reflect.ValueOf(c).Elem()
	dst := reflect.ValueOf(&out).Elem()
	for i := 0; i < src.NumField(); i++ {
		if name := src.Type().Field(i).Name; ephemeralContainerFields.Has(name) {
			dst.FieldByName(name).Set(src.Field(i))
		}
	}
	return out
}

// keepPodForEphemeralContainersUpdate: a write through
// pods/ephemeralcontainers takes spec.ephemeralContainers only; the rest of
// the spec, the status and the metadata a status write may not change
// (labels, annotations, finalizers, owner references) stay as stored. A
// change of the ephemeral containers is a change of the spec and bumps
// metadata.generation, as any pod spec change does.
func keepPodForEphemeralContainersUpdate(p, old *corev1.Pod) {
	ecs := p.Spec.EphemeralContainers
	p.Spec = *old.Spec.DeepCopy()
	p.Spec.EphemeralContainers = ecs
	p.Status = old.Status
	metav1.ResetObjectMetaForStatus(p, old)
	if !apiequality.Semantic.DeepEqual(ecs, old.Spec.EphemeralContainers) {
		p.Generation = old.Generation + 1
	}
}

// validatePodEphemeralContainersUpdate checks a pods/ephemeralcontainers
// write: the pod (with its new ephemeral containers) is valid, existing
// ephemeral containers are neither removed nor changed (matched by name,
// since a patch need not keep their order), and the pod is not a static
// pod's mirror (the kubelet runs those from files).
func validatePodEphemeralContainersUpdate(p, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	errs := validatePod(p)
	path := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(p.Spec.EphemeralContainers))
	for i := range p.Spec.EphemeralContainers {
		byName[p.Spec.EphemeralContainers[i].Name] = &p.Spec.EphemeralContainers[i]
	}
	for _, o := range old.Spec.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !apiequality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", o.Name, cmp.Diff(o, *n))))
		}
	}
	return errs
}
