package registry

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainerName checks a container name and records it in names;
// names are unique across init, app and ephemeral containers.
func validateContainerName(name string, names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		errs = append(errs, dnsLabel(name, p)...)
	}
	if names.Has(name) {
		errs = append(errs, field.Duplicate(p, name))
	}
	names.Insert(name)
	return errs
}

// validateContainerList checks init (init) or app containers; gracePeriod
// is the pod's terminationGracePeriodSeconds, which bounds a sleep hook.
func validateContainerList(cs []corev1.Container, volumes map[string]corev1.VolumeSource, names sets.Set[string], path *field.Path, init bool, gracePeriod *int64, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		c := &cs[i]
		p := path.Index(i)
		errs = append(errs, validateContainerName(c.Name, names, p.Child("name"))...)
		errs = append(errs, validateContainer(c, volumes, p, init, opts)...)
		errs = append(errs, validateProbesAndLifecycle(c, p, init, gracePeriod)...)
	}
	return errs
}

// validateProbesAndLifecycle checks an app or init container's probes and
// lifecycle hooks as upstream's validateContainers/validateInitContainers:
// an init container that is no sidecar (restartPolicy Always) may have
// neither (Forbidden, nothing more checked); otherwise each probe's and
// hook's handler (validateHandler), a liveness or startup probe's
// successThreshold 1 and no readiness probe's terminationGracePeriodSeconds.
func validateProbesAndLifecycle(c *corev1.Container, p *field.Path, init bool, gracePeriod *int64) field.ErrorList {
	var errs field.ErrorList
	if init && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
		const notSidecar = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), notSidecar))
		}
		for _, probe := range []struct {
			set  bool
			name string
		}{{c.LivenessProbe != nil, "livenessProbe"}, {c.ReadinessProbe != nil, "readinessProbe"}, {c.StartupProbe != nil, "startupProbe"}} {
			if probe.set {
				errs = append(errs, field.Forbidden(p.Child(probe.name), notSidecar))
			}
		}
		return errs
	}
	if lc := c.Lifecycle; lc != nil {
		if lc.PostStart != nil {
			errs = append(errs, validateHandler(lifecycleActions(lc.PostStart, gracePeriod), p.Child("lifecycle", "postStart"))...)
		}
		if lc.PreStop != nil {
			errs = append(errs, validateHandler(lifecycleActions(lc.PreStop, gracePeriod), p.Child("lifecycle", "preStop"))...)
		}
	}
	if pr := c.LivenessProbe; pr != nil {
		errs = append(errs, validateProbe(pr, p.Child("livenessProbe"))...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.Child("livenessProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		errs = append(errs, validateProbe(pr, p.Child("readinessProbe"))...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		errs = append(errs, validateProbe(pr, p.Child("startupProbe"))...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.Child("startupProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

// validatePullPolicy checks a container's or image volume's pull policy
// as upstream's validatePullPolicy: required, one of the known policies.
func validatePullPolicy(pp corev1.PullPolicy, p *field.Path) field.ErrorList {
	switch pp {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(p, "")}
	default:
		return field.ErrorList{field.NotSupported(p, pp, pullPolicies)}
	}
}

func validateContainer(c *corev1.Container, volumes map[string]corev1.VolumeSource, p *field.Path, init bool, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	// Whitespace around a pod's images: validateImageWhitespace.
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), "must be 'File' or 'FallbackToLogsOnError'"))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, terminationMessagePolicies))
	}
	errs = append(errs, validatePorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c, volumes, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c, volumes, p.Child("volumeDevices"))...)
	errs = append(errs, validateContainerResources(&c.Resources, p.Child("resources"), opts)...)
	// Probes and lifecycle hooks: validateProbesAndLifecycle (ephemeral
	// containers may have neither).
	if c.RestartPolicy != nil {
		if !init {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		} else if *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{string(corev1.ContainerRestartPolicyAlways)}))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		errs = append(errs, validateContainerSecurityContext(sc, p.Child("securityContext"))...)
	}
	return errs
}

