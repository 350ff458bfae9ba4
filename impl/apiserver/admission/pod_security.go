package admission

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Namespace labels that choose a namespace's Pod Security Standards.
const (
	// Audit annotations PodSecurity adds to the request's audit events.
	auditEnforcePolicy = "pod-security.kubernetes.io/enforce-policy"
	auditViolations    = "pod-security.kubernetes.io/audit-violations"
	auditExempt        = "pod-security.kubernetes.io/exempt"
	auditError         = "pod-security.kubernetes.io/error"

	podSecurityLabelPrefix = "pod-security.kubernetes.io/"
	podSecurityEnforce     = podSecurityLabelPrefix + "enforce"
	podSecurityWarn        = podSecurityLabelPrefix + "warn"
	podSecurityAudit       = podSecurityLabelPrefix + "audit"
)

// PodSecurity enforces the Pod Security Standards (privileged, baseline,
// restricted) a namespace chooses with its pod-security.kubernetes.io/enforce,
// warn and audit labels, each at the policy version its -version label
// names ("latest", the default, or "v1.N": the controls as they were
// defined at Kubernetes 1.N; a version newer than the newest definition is
// latest). A pod that violates the enforce policy is refused (403 listing
// every violation); violations of the warn policy, by a pod or by a
// workload's pod template (Deployments, ReplicaSets, StatefulSets,
// DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates: they
// are not enforced), are returned as warnings. A namespace without labels
// has the defaults (privileged:latest unless configured). As
// kube-apiserver, an invalid enforce level is restricted, an invalid warn
// or audit level privileged, an invalid version latest; creating or
// relabelling a namespace with invalid labels is refused (422), and a
// stricter enforce policy warns about the pods already there.
// A pod update is evaluated only when it adds containers or changes
// images (significantPodUpdate). The audit policy's violations, a pod's
// enforce policy (privileged:latest in a namespace privileged in every
// mode), exemptions and invalid labels are added to the request's audit
// events as annotations (pod-security.kubernetes.io/audit-violations,
// enforce-policy, exempt, error).
type PodSecurity struct {
	Namespaces NamespaceGetter
	// ListPods lists a namespace's pods, to check them when a stricter
	// enforce label is set (nil: not checked).
	ListPods func(ctx context.Context, namespace string) ([]corev1.Pod, error)
	// Exempt users, namespaces and runtime classes are not checked.
	ExemptUsers, ExemptNamespaces, ExemptRuntimeClasses map[string]bool
	// DefaultEnforce, DefaultWarn and DefaultAudit are the levels ("" is
	// privileged), the Default*Version the versions ("" is latest), of
	// namespaces without the labels: PodSecurityConfiguration's defaults.
	DefaultEnforce, DefaultWarn, DefaultAudit                      string
	DefaultEnforceVersion, DefaultWarnVersion, DefaultAuditVersion string
	// NamespaceMaxPodsToCheck (0: 3000) and NamespacePodCheckTimeout (0:
	// a second) bound the check of a namespace's pods against a stricter
	// enforce label (kube-apiserver's figures; the time is also at most
	// half of what the request has left).
	NamespaceMaxPodsToCheck  int
	NamespacePodCheckTimeout time.Duration
}

