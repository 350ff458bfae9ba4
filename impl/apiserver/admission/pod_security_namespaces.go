package admission

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// maxPodsChecked bounds how many existing pods a namespace label change
// evaluates (kube-apiserver's; it also stops after a second, which this
// does not).
const maxPodsChecked = 3000

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
// namespace, whose violations come back as warnings (nothing is evicted).
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
	if a.Operation != Update || p.ExemptNamespaces[ns.Name] || p.ListPods == nil {
		return nil
	}
	def := p.defaultPolicy(podSecurityEnforce)
	enforce, old := policyFor(ns.Labels, podSecurityEnforce, def), policyFor(oldLabels, podSecurityEnforce, def)
	if enforce == old || enforce.level == levelPrivileged ||
		(enforce.version == old.version && levelRank[enforce.level] < levelRank[old.level]) {
		return nil
	}
	pods, err := p.ListPods(ctx, ns.Name)
	if err != nil {
		// kube-apiserver's warning names no error; the log does.
		slog.DebugContext(ctx, "listing pods to check a new PodSecurity enforce level", "namespace", ns.Name, "err", err)
		request.AddWarning(ctx, "failed to list pods while checking new PodSecurity enforce level")
		return nil
	}
	for _, w := range existingPodWarnings(ns.Name, enforce, pods, p.ExemptRuntimeClasses) {
		request.AddWarning(ctx, w)
	}
	return nil
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
// others of each controller after), at most maxPodsChecked are checked (a
// first line says so when fewer than all). The pods that violate policy
// are grouped by their violated controls, each group named by its
// lexically first pod: `pod (and N other pods): reason, reason`, after a
// line that names the policy, the groups sorted.
func existingPodWarnings(namespace string, policy podSecurityPolicy, pods []corev1.Pod, exemptRuntimeClasses map[string]bool) []string {
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
	var out []string
	if len(prioritized) > maxPodsChecked {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", maxPodsChecked, len(prioritized)))
		prioritized = prioritized[:maxPodsChecked]
	}
	type group struct {
		first string
		count int
	}
	groups := map[string]*group{}
	var order []string
	for _, pod := range prioritized {
		vs := evaluatePodSecurity(policy, &podMeta{pod.Annotations}, &pod.Spec)
		if len(vs) == 0 {
			continue
		}
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
