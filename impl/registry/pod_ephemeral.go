package registry

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

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
func validateEphemeralContainers(s *corev1.PodSpec, volumes map[string]corev1.VolumeSource, names sets.Set[string], path *field.Path, opts podValidationOptions) field.ErrorList {
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
		// The common container checks, without the forbidden fields
		// (reported once, as forbidden).
		c, forbidden := splitEphemeralFields(&ec.EphemeralContainerCommon, p)
		errs = append(errs, forbidden...)
		errs = append(errs, validateContainer(&c, volumes, p, false, opts)...)
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

// ephemeralField is one field of EphemeralContainerCommon: its index, and
// for an allowed field the index of the same field in Container, else its
// JSON name (what a Forbidden error names).
type ephemeralField struct {
	src, dst int // dst is -1 for a forbidden field
	name     string
}

// ephemeralFieldTable is every field of EphemeralContainerCommon, in order,
// looked up once.
var ephemeralFieldTable = sync.OnceValue(func() []ephemeralField {
	src := reflect.TypeFor[corev1.EphemeralContainerCommon]()
	dst := reflect.TypeFor[corev1.Container]()
	table := make([]ephemeralField, src.NumField())
	for i := range table {
		f := src.Field(i)
		table[i] = ephemeralField{src: i, dst: -1}
		if ephemeralContainerFields.Has(f.Name) {
			d, ok := dst.FieldByName(f.Name)
			if !ok || d.Type != f.Type {
				panic(fmt.Sprintf("ephemeral container field %s is not a Container field of the same type", f.Name))
			}
			table[i].dst = d.Index[0]
			continue
		}
		table[i].name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
	}
	return table
})

// splitEphemeralFields is, in one walk over c's fields, c as a Container
// with only the fields in ephemeralContainerFields, and every set field
// outside them as Forbidden by its JSON name.
func splitEphemeralFields(c *corev1.EphemeralContainerCommon, path *field.Path) (corev1.Container, field.ErrorList) {
	var out corev1.Container
	var errs field.ErrorList
	src := reflect.ValueOf(c).Elem()
	dst := reflect.ValueOf(&out).Elem()
	for _, f := range ephemeralFieldTable() {
		v := src.Field(f.src)
		switch {
		case f.dst >= 0:
			dst.Field(f.dst).Set(v)
		case !v.IsZero():
			errs = append(errs, field.Forbidden(path.Child(f.name), notForEphemeral))
		}
	}
	return out, errs
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
	// As upstream's DropDisabledPodFields here: a new ephemeral
	// container's stopSignal goes unless the pod already uses one.
	dropDisabledStopSignals(&p.Spec, &old.Spec)
	p.Status = old.Status
	metav1.ResetObjectMetaForStatus(p, old)
	if !apiequality.Semantic.DeepEqual(ecs, old.Spec.EphemeralContainers) {
		p.Generation = old.Generation + 1
	}
}

// validatePodEphemeralContainersUpdate checks a pods/ephemeralcontainers
// write: the pod (with its new ephemeral containers) is valid (relaxed as
// for any update by what the stored pod already had), existing
// ephemeral containers are neither removed nor changed (matched by name,
// since a patch need not keep their order), and the pod is not a static
// pod's mirror (the kubelet runs those from files).
func validatePodEphemeralContainersUpdate(p, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	errs := validatePod(p, podValidationOptionsFor(&old.Spec))
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