func newPodSecurity(d *deps) (any, error) {
	get, err := d.namespaces()
	if err != nil {
		return nil, err
	}
	pods, err := d.store(podResource)
	if err != nil {
		return nil, err
	}
	set := func(names []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	o := d.opts
	return &PodSecurity{Namespaces: get, ListPods: func(ctx context.Context, namespace string) ([]corev1.Pod, error) {
		l := &corev1.PodList{}
		if err := pods.list(ctx, namespace, false, l); err != nil {
			return nil, err
		}
		return l.Items, nil
	},
		ExemptUsers: set(o.PodSecurityExemptUsers), ExemptNamespaces: set(o.PodSecurityExemptNamespaces),
		ExemptRuntimeClasses: set(o.PodSecurityExemptRuntimeClasses),
		DefaultEnforce:       o.PodSecurityDefaultEnforce, DefaultWarn: o.PodSecurityDefaultWarn, DefaultAudit: o.PodSecurityDefaultAudit,
		DefaultEnforceVersion: o.PodSecurityDefaultEnforceVersion, DefaultWarnVersion: o.PodSecurityDefaultWarnVersion,
		DefaultAuditVersion: o.PodSecurityDefaultAuditVersion,
	}, nil
}

// podSecurityPolicy is one mode's level and version ("latest" or "v1.N").
type podSecurityPolicy struct{ level, version string }

func (p podSecurityPolicy) String() string { return p.level + ":" + p.version }

// minor is the policy version p evaluates at: v1.N's N, but "latest" and
// versions newer than the newest control definition evaluate at
// maxPolicyMinor (kube-apiserver's checkRegistry clamps them so).
func (p podSecurityPolicy) minor() int {
	n, ok := parsePolicyVersion(p.version)
	if !ok || n < 0 || n > maxPolicyMinor {
		return maxPolicyMinor
	}
	return n
}

var podSecurityVersion = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

// parsePolicyVersion parses a version label: "latest" (n -1) or "v1.N".
func parsePolicyVersion(v string) (n int, ok bool) {
	if v == "latest" {
		return -1, true
	}
	if !podSecurityVersion.MatchString(v) {
		return 0, false
	}
	n, err := strconv.Atoi(v[len("v1."):])
	return n, err == nil
}

// validLevel reports whether level is privileged, baseline or restricted.
func validLevel(level string) bool {
	return level == levelPrivileged || level == levelBaseline || level == levelRestricted
}

// policyFor reads one mode (enforce, warn, audit) from namespace labels, as
// kube-apiserver's PolicyToEvaluate: an unset level or version is def's;
// an invalid level is restricted for enforce and privileged for warn and
// audit (they fail open), an invalid version latest, each independently
// of the other label.
func policyFor(labels map[string]string, mode string, def podSecurityPolicy) podSecurityPolicy {
	p := def
	if level, ok := labels[mode]; ok {
		p.level = level
		if !validLevel(level) {
			p.level = levelPrivileged
			if mode == podSecurityEnforce {
				p.level = levelRestricted
			}
		}
	}
	if version, ok := labels[mode+"-version"]; ok {
		p.version = version
		if _, valid := parsePolicyVersion(version); !valid {
			p.version = "latest"
		}
	}
	return p
}

// defaultPolicy is mode's policy for namespaces without its labels: the
// configured level ("" is privileged) and version ("" is latest).
func (p *PodSecurity) defaultPolicy(mode string) podSecurityPolicy {
	d := podSecurityPolicy{levelPrivileged, "latest"}
	var level, version string
	switch mode {
	case podSecurityEnforce:
		level, version = p.DefaultEnforce, p.DefaultEnforceVersion
	case podSecurityWarn:
		level, version = p.DefaultWarn, p.DefaultWarnVersion
	case podSecurityAudit:
		level, version = p.DefaultAudit, p.DefaultAuditVersion
	}
	if level != "" {
		d.level = level
	}
	if version != "" {
		d.version = version
	}
	return d
}

// defaultPolicies are the enforce, audit and warn defaults.
func (p *PodSecurity) defaultPolicies() [3]podSecurityPolicy {
	return [3]podSecurityPolicy{p.defaultPolicy(podSecurityEnforce), p.defaultPolicy(podSecurityAudit), p.defaultPolicy(podSecurityWarn)}
}

// policies reads a namespace's enforce, warn and audit policies.
func (p *PodSecurity) policies(labels map[string]string) (enforce, warn, audit podSecurityPolicy) {
	return policyFor(labels, podSecurityEnforce, p.defaultPolicy(podSecurityEnforce)),
		policyFor(labels, podSecurityWarn, p.defaultPolicy(podSecurityWarn)),
		policyFor(labels, podSecurityAudit, p.defaultPolicy(podSecurityAudit))
}

// Validate implements Validator.
func (p *PodSecurity) Validate(ctx context.Context, a *Attributes) error {
	if (a.Operation != Create && a.Operation != Update) || a.Object == nil {
		return nil
	}
	if a.Resource.GroupResource() == nsResource {
		return p.validateNamespace(ctx, a)
	}
	if a.Namespace == "" {
		return nil
	}
	meta, spec, isPod := podSpecOf(a)
	if spec == nil {
		return nil
	}
	// In kube-apiserver's order (ValidatePod, ValidatePodController,
	// EvaluatePod): exempt namespace and user, a namespace privileged in
	// every mode, an insignificant pod update, an exempt runtime class.
	switch {
	case p.ExemptNamespaces[a.Namespace]:
		audit.AddAnnotation(ctx, auditExempt, "namespace")
		return nil
	case a.User != nil && p.ExemptUsers[a.User.Name]:
		audit.AddAnnotation(ctx, auditExempt, "user")
		return nil
	}
	ns, err := p.Namespaces(ctx, a.Namespace, false)
	if apierrors.IsNotFound(err) {
		// The cached view may lag a namespace just created: look again.
		ns, err = p.Namespaces(ctx, a.Namespace, true)
	}
	if apierrors.IsNotFound(err) {
		return nil // NamespaceLifecycle answers for missing namespaces
	}
	if err != nil {
		return fmt.Errorf("reading the namespace's pod security labels: %w", err)
	}
	enforce, warn, auditPolicy := p.policies(ns.Labels)
	labelErrs := validateNamespaceLabels(ns.Labels)
	if len(labelErrs) == 0 && warn.level == levelPrivileged && auditPolicy.level == levelPrivileged &&
		(!isPod || enforce.level == levelPrivileged) {
		if isPod {
			// Whatever the version labels say (upstream's shared
			// privileged response).
			audit.AddAnnotation(ctx, auditEnforcePolicy, levelPrivileged+":latest")
		}
		return nil
	}
	if isPod && a.Operation == Update && !significantPodUpdate(a) {
		return nil
	}
	if rc := spec.RuntimeClassName; rc != nil && p.ExemptRuntimeClasses[*rc] {
		audit.AddAnnotation(ctx, auditExempt, "runtimeClass")
		return nil
	}
	if len(labelErrs) > 0 {
		audit.AddAnnotation(ctx, auditError, "Failed to parse policy: "+labelErrs.ToAggregate().Error())
	}
	if isPod {
		audit.AddAnnotation(ctx, auditEnforcePolicy, enforce.String())
	}
	if v := evaluatePodSecurity(auditPolicy, meta, spec); len(v) > 0 {
		audit.AddAnnotation(ctx, auditViolations, fmt.Sprintf("would violate PodSecurity %q: %s", auditPolicy.String(), describeViolations(v)))
	}
	// Only a pod is refused; a workload's template is checked against the
	// warn and audit levels alone, as kube-apiserver's
	// (ValidatePodController does not enforce).
	if isPod {
		if v := evaluatePodSecurity(enforce, meta, spec); len(v) > 0 {
			return forbidden(a, fmt.Errorf("violates PodSecurity %q: %s", enforce.String(), describeViolations(v)))
		}
	}
	if v := evaluatePodSecurity(warn, meta, spec); len(v) > 0 {
		request.AddWarning(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", warn.String(), describeViolations(v)))
	}
	return nil
}

func describeViolations(vs []violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.reason
		if v.detail != "" {
			parts[i] += " (" + v.detail + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// podSpecOf finds the pod spec a write carries: the pod's own (isPod), or
// a workload's pod template.
func podSpecOf(a *Attributes) (*podMeta, *corev1.PodSpec, bool) {
	if a.Resource.GroupResource() == podResource {
		if a.Subresource != "" && a.Subresource != "ephemeralcontainers" {
			return nil, nil, false
		}
		if pod, ok := a.Object.(*corev1.Pod); ok {
			return &podMeta{pod.Annotations}, &pod.Spec, true
		}
		return nil, nil, false
	}
	if a.Subresource != "" {
		return nil, nil, false
	}
	if t := podTemplateOf(a.Object); t != nil {
		return &podMeta{t.Annotations}, &t.Spec, false
	}
	return nil, nil, false
}

func podTemplateOf(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	case *corev1.ReplicationController:
		return o.Spec.Template
	case *corev1.PodTemplate:
		return &o.Template
	}
	return nil
}

// significantPodUpdate: a pod update, through pods or
// pods/ephemeralcontainers, is evaluated again only when it adds or
// removes a container or init container, changes a container's image or
// seccomp annotation, or adds or changes an ephemeral container's (as
// kube-apiserver's isSignificantPodUpdate: the rest of a running pod's
// spec that may change does not weaken it).
func significantPodUpdate(a *Attributes) bool {
	pod, _ := a.Object.(*corev1.Pod)
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok || pod == nil {
		return true
	}
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return true
	}
	changed := func(c, oc *corev1.Container) bool {
		key := seccompContainerAnnotationPrefix + c.Name
		return c.Image != oc.Image || pod.Annotations[key] != old.Annotations[key]
	}
	for i := range pod.Spec.Containers {
		if changed(&pod.Spec.Containers[i], &old.Spec.Containers[i]) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if changed(&pod.Spec.InitContainers[i], &old.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		j := slices.IndexFunc(old.Spec.EphemeralContainers, func(e corev1.EphemeralContainer) bool { return e.Name == c.Name })
		if j < 0 || changed(c, (*corev1.Container)(&old.Spec.EphemeralContainers[j].EphemeralContainerCommon)) {
			return true
		}
	}
	return false
}
