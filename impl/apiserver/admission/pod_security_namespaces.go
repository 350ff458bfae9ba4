package admission

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// maxPodsChecked and defaultPodCheckTimeout bound how many existing pods
// a namespace label change evaluates and for how long (kube-apiserver's
// figures; PodSecurity's NamespaceMaxPodsToCheck and
// NamespacePodCheckTimeout).
const (
	maxPodsChecked         = 3000
	defaultPodCheckTimeout = time.Second
)

// validateNamespaceLabels checks the pod-security.kubernetes.io labels of a
// namespace: levels privileged, baseline or restricted; versions "latest"
// or "v1.N".
func validateNamespaceLabels(labels map[string]string) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("metadata", "labels")
	// In kube-apiserver's order: enforce, audit, warn.
	for _, mode := range []string{podSecurityEnforce, podSecurityAudit, podSecurityWarn} {
		if level, ok := labels[mode]; ok && !validLevel(level) {
			errs = append(errs, field.Invalid(path.Key(mode), level, "must be one of privileged, baseline, restricted"))
		}
		if version, ok := labels[mode+"-version"]; ok {
			if _, valid := parsePolicyVersion(version); !valid {
				errs = append(errs, field.Invalid(path.Key(mode+"-version"), version, `must be "latest" or "v1.x"`))
			}
		}
	}
	return errs
}

var levelRank = map[string]int{levelPrivileged: 0, levelBaseline: 1, levelRestricted: 2}

// validateNamespace: invalid pod security labels are refused (422); a
// stricter enforce level is checked against the pods already in the
// namespace, whose violations come back as warnings (nothing is evicted),
// within a budget of pods and time; an exempt namespace given a policy
// other than the defaults, on create or with a stricter enforce level, is
// warned that its labels are ignored.
func (p *PodSecurity) validateNamespace(ctx context.Context, a *Attributes) error {
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok || a.Subresource != "" {
		return nil
	}
	var oldLabels map[string]string
	if a.Operation == Update {
		old, ok := a.OldObject.(*corev1.Namespace)
		if !ok {
			return nil
		}
		oldLabels = old.Labels
		if !podSecurityLabelsChanged(ns.Labels, oldLabels) {
			return nil
		}
	}
	// Invalid labels are refused on create, and on update unless they
	// were already invalid in just the same way (kube-apiserver compares
	// the errors' text).
	if errs := validateNamespaceLabels(ns.Labels); len(errs) > 0 &&
		(a.Operation != Update || errorsText(errs) != errorsText(validateNamespaceLabels(oldLabels))) {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind(), ns.Name, errs)
	}
	def := p.defaultPolicies()
	enforce, warn, auditPolicy := p.policies(ns.Labels)
	if a.Operation == Create {
		// Exempt is asked of the request's namespace, as kube-apiserver:
		// the name the create handler saw, empty for a generateName.
		if p.ExemptNamespaces[a.Namespace] {
			exemptNamespaceWarning(ctx, ns.Name, ns.Labels, [3]podSecurityPolicy{enforce, auditPolicy, warn}, def)
		}
		return nil
	}
	old := policyFor(oldLabels, podSecurityEnforce, def[0])
	if enforce == old || enforce.level == levelPrivileged ||
		(enforce.version == old.version && levelRank[enforce.level] <= levelRank[old.level]) {
		return nil
	}
	if p.ExemptNamespaces[a.Namespace] {
		exemptNamespaceWarning(ctx, ns.Name, ns.Labels, [3]podSecurityPolicy{enforce, auditPolicy, warn}, def)
		return nil
	}
	if p.ListPods == nil {
		return nil
	}
	// At most a second (NamespacePodCheckTimeout), and at most half the
	// time the request has left.
	timeout := p.NamespacePodCheckTimeout
	if timeout <= 0 {
		timeout = defaultPodCheckTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)/2)
	}
	checkCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, err := p.ListPods(checkCtx, ns.Name)
	if err != nil {
		// kube-apiserver's warning names no error; the log does.
		slog.DebugContext(ctx, "listing pods to check a new PodSecurity enforce level", "namespace", ns.Name, "err", err)
		request.AddWarning(ctx, "failed to list pods while checking new PodSecurity enforce level")
		return nil
	}
	maxPods := p.NamespaceMaxPodsToCheck
	if maxPods <= 0 {
		maxPods = maxPodsChecked
	}
	for _, w := range existingPodWarnings(ns.Name, enforce, pods, p.ExemptRuntimeClasses, maxPods, func() bool { return checkCtx.Err() != nil }) {
		request.AddWarning(ctx, w)
	}
	return nil
}

