package registry

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
}

func newDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate(map[string]string{"app": "web", "tier": "front"}),
		},
	}
}

func newReplicaSet() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate(map[string]string{"app": "web"}),
		},
	}
}

func TestDeploymentDefaults(t *testing.T) {
	d := newDeployment()
	defaultDeployment(d)
	s := d.Spec
	if *s.Replicas != 1 || s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		s.Strategy.RollingUpdate.MaxSurge.String() != "25%" || s.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" ||
		*s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment defaults: %+v", s)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyAlways || ps.DNSPolicy != corev1.DNSClusterFirst || *ps.TerminationGracePeriodSeconds != 30 ||
		ps.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent || ps.Containers[0].TerminationMessagePath == "" {
		t.Errorf("template defaults: %+v", ps)
	}
	if ps.EnableServiceLinks != nil {
		t.Errorf("enableServiceLinks is a pod default, not a template default")
	}

	recreate := newDeployment()
	recreate.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	defaultDeployment(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate deployment got rollingUpdate defaults")
	}
}

func TestDeploymentValidation(t *testing.T) {
	r := find(t, appsV1, "deployments")
	cases := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(-1)) }, []string{invalid + " spec.replicas"}},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{required + " spec.selector"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []string{invalid + " spec.selector"}},
		{"selector does not match template", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} },
			[]string{invalid + " spec.template.metadata.labels"}},
		{"no containers in template", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil },
			[]string{required + " spec.template.spec.containers"}},
		{"no image in template", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{required + " spec.template.spec.containers[0].image"}},
		{"restart policy Never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{notSupported + " spec.template.spec.restartPolicy"}},
		{"active deadline", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr(int64(10)) },
			[]string{forbidden + " spec.template.spec.activeDeadlineSeconds"}},
		{"both surge and unavailable zero", func(d *appsv1.Deployment) {
			zero := intstr.FromInt32(0)
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}
		}, []string{invalid + " spec.strategy.rollingUpdate.maxUnavailable"}},
		{"bad percent", func(d *appsv1.Deployment) {
			v := intstr.FromString("lots")
			d.Spec.Strategy.RollingUpdate.MaxSurge = &v
		}, []string{invalid + " spec.strategy.rollingUpdate.maxSurge"}},
		{"recreate with rolling update", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]string{forbidden + " spec.strategy.rollingUpdate"}},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			[]string{notSupported + " spec.strategy.type"}},
		{"progress deadline not above minReady", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			[]string{invalid + " spec.progressDeadlineSeconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeployment()
			defaultDeployment(d)
			tc.mutate(d)
			wantErrors(t, r.Strategy.Validate(context.Background(), d), tc.want...)
		})
	}
}

func TestDeploymentUpdate(t *testing.T) {
	r := find(t, appsV1, "deployments")
	ctx := context.Background()
	old := newDeployment()
	r.Strategy.Default(old)
	r.Strategy.PrepareForCreate(ctx, old)
	if old.Generation != 1 {
		t.Fatalf("generation after create %d", old.Generation)
	}
	old.Status = appsv1.DeploymentStatus{Replicas: 1, ObservedGeneration: 1}

	sel := old.DeepCopy()
	sel.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
	r.Strategy.PrepareForUpdate(ctx, sel, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, sel, old), invalid+" spec.selector")
	if errs := r.Strategy.ValidateUpdate(ctx, sel, old); errs[0].Detail != "field is immutable" {
		t.Errorf("selector change detail %q", errs[0].Detail)
	}

	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr(int32(3))
	scaled.Status = appsv1.DeploymentStatus{}
	r.Strategy.PrepareForUpdate(ctx, scaled, old)
	if scaled.Generation != 2 || scaled.Status.Replicas != 1 {
		t.Errorf("scale via main endpoint: generation %d status %+v", scaled.Generation, scaled.Status)
	}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, scaled, old))

	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"kubernetes.io/change-cause": "x"}
	r.Strategy.PrepareForUpdate(ctx, annotated, old)
	if annotated.Generation != 2 {
		t.Errorf("annotation change: generation %d, want 2 (annotations are copied to replica sets)", annotated.Generation)
	}
	labeled := old.DeepCopy()
	labeled.Labels = map[string]string{"x": "y"}
	r.Strategy.PrepareForUpdate(ctx, labeled, old)
	if labeled.Generation != 1 {
		t.Errorf("label change: generation %d, want 1", labeled.Generation)
	}
}

func TestDeploymentStatusEndpoint(t *testing.T) {
	r := find(t, appsV1, "deployments")
	ctx := context.Background()
	old := newDeployment()
	defaultDeployment(old)
	old.Labels = map[string]string{"a": "b"}
	d := old.DeepCopy()
	d.Spec.Replicas = ptr(int32(9))
	d.Labels = nil
	d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1}
	r.Status.PrepareForUpdate(ctx, d, old)
	if *d.Spec.Replicas != 1 || d.Labels["a"] != "b" || d.Status.Replicas != 3 {
		t.Errorf("status update: spec %d labels %v status %+v", *d.Spec.Replicas, d.Labels, d.Status)
	}
	wantErrors(t, r.Status.ValidateUpdate(ctx, d, old))

	bad := d.DeepCopy()
	bad.Status.AvailableReplicas = 3
	bad.Status.UpdatedReplicas = 4
	wantErrors(t, r.Status.ValidateUpdate(ctx, bad, old),
		invalid+" status.availableReplicas", invalid+" status.updatedReplicas")
}