// handlerAction is one of the actions a probe or hook may take: its field
// name, whether it is set and its own checks (at the action's path).
type handlerAction struct {
	name  string
	set   bool
	check func(p *field.Path) field.ErrorList
}

// validateHandler checks a probe's or hook's handler as upstream's
// validateHandler: one action is required; the first set (in the order
// given, upstream's) is checked, each further one is Forbidden on its own
// path.
func validateHandler(actions []handlerAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, a := range actions {
		switch {
		case !a.set:
		case n > 0:
			errs = append(errs, field.Forbidden(path.Child(a.name), "may not specify more than 1 handler type"))
		default:
			n++
			errs = append(errs, a.check(path.Child(a.name))...)
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

// probeActions are a probe's actions: exec, httpGet, tcpSocket, grpc.
func probeActions(h *corev1.ProbeHandler) []handlerAction {
	return []handlerAction{
		{"exec", h.Exec != nil, func(p *field.Path) field.ErrorList { return validateExecAction(h.Exec, p) }},
		{"httpGet", h.HTTPGet != nil, func(p *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, p) }},
		{"tcpSocket", h.TCPSocket != nil, func(p *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, p.Child("port")) }},
		{"grpc", h.GRPC != nil, func(p *field.Path) field.ErrorList {
			return validatePortNumOrName(intstr.FromInt32(h.GRPC.Port), p.Child("port"))
		}},
	}
}

// lifecycleActions are a hook's actions: exec, httpGet, tcpSocket, sleep
// (which gracePeriod, the pod's terminationGracePeriodSeconds, bounds).
func lifecycleActions(h *corev1.LifecycleHandler, gracePeriod *int64) []handlerAction {
	return []handlerAction{
		{"exec", h.Exec != nil, func(p *field.Path) field.ErrorList { return validateExecAction(h.Exec, p) }},
		{"httpGet", h.HTTPGet != nil, func(p *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, p) }},
		{"tcpSocket", h.TCPSocket != nil, func(p *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, p.Child("port")) }},
		{"sleep", h.Sleep != nil, func(p *field.Path) field.ErrorList { return validateSleepAction(h.Sleep, gracePeriod, p) }},
	}
}

func validateExecAction(e *corev1.ExecAction, p *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(p.Child("command"), "")}
	}
	return nil
}

// validateHTTPGetAction: a path (defaulted "/"), a port, a known scheme
// and HTTP header names.
func validateHTTPGetAction(h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, p.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(p.Child("scheme"), h.Scheme, []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}))
	}
	for _, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(p.Child("httpHeaders"), hdr.Name, msg))
		}
	}
	return errs
}

// validateSleepAction: a sleep hook lasts from 0 (PodLifecycleSleepActionAllowZero,
// on since 1.33) to the pod's termination grace period, as upstream's with
// AllowPodLifecycleSleepActionZeroValue; reported on the sleep's path.
func validateSleepAction(s *corev1.SleepAction, gracePeriod *int64, p *field.Path) field.ErrorList {
	if gracePeriod != nil && (s.Seconds < 0 || s.Seconds > *gracePeriod) {
		return field.ErrorList{field.Invalid(p, s.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
	}
	return nil
}

func validateIDs(user, group *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		for _, msg := range validation.IsValidUserID(*user) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range validation.IsValidGroupID(*group) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *group, msg))
		}
	}
	return errs
}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			// An invalid name is not also checked for duplicates.
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		case "":
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, portProtocols))
		}
	}
	return errs
}

// validateHostPortConflicts rejects two ports asking for the same host
// port, protocol and host IP, as upstream's checkHostPortConflicts: across
// the app containers, and within each init container (init containers run
// one at a time); reported as Duplicate "<protocol>/<hostIP>/<port>".
func validateHostPortConflicts(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(cs []corev1.Container, path *field.Path, seen sets.Set[string]) {
		for i, c := range cs {
			for j, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
				if seen.Has(key) {
					errs = append(errs, field.Duplicate(path.Index(i).Child("ports").Index(j).Child("hostPort"), key))
				}
				seen.Insert(key)
			}
		}
	}
	// Upstream checks each init container as a list of one, so the error
	// names it initContainers[0] whichever it is; so do we.
	for i := range s.InitContainers {
		check(s.InitContainers[i:i+1], path.Child("initContainers"), sets.New[string]())
	}
	check(s.Containers, path.Child("containers"), sets.New[string]())
	return errs
}

