package admission

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// nsAttrs are a namespace write's attributes as the endpoints give them,
// as kube-apiserver's: the namespace is the namespace's name, on create
// (its create handler sets it) as on update (it comes from the URL).
func nsAttrs(op Operation, name string, labels, oldLabels map[string]string) *Attributes {
	a := &Attributes{Operation: op, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: name, Namespace: name,
		Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}}
	if op == Update {
		a.OldObject = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: oldLabels}}
	}
	return a
}

// TestPodSecurityExemptNamespaceWarning: labelling an exempt namespace
// with a policy other than the defaults warns that it is ignored, naming
// the non-privileged modes the labels set (kube-apiserver's
// exemptNamespaceWarning), on create and on an update that makes the
// enforce policy stricter (the only update that would have checked the
// existing pods); the exempt namespace's pods are not listed.
func TestPodSecurityExemptNamespaceWarning(t *testing.T) {
	p := podSecurity(nil)
	p.ExemptNamespaces = map[string]bool{"kube-system": true}
	p.DefaultWarn = levelBaseline
	listed := false
	p.ListPods = func(context.Context, string) ([]corev1.Pod, error) { listed = true; return nil, nil }
	tests := []struct {
		name              string
		op                Operation
		namespace         string
		labels, oldLabels map[string]string
		want              []string
	}{
		{"create restricted", Create, "kube-system", map[string]string{podSecurityEnforce: "restricted", podSecurityWarn: "privileged"}, nil,
			[]string{`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`}},
		{"create with the defaults' policy", Create, "kube-system", map[string]string{podSecurityWarn: "baseline"}, nil, nil},
		{"create fully privileged", Create, "kube-system", map[string]string{podSecurityWarn: "privileged"}, nil, nil},
		{"create not exempt", Create, "other", map[string]string{podSecurityEnforce: "restricted"}, nil, nil},
		{"update restricted", Update, "kube-system", map[string]string{podSecurityEnforce: "restricted", podSecurityAudit + "-version": "v1.30", podSecurityWarn: "privileged"}, nil,
			[]string{`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`}},
		{"update all modes", Update, "kube-system", map[string]string{podSecurityEnforce: "baseline", podSecurityAudit: "restricted", podSecurityWarn + "-version": "v1.30"}, nil,
			[]string{`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=baseline:latest, audit=restricted:latest, warn=baseline:v1.30) will be ignored`}},
		{"update not exempt", Update, "other", map[string]string{podSecurityEnforce: "restricted"}, nil, nil},
		{"update stricter enforce", Update, "kube-system", map[string]string{podSecurityEnforce: "baseline"}, nil,
			[]string{`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=baseline:latest) will be ignored`}},
		{"update enforce unchanged", Update, "kube-system", map[string]string{podSecurityEnforce: "baseline", podSecurityAudit: "restricted"},
			map[string]string{podSecurityEnforce: "baseline"}, nil},
		{"update enforce relaxed", Update, "kube-system", map[string]string{podSecurityEnforce: "baseline"},
			map[string]string{podSecurityEnforce: "restricted"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			listed = false
			ctx, warnings := request.WithWarnings(context.Background())
			if err := p.Validate(ctx, nsAttrs(tc.op, tc.namespace, tc.labels, tc.oldLabels)); err != nil {
				t.Fatal(err)
			}
			if got := warnings.List(); !slices.Equal(got, tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
			if listed && p.ExemptNamespaces[tc.namespace] {
				t.Fatal("an exempt namespace's pods were listed")
			}
		})
	}
}

// TestPodSecurityExemptNamespaceIsTheRequestNamespace: whether a
// namespace write is exempt is asked of the request's namespace, as
// kube-apiserver's ValidateNamespace (exemptNamespace(attrs.GetNamespace())):
// a generateName create's is empty (the create handler had no name to
// give it), so even a generated name that is exempt is not warned about.
func TestPodSecurityExemptNamespaceIsTheRequestNamespace(t *testing.T) {
	p := podSecurity(nil)
	p.ExemptNamespaces = map[string]bool{"kube-system": true}
	labels := map[string]string{podSecurityEnforce: "restricted"}
	for _, tc := range []struct {
		namespace string
		want      []string
	}{
		{"kube-system", []string{`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`}},
		{"", nil},
	} {
		a := nsAttrs(Create, "kube-system", labels, nil)
		a.Namespace = tc.namespace
		ctx, warnings := request.WithWarnings(context.Background())
		if err := p.Validate(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got := warnings.List(); !slices.Equal(got, tc.want) {
			t.Errorf("request namespace %q: warnings %q, want %q", tc.namespace, got, tc.want)
		}
	}
}

// TestPodSecurityExemptNamespaceDefaultsPolicy: an exempt namespace
// labelled with just the defaults' policy gets no warning.
func TestPodSecurityExemptNamespaceDefaultsPolicy(t *testing.T) {
	p := podSecurity(nil)
	p.ExemptNamespaces = map[string]bool{"kube-system": true}
	p.DefaultEnforce = levelBaseline
	for labels, want := range map[string][]string{
		levelBaseline:   nil,
		levelRestricted: {`namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`},
	} {
		ctx, warnings := request.WithWarnings(context.Background())
		if err := p.Validate(ctx, nsAttrs(Update, "kube-system", map[string]string{podSecurityEnforce: labels},
			map[string]string{podSecurityEnforce: levelPrivileged})); err != nil {
			t.Fatal(err)
		}
		if got := warnings.List(); !slices.Equal(got, want) {
			t.Fatalf("enforce=%s: warnings %q, want %q", labels, got, want)
		}
	}
}

// TestPodSecurityExistingPodsBudget: checking a namespace's pods against a
// new enforce level stops at NamespaceMaxPodsToCheck pods, and when its
// time is up (at most a second, and at most half of what the request has
// left) after the pod it was checking, saying how many it checked.
func TestPodSecurityExistingPodsBudget(t *testing.T) {
	var pods []corev1.Pod
	for _, name := range []string{"a", "b", "c"} {
		pod := newPod(name)
		pod.Spec.HostNetwork = true
		pods = append(pods, *pod)
	}
	p := podSecurity(nil)
	var listCtx context.Context
	p.ListPods = func(ctx context.Context, _ string) ([]corev1.Pod, error) { listCtx = ctx; return pods, nil }
	check := func(ctx context.Context) []string {
		t.Helper()
		ctx, warnings := request.WithWarnings(ctx)
		if err := p.Validate(ctx, nsAttrs(Update, "ns", map[string]string{podSecurityEnforce: "baseline"}, nil)); err != nil {
			t.Fatal(err)
		}
		return warnings.List()
	}
	// Within budget: every pod, and the listing has a deadline at most a
	// second away.
	got := check(context.Background())
	after := time.Now()
	want := []string{`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`, `a (and 2 other pods): host namespaces`}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	if dl, ok := listCtx.Deadline(); !ok || dl.After(after.Add(time.Second)) {
		t.Fatalf("pods listed with deadline %v (ok %v), want at most 1s after %v", dl, ok, after)
	}
	// With a longer budget, a request with a minute left gives the check
	// at most half of it.
	p.NamespacePodCheckTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reqDeadline, _ := ctx.Deadline()
	check(ctx)
	if dl, _ := listCtx.Deadline(); !dl.Before(reqDeadline.Add(-20 * time.Second)) {
		t.Fatalf("pods listed with deadline %v, request's %v: want at most half the time left", dl, reqDeadline)
	}
	p.NamespacePodCheckTimeout = 0
	// No time left: the first pod is checked and no more.
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	got = check(expired)
	want = []string{`new PodSecurity enforce level only checked against the first 1 of 3 existing pods`,
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`, `a: host namespaces`}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	// A smaller pod budget.
	p.NamespaceMaxPodsToCheck = 2
	got = check(context.Background())
	want = []string{`new PodSecurity enforce level only checked against the first 2 of 3 existing pods`,
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`, `a (and 1 other pod): host namespaces`}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	if strings.Contains(strings.Join(got, ""), "c:") {
		t.Fatal("pod c was checked")
	}
}