func TestScale(t *testing.T) {
	d := find(t, appsV1, "deployments")
	dep := newDeployment()
	defaultDeployment(dep)
	dep.UID = "u1"
	dep.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
	dep.Status.Replicas = 2
	s, err := d.Scale.Scale(dep)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "web" || s.Namespace != "default" || s.UID != "u1" || s.ResourceVersion != "1" ||
		s.Spec.Replicas != 1 || s.Status.Replicas != 2 || s.Status.Selector != "app=web,tier in (front)" {
		t.Errorf("scale %+v", s)
	}
	out, err := d.Scale.SetReplicas(dep, 5)
	if err != nil {
		t.Fatal(err)
	}
	if *out.(*appsv1.Deployment).Spec.Replicas != 5 || *dep.Spec.Replicas != 1 {
		t.Errorf("SetReplicas must change a copy")
	}

	rs := find(t, appsV1, "replicasets")
	set := newReplicaSet()
	set.Spec.Replicas = ptr(int32(4))
	set.Status.Replicas = 3
	s, err = rs.Scale.Scale(set)
	if err != nil || s.Spec.Replicas != 4 || s.Status.Replicas != 3 || s.Status.Selector != "app=web" {
		t.Errorf("replicaset scale %+v, %v", s, err)
	}
	if _, err := rs.Scale.Scale(dep); err == nil {
		t.Errorf("replicaset scale accepted a deployment")
	}
}

func TestReplicaSet(t *testing.T) {
	r := find(t, appsV1, "replicasets")
	ctx := context.Background()
	rs := newReplicaSet()
	r.Strategy.Default(rs)
	if *rs.Spec.Replicas != 1 || rs.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("replicaset defaults %+v", rs.Spec)
	}
	rs.Status.Replicas = 5
	r.Strategy.PrepareForCreate(ctx, rs)
	if rs.Status.Replicas != 0 || rs.Generation != 1 {
		t.Errorf("create: status %+v generation %d", rs.Status, rs.Generation)
	}
	wantErrors(t, r.Strategy.Validate(ctx, rs))

	bad := rs.DeepCopy()
	bad.Spec.Replicas = ptr(int32(-2))
	bad.Spec.Template.Labels = nil
	wantErrors(t, r.Strategy.Validate(ctx, bad), invalid+" spec.replicas", invalid+" spec.template.metadata.labels")

	changed := rs.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	changed.Spec.Template.Labels = map[string]string{"app": "other"}
	r.Strategy.PrepareForUpdate(ctx, changed, rs)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, changed, rs), invalid+" spec.selector")
	if changed.Generation != 2 {
		t.Errorf("spec change generation %d", changed.Generation)
	}

	st := rs.DeepCopy()
	st.Status = appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 2}
	r.Status.PrepareForUpdate(ctx, st, rs)
	wantErrors(t, r.Status.ValidateUpdate(ctx, st, rs), invalid+" status.fullyLabeledReplicas", invalid+" status.availableReplicas")

	_, f, _ := r.Strategy.GetAttrs(st)
	if f["status.replicas"] != "2" {
		t.Errorf("status.replicas field %q", f["status.replicas"])
	}
}

func TestWorkloadTables(t *testing.T) {
	ctx := context.Background()
	created := metav1.NewTime(testNow.Add(-3 * time.Hour))
	d := newDeployment()
	defaultDeployment(d)
	d.CreationTimestamp = created
	d.Spec.Replicas = ptr(int32(3))
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy:1"})
	d.Status = appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}
	table, err := find(t, appsV1, "deployments").Strategy.ConvertToTable(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"web", "2/3", int64(3), int64(2), "3h", "web,sidecar", "nginx:1.27,envoy:1", "app=web"}
	if !apiequality.Semantic.DeepEqual(table.Rows[0].Cells, want) {
		t.Errorf("deployment cells %q, want %q", table.Rows[0].Cells, want)
	}
	assertColumns(t, table.ColumnDefinitions, "Name,Ready,Up-to-date,Available,Age,Containers*,Images*,Selector*")

	rs := newReplicaSet()
	rs.CreationTimestamp = created
	rs.Spec.Replicas = ptr(int32(2))
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}
	table, err = find(t, appsV1, "replicasets").Strategy.ConvertToTable(ctx, &appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{*rs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []any{"web-abc", int64(2), int64(2), int64(1), "3h", "web", "nginx:1.27", "app=web"}
	if !apiequality.Semantic.DeepEqual(table.Rows[0].Cells, want) {
		t.Errorf("replicaset cells %q, want %q", table.Rows[0].Cells, want)
	}
	assertColumns(t, table.ColumnDefinitions, "Name,Desired,Current,Ready,Age,Containers*,Images*,Selector*")
}