// envDownwardAPIFields are the fields an env var's fieldRef may name
// besides label and annotation subscripts (upstream's
// validEnvDownwardAPIFieldPathExpressions, sorted).
var envDownwardAPIFields = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		p := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
			}
		}
		if from := e.ValueFrom; from != nil {
			n := 0
			if from.FieldRef != nil {
				n++
				errs = append(errs, validateObjectFieldSelector(from.FieldRef, envDownwardAPIFields, p.Child("valueFrom", "fieldRef"))...)
			}
			if from.ResourceFieldRef != nil {
				n++
				errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, p.Child("valueFrom", "resourceFieldRef"), false)...)
			}
			if ref := from.ConfigMapKeyRef; ref != nil {
				n++
				errs = append(errs, validateKeySelector(ref.Name, ref.Key, p.Child("valueFrom", "configMapKeyRef"))...)
			}
			if ref := from.SecretKeyRef; ref != nil {
				n++
				errs = append(errs, validateKeySelector(ref.Name, ref.Key, p.Child("valueFrom", "secretKeyRef"))...)
			}
			if ref := from.FileKeyRef; ref != nil {
				n++
				errs = append(errs, validateFileKeySelector(ref, p.Child("valueFrom", "fileKeyRef"))...)
			}
			// One error, in upstream's order of precedence; the list names
			// fileKeyRef as upstream's does with AllowEnvFilesValidation,
			// which EnvFiles (on by default since 1.35) always sets.
			switch {
			case n == 0:
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
			case e.Value != "":
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
			case n > 1:
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not have more than one field specified at a time"))
			}
		}
	}
	return errs
}

// validateEnvFrom checks a container's envFrom as upstream's
// ValidateEnvFrom: a prefix, if any, is an env var name (relaxed); a
// configMapRef's or secretRef's name is required and an object name (a
// trailing "-" allowed, as upstream's prefix form); exactly one of them is
// set, else an error on the envFrom list's path (not the entry's).
func validateEnvFrom(froms []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ref := func(name string, p *field.Path) {
		if name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
			return
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
			errs = append(errs, field.Invalid(p.Child("name"), name, msg))
		}
	}
	for i, from := range froms {
		fp := path.Index(i)
		if from.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(from.Prefix) {
				errs = append(errs, field.Invalid(fp.Child("prefix"), from.Prefix, msg))
			}
		}
		n := 0
		if from.ConfigMapRef != nil {
			n++
			ref(from.ConfigMapRef.Name, fp.Child("configMapRef"))
		}
		if from.SecretRef != nil {
			n++
			ref(from.SecretRef.Name, fp.Child("secretRef"))
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateFileKeySelector checks an env var's fileKeyRef (EnvFiles) as
// upstream's validateFileKeySelector: the key is required and an env var
// name (relaxed: printable ASCII but '='), the volume name required and a
// DNS-1123 label, the path required and without ".." elements (it may be
// absolute: upstream checks no more). The volume it names is checked with
// the pod's volumes (validateFileKeyRefVolumes).
func validateFileKeySelector(s *corev1.FileKeySelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), s.Key, msg))
		}
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		errs = append(errs, dnsLabel(s.VolumeName, p.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, validatePathNoBacksteps(s.Path, p.Child("path"))...)
	}
	return errs
}