// exemptNamespaceWarning warns, as kube-apiserver, that an exempt
// namespace's pod security labels are ignored, unless its policy
// (enforce, audit, warn) is privileged in every mode or equivalent to the
// defaults (modes equivalent when both privileged or equal); the warning
// names the non-privileged modes its labels set.
func exemptNamespaceWarning(ctx context.Context, name string, labels map[string]string, policy, def [3]podSecurityPolicy) {
	allPrivileged, same := true, true
	for i := range policy {
		allPrivileged = allPrivileged && policy[i].level == levelPrivileged
		same = same && (policy[i] == def[i] || (policy[i].level == levelPrivileged && def[i].level == levelPrivileged))
	}
	if allPrivileged || same {
		return
	}
	var modes []string
	for i, mode := range []string{podSecurityEnforce, podSecurityAudit, podSecurityWarn} {
		_, hasLevel := labels[mode]
		_, hasVersion := labels[mode+"-version"]
		if policy[i].level != levelPrivileged && (hasLevel || hasVersion) {
			modes = append(modes, strings.TrimPrefix(mode, podSecurityLabelPrefix)+"="+policy[i].String())
		}
	}
	request.AddWarning(ctx, fmt.Sprintf("namespace %q is exempt from Pod Security, and the policy (%s) will be ignored", name, strings.Join(modes, ", ")))
}

// errorsText is errs' message ("" for none).
func errorsText(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

func podSecurityLabelsChanged(labels, old map[string]string) bool {
	for _, mode := range []string{podSecurityEnforce, podSecurityWarn, podSecurityAudit} {
		for _, k := range []string{mode, mode + "-version"} {
			if labels[k] != old[k] {
				return true
			}
			if _, a := labels[k]; a {
				if _, b := old[k]; !b {
					return true
				}
			}
		}
	}
	return false
}

// existingPodWarnings checks a namespace's pods against a new enforce
// policy as kube-apiserver's EvaluatePodsInNamespace: pods of an exempt
// runtime class are skipped, one pod per controller comes first (the
// others of each controller after), at most maxPods are checked, and
// none after the one in hand when expired says the time is up (a first
// line says how many when fewer than all). The pods that violate policy
// are grouped by their violated controls, each group named by its
// lexically first pod: `pod (and N other pods): reason, reason`, after a
// line that names the policy, the groups sorted.
func existingPodWarnings(namespace string, policy podSecurityPolicy, pods []corev1.Pod, exemptRuntimeClasses map[string]bool, maxPods int, expired func() bool) []string {
	var first, rest []*corev1.Pod
	controllers := map[types.UID]bool{}
	for i := range pods {
		pod := &pods[i]
		if rc := pod.Spec.RuntimeClassName; rc != nil && exemptRuntimeClasses[*rc] {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			if controllers[ref.UID] {
				rest = append(rest, pod)
				continue
			}
			controllers[ref.UID] = true
		}
		first = append(first, pod)
	}
	prioritized := append(first, rest...)
	total := len(prioritized)
	prioritized = prioritized[:min(total, maxPods)]
	var out []string
	type group struct {
		first string
		count int
	}
	groups := map[string]*group{}
	var order []string
	checked := len(prioritized)
	for i, pod := range prioritized {
		if vs := evaluatePodSecurity(policy, &podMeta{pod.Annotations}, &pod.Spec); len(vs) > 0 {
			reasons := make([]string, len(vs))
			for j, v := range vs {
				reasons[j] = v.reason
			}
			key := strings.Join(reasons, ", ")
			g, ok := groups[key]
			if !ok {
				g = &group{first: pod.Name}
				groups[key] = g
				order = append(order, key)
			}
			g.first = min(g.first, pod.Name)
			g.count++
		}
		// Out of time: stop after the pod in hand, as kube-apiserver.
		if expired() {
			checked = i + 1
			break
		}
	}
	if checked < total {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(order) == 0 {
		return out
	}
	out = append(out, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, policy.String()))
	lines := make([]string, 0, len(order))
	for _, key := range order {
		g := groups[key]
		switch g.count {
		case 1:
			lines = append(lines, fmt.Sprintf("%s: %s", g.first, key))
		case 2:
			lines = append(lines, fmt.Sprintf("%s (and 1 other pod): %s", g.first, key))
		default:
			lines = append(lines, fmt.Sprintf("%s (and %d other pods): %s", g.first, g.count-1, key))
		}
	}
	sort.Strings(lines)
	return append(out, lines...)
}