// validateFileKeyRefVolumes: the volume each env var's fileKeyRef names (in
// init, app and ephemeral containers, in that order) is one of the pod's
// volumes (any of them, valid or not; the last of a duplicated name) and
// an emptyDir, as upstream's validateFileKeyRefVolumes.
func validateFileKeyRefVolumes(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(env []corev1.EnvVar, p containerPath) {
		for j, e := range env {
			if e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil {
				continue
			}
			name := e.ValueFrom.FileKeyRef.VolumeName
			np := p.Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			switch src := volumeSourceNamed(s.Volumes, name); {
			case src == nil:
				errs = append(errs, field.NotFound(np, name))
			case src.EmptyDir == nil:
				errs = append(errs, field.Invalid(np, name, "referenced volume must be of type emptyDir"))
			}
		}
	}
	for i := range s.InitContainers {
		check(s.InitContainers[i].Env, containerPath{path, "initContainers", i})
	}
	for i := range s.Containers {
		check(s.Containers[i].Env, containerPath{path, "containers", i})
	}
	for i := range s.EphemeralContainers {
		check(s.EphemeralContainers[i].Env, containerPath{path, "ephemeralContainers", i})
	}
	return errs
}

// volumeSourceNamed is the source of the volume of that name (the last
// of that name, as a map of them would hold), nil if none.
func volumeSourceNamed(volumes []corev1.Volume, name string) *corev1.VolumeSource {
	for i := len(volumes) - 1; i >= 0; i-- {
		if volumes[i].Name == name {
			return &volumes[i].VolumeSource
		}
	}
	return nil
}

// validateKeySelector checks an env var's configMapKeyRef or secretKeyRef
// as upstream's validateConfigMapKeySelector/validateSecretKeySelector:
// the name is an object name (DNS-1123 subdomain; empty is Invalid too),
// the key required and a config map key.
func validateKeySelector(name, key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p.Child("name"), name, msg))
	}
	if key == "" {
		return append(errs, field.Required(p.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p.Child("key"), key, msg))
	}
	return errs
}

// downwardAPIResources are the resources a downward API resourceFieldRef
// may name, besides limits.hugepages-<size> and requests.hugepages-<size>
// (upstream's validContainerResourceFieldPathExpressions and its hugepages
// prefixes, DownwardAPIHugePages being GA), sorted as upstream lists them.
var downwardAPIResources = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// validateResourceFieldSelector checks a downward API resourceFieldRef as
// upstream's validateContainerResourceFieldSelector: a downwardAPI volume
// file must name its container; the resource is required and one of
// downwardAPIResources or a hugepages request or limit (any name after
// the prefix); the divisor is checked (validateResourceDivisor).
func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, p *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !slices.Contains(downwardAPIResources, fs.Resource) && !isHugePagesFieldRef(fs.Resource):
		errs = append(errs, field.NotSupported(p.Child("resource"), fs.Resource, downwardAPIResources))
	}
	return append(errs, validateResourceDivisor(fs.Resource, fs.Divisor, p)...)
}

// isHugePagesFieldRef: requests.hugepages-... or limits.hugepages-...
func isHugePagesFieldRef(res string) bool {
	return strings.HasPrefix(res, "requests."+corev1.ResourceHugePagesPrefix) || strings.HasPrefix(res, "limits."+corev1.ResourceHugePagesPrefix)
}

// downwardAPIByteDivisors are the divisors of memory, ephemeral-storage
// and hugepages values (upstream's validContainerResourceDivisorFor*), as
// Quantity.String spells them.
var downwardAPIByteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")

// validateResourceDivisor checks a set divisor as upstream's
// validateContainerResourceDivisor: 1m or 1 for cpu, a unit power of ten
// or two for memory, ephemeral-storage and hugepages; any divisor for a
// resource it does not know (that one is refused as not supported).
func validateResourceDivisor(res string, divisor resource.Quantity, p *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String()
	var what string
	switch {
	case res == "limits.cpu" || res == "requests.cpu":
		if d != "1m" && d != "1" {
			return field.ErrorList{field.Invalid(p.Child("divisor"), res, "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
		return nil
	case res == "limits.memory" || res == "requests.memory":
		what = "memory"
	case res == "limits.ephemeral-storage" || res == "requests.ephemeral-storage":
		what = "local ephemeral storage"
	case isHugePagesFieldRef(res):
		what = "hugepages"
	default:
		return nil
	}
	if downwardAPIByteDivisors.Has(d) {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("divisor"), res,
		fmt.Sprintf("only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the %s resource", what))}
}

// validateVolumeMounts checks a container's mounts as upstream's
// ValidateVolumeMounts: each names a valid volume (an empty name is also
// not found) and a unique mount path; subPath and subPathExpr (an image
// volume's too, since 1.33's image volume beta) stay inside the volume and
// exclude each other; mount propagation and recursive read-only as
// validateMountPropagation and validateMountRecursiveReadOnly. Upstream
// reports the subPath, subPathExpr, mountPropagation and recursiveReadOnly
// checks on the volumeMounts path without the mount's index, and so do we.
func validateVolumeMounts(c *corev1.Container, volumes map[string]corev1.VolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Upstream compares with each device name's last path (GetVolumeDeviceMap).
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	paths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if _, dev := devices[m.Name]; dev {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if slices.Contains(slices.Collect(maps.Values(devices)), m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, path.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, path.Child("subPathExpr"))...)
		}
		errs = append(errs, validateMountPropagation(m.MountPropagation, c, path.Child("mountPropagation"))...)
		errs = append(errs, validateMountRecursiveReadOnly(m, path.Child("recursiveReadOnly"))...)
	}
	return errs
}

// validateVolumeDevices checks a container's block devices as upstream's
// ValidateVolumeDevices: each names a valid claim-backed volume
// (persistentVolumeClaim or ephemeral) not named twice, at a unique
// device path without ".." elements, and neither the name nor the path is
// also one of the container's mounts'.
func validateVolumeDevices(c *corev1.Container, volumes map[string]corev1.VolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, devPaths := sets.New[string](), sets.New[string]()
	// Upstream compares with each mount name's last path (GetVolumeMountMap).
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for i, d := range c.VolumeDevices {
		p := path.Index(i)
		v, matched := volumes[d.Name]
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if matched && v.PersistentVolumeClaim == nil && v.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if devPaths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p)) > 0 {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			devPaths.Insert(d.DevicePath)
		}
		if _, mounted := mounts[d.Name]; mounted {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if slices.Contains(slices.Collect(maps.Values(mounts)), d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}

// mountPropagations and recursiveReadOnlyModes as upstream lists them.
var (
	mountPropagations = []string{string(corev1.MountPropagationBidirectional), string(corev1.MountPropagationHostToContainer),
		string(corev1.MountPropagationNone)}
	recursiveReadOnlyModes = []string{string(corev1.RecursiveReadOnlyDisabled), string(corev1.RecursiveReadOnlyEnabled),
		string(corev1.RecursiveReadOnlyIfPossible)}
)

// validateMountPropagation: a known mode; Bidirectional for privileged
// containers only.
func validateMountPropagation(mp *corev1.MountPropagationMode, c *corev1.Container, p *field.Path) field.ErrorList {
	if mp == nil {
		return nil
	}
	var errs field.ErrorList
	if !slices.Contains(mountPropagations, string(*mp)) {
		errs = append(errs, field.NotSupported(p, *mp, mountPropagations))
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if *mp == corev1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(p, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

// validateMountRecursiveReadOnly: Enabled and IfPossible need a read-only
// mount without propagation (None or unset).
func validateMountRecursiveReadOnly(m corev1.VolumeMount, p *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(p, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(p, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(p, *m.RecursiveReadOnly, recursiveReadOnlyModes))
	}
	return errs
}

// validateResources checks resources given as a container's (a
// RuntimeClass's overhead, as limits) as upstream's
// validateResourceRequirements, with nothing relaxed.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	return validateContainerResources(r, path, podValidationOptions{})
}

// validateContainerResources checks a container's resources (and a pod's
// overhead, as limits) under a pod spec's validation options.
func validateContainerResources(r *corev1.ResourceRequirements, path *field.Path, opts podValidationOptions) field.ErrorList {
	return validateResourceRequirements(r, validateContainerResourceName, path, opts)
}

// validateResourceRequirements is upstream's validateResourceRequirements
// with the given resource name check: names, non-negative quantities
// (whole units for extended resources), each request within its limit
// and equal to it for resources that cannot be overcommitted (extended
// resources, hugepages), which also need a limit, and hugepages in whole
// pages (unless opts allow what the old object had) and only beside cpu
// or memory.
func validateResourceRequirements(r *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, path *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	check := func(name corev1.ResourceName, q resource.Quantity, p *field.Path) {
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateNonNegativeQuantity(q, p)...)
		if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q, "must be an integer"))
		}
		if isHugePageResource(name) {
			hugePages = true
			if !opts.allowIndivisibleHugePagesValues && !hugePageValueDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if isQOSResource(name) {
			cpuOrMemory = true
		}
	}
	for _, name := range sortedResourceNames(r.Limits) {
		check(name, r.Limits[name], limPath.Key(string(name)))
	}
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		check(name, req, reqPath.Key(string(name)))
		limit, ok := r.Limits[name]
		overcommit := !isExtendedResource(name) && !isHugePageResource(name)
		switch {
		case ok && !overcommit && req.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(reqPath, req.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case ok && req.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, req.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !ok && !overcommit:
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return errs
}

// validateProbe checks a probe's handler (validateHandler), its counts and
// periods (non-negative) and its terminationGracePeriodSeconds (positive),
// as upstream's validateProbe.
func validateProbe(p *corev1.Probe, path *field.Path) field.ErrorList {
	errs := validateHandler(probeActions(&p.ProbeHandler), path)
	for _, f := range []struct {
		v    int32
		name string
	}{{p.InitialDelaySeconds, "initialDelaySeconds"}, {p.TimeoutSeconds, "timeoutSeconds"}, {p.PeriodSeconds, "periodSeconds"},
		{p.SuccessThreshold, "successThreshold"}, {p.FailureThreshold, "failureThreshold"}} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.v), path.Child(f.name))...)
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

// isExtendedResource reports whether name is a domain-prefixed resource
// outside kubernetes.io (e.g. example.com/gpu).
func isExtendedResource(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, corev1.ResourceDefaultNamespacePrefix)
}

// validatePortNumOrName checks a port given as number or IANA name.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(p, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(p, port.StrVal, msg))
	}
	return errs
}

// validateContainerSecurityContext checks a container's security context
// as upstream's ValidateSecurityContext: IDs, procMount (whether Unmasked
// needs a user namespace is the pod's call: validateProcMountUserNamespace),
// seccomp and AppArmor profiles, and allowPrivilegeEscalation false beside
// privileged or the CAP_SYS_ADMIN capability (upstream matches that
// spelling only).
func validateContainerSecurityContext(sc *corev1.SecurityContext, p *field.Path) field.ErrorList {
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, p)
	if pm := sc.ProcMount; pm != nil {
		switch *pm {
		case corev1.DefaultProcMount, corev1.UnmaskedProcMount:
		default:
			errs = append(errs, field.NotSupported(p.Child("procMount"), *pm, []string{string(corev1.DefaultProcMount), string(corev1.UnmaskedProcMount)}))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateWindowsOptions(sc.WindowsOptions, p.Child("windowsOptions"))...)
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

// Limits of windowsOptions, as upstream's.
const (
	maxGMSACredentialSpecLengthInKiB = 64
	maxGMSACredentialSpecLength      = maxGMSACredentialSpecLengthInKiB * 1024
	maxRunAsUserNameDomainLength     = 256
	maxRunAsUserNameUserLength       = 104
)

var (
	// controlCharsRegexp: no control characters in runAsUserName.
	controlCharsRegexp = regexp.MustCompile(`[[:cntrl:]]+`)
	// netBiosDomainRegexp: a NetBios domain, 1 to 15 characters, not
	// starting with a dot, none of \ / : * ? " < > |.
	netBiosDomainRegexp = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	// windowsDNSDomainRegexp: a DNS domain of letters, digits and dashes.
	windowsDNSDomainRegexp = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	// invalidUserNameCharsRegexp, invalidUserNameDotsSpacesRegexp: what a
	// Windows user name may not hold or be.
	invalidUserNameCharsRegexp      = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	invalidUserNameDotsSpacesRegexp = regexp.MustCompile(`^[\. ]+$`)
)

// validateWindowsOptions checks a pod's or container's windowsOptions as
// upstream's validateWindowsSecurityContextOptions: the GMSA credential
// spec name is a DNS subdomain, the spec itself non-empty and at most
// 64 KiB, runAsUserName a [DOMAIN\]USER Windows user name.
func validateWindowsOptions(w *corev1.WindowsSecurityContextOptions, p *field.Path) field.ErrorList {
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if w.GMSACredentialSpecName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*w.GMSACredentialSpecName) {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpecName"), w.GMSACredentialSpecName, msg))
		}
	}
	if w.GMSACredentialSpec != nil {
		if l := len(*w.GMSACredentialSpec); l == 0 {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpec"), w.GMSACredentialSpec, "gmsaCredentialSpec cannot be an empty string"))
		} else if l > maxGMSACredentialSpecLength {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpec"), w.GMSACredentialSpec, fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecLengthInKiB)))
		}
	}
	if w.RunAsUserName != nil {
		errs = append(errs, validateRunAsUserName(w.RunAsUserName, p.Child("runAsUserName"))...)
	}
	return errs
}

func validateRunAsUserName(name *string, p *field.Path) field.ErrorList {
	invalid := func(msg string) field.ErrorList {
		return field.ErrorList{field.Invalid(p, name, msg)}
	}
	switch {
	case *name == "":
		return invalid("runAsUserName cannot be an empty string")
	case controlCharsRegexp.MatchString(*name):
		return invalid("runAsUserName cannot contain control characters")
	}
	parts := strings.Split(*name, "\\")
	if len(parts) > 2 {
		return invalid("runAsUserName cannot contain more than one backslash")
	}
	user, domain, hasDomain := parts[0], "", len(parts) == 2
	if hasDomain {
		domain, user = parts[0], parts[1]
	}
	var errs field.ErrorList
	if len(domain) >= maxRunAsUserNameDomainLength {
		errs = append(errs, invalid(fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainLength))...)
	}
	if hasDomain && !netBiosDomainRegexp.MatchString(domain) && !windowsDNSDomainRegexp.MatchString(domain) {
		errs = append(errs, invalid("runAsUserName's Domain doesn't match the NetBios nor the DNS format")...)
	}
	if l := len(user); l == 0 {
		errs = append(errs, invalid("runAsUserName's User cannot be empty")...)
	} else if l > maxRunAsUserNameUserLength {
		errs = append(errs, invalid(fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserLength))...)
	}
	if invalidUserNameDotsSpacesRegexp.MatchString(user) {
		errs = append(errs, invalid(`runAsUserName's User cannot contain only periods or spaces`)...)
	}
	if invalidUserNameCharsRegexp.MatchString(user) {
		errs = append(errs, invalid(`runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`)...)
	}
	return errs
}

// validateSeccompProfile checks a pod's or container's seccompProfile as
// upstream's validateSeccompProfileField.
func validateSeccompProfile(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, []string{string(corev1.SeccompProfileTypeLocalhost), string(corev1.SeccompProfileTypeRuntimeDefault), string(corev1.SeccompProfileTypeUnconfined)}))
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, p.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// maxAppArmorLocalhostProfileLength is PATH_MAX - 1.
const maxAppArmorLocalhostProfileLength = 4095

// validateAppArmorProfile checks a pod's or container's appArmorProfile as
// upstream's ValidateAppArmorProfileField.
func validateAppArmorProfile(ap *corev1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	lp := p.Child("localhostProfile")
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil {
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		}
		var errs field.ErrorList
		profile := *ap.LocalhostProfile
		if trimmed := strings.TrimSpace(profile); trimmed != profile {
			errs = append(errs, field.Invalid(lp, profile, "must not be padded with whitespace"))
		} else if trimmed == "" {
			errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		if len(profile) > maxAppArmorLocalhostProfileLength {
			errs = append(errs, field.TooLong(lp, "", maxAppArmorLocalhostProfileLength))
		}
		return errs
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(lp, ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "type is required when appArmorProfile is set")}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), ap.Type, []string{string(corev1.AppArmorProfileTypeLocalhost), string(corev1.AppArmorProfileTypeRuntimeDefault), string(corev1.AppArmorProfileTypeUnconfined)})}
	}
	return nil
}
