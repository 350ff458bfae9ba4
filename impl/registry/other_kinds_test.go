package registry

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRoles(t *testing.T) {
	ctx := context.Background()
	roles := find(t, rbacv1.SchemeGroupVersion, "roles")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:pod-reader", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	wantErrors(t, roles.Strategy.Validate(ctx, role))
	bad := role.DeepCopy()
	bad.Name = "a/b"
	bad.Rules = append(bad.Rules, rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{Resources: []string{"pods"}})
	wantErrors(t, roles.Strategy.Validate(ctx, bad), invalid+" metadata.name", invalid+" rules[1].nonResourceURLs",
		required+" rules[2].apiGroups", required+" rules[2].verbs")
	role.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	assertRow(t, roles, role, "Name,Created At", "system:pod-reader", "2026-01-01T00:00:00Z")

	crs := find(t, rbacv1.SchemeGroupVersion, "clusterroles")
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "health"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}}
	wantErrors(t, crs.Strategy.Validate(ctx, cr))
	cr.AggregationRule = &rbacv1.AggregationRule{}
	wantErrors(t, crs.Strategy.Validate(ctx, cr), required+" aggregationRule.clusterRoleSelectors")
}

func TestRoleBindings(t *testing.T) {
	ctx := context.Background()
	rbs := find(t, rbacv1.SchemeGroupVersion, "rolebindings")
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "default", ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane"}, {Kind: "Group", Name: "devs"},
			{Kind: "ServiceAccount", Name: "builder", Namespace: "ci"}, {Kind: "ServiceAccount", Name: "local"}}}
	rbs.Strategy.Default(rb)
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName ||
		rb.Subjects[1].APIGroup != rbacv1.GroupName || rb.Subjects[2].APIGroup != "" {
		t.Errorf("rbac defaults: %+v", rb)
	}
	wantErrors(t, rbs.Strategy.Validate(ctx, rb))
	rb.CreationTimestamp = metav1.NewTime(testNow.Add(-4 * 24 * time.Hour))
	assertRow(t, rbs, rb, "Name,Role,Age,Users*,Groups*,ServiceAccounts*",
		"read-pods", "Role/pod-reader", "4d", "jane", "devs", "ci/builder, local")

	changed := rb.DeepCopy()
	changed.RoleRef.Name = "admin"
	wantErrors(t, rbs.Strategy.ValidateUpdate(ctx, changed, rb), invalid+" roleRef")
	subjects := rb.DeepCopy()
	subjects.Subjects = subjects.Subjects[:1]
	wantErrors(t, rbs.Strategy.ValidateUpdate(ctx, subjects, rb))

	bad := rb.DeepCopy()
	bad.RoleRef = rbacv1.RoleRef{APIGroup: "example.com", Kind: "Policy"}
	bad.Subjects = []rbacv1.Subject{{Kind: "Robot", Name: "r2"}, {Kind: "User", APIGroup: "", Name: "x"}}
	wantErrors(t, rbs.Strategy.Validate(ctx, bad), notSupported+" roleRef.apiGroup", notSupported+" roleRef.kind",
		required+" roleRef.name", notSupported+" subjects[0].kind", notSupported+" subjects[1].apiGroup")

	crbs := find(t, rbacv1.SchemeGroupVersion, "clusterrolebindings")
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "x"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa"}}}
	crbs.Strategy.Default(crb)
	wantErrors(t, crbs.Strategy.Validate(ctx, crb), notSupported+" roleRef.kind", required+" subjects[0].namespace")
}

func TestPriorityClasses(t *testing.T) {
	ctx := context.Background()
	r := find(t, schedulingv1.SchemeGroupVersion, "priorityclasses")
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high", ResourceVersion: "1"}, Value: 1000, GlobalDefault: true}
	r.Strategy.Default(pc)
	if *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy default %v", *pc.PreemptionPolicy)
	}
	wantErrors(t, r.Strategy.Validate(ctx, pc))
	pc.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
	assertRow(t, r, pc, "Name,Value,Global-Default,Age,PreemptionPolicy", "high", int64(1000), true, "60m", "PreemptLowerPriority")

	upd := pc.DeepCopy()
	upd.Value = 5
	upd.PreemptionPolicy = ptr(corev1.PreemptNever)
	upd.Description = "may change"
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, pc), forbidden+" value", invalid+" preemptionPolicy")

	for _, tc := range []struct {
		pc   *schedulingv1.PriorityClass
		want []string
	}{
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 2000000000}, []string{forbidden + " value"}},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}}, []string{forbidden + " metadata.name"}},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000}, nil},
		{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p"}, PreemptionPolicy: ptr(corev1.PreemptionPolicy("Sometimes"))},
			[]string{notSupported + " preemptionPolicy"}},
	} {
		r.Strategy.Default(tc.pc)
		wantErrors(t, r.Strategy.Validate(ctx, tc.pc), tc.want...)
	}
}

func TestLeases(t *testing.T) {
	ctx := context.Background()
	r := find(t, coordinationv1.SchemeGroupVersion, "leases")
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease",
		CreationTimestamp: metav1.NewTime(testNow.Add(-20 * time.Second))},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40))}}
	wantErrors(t, r.Strategy.Validate(ctx, l))
	assertRow(t, r, l, "Name,Holder,Age", "node-1", "node-1", "20s")
	bad := l.DeepCopy()
	bad.Spec.LeaseDurationSeconds = ptr(int32(0))
	bad.Spec.LeaseTransitions = ptr(int32(-1))
	bad.Spec.PreferredHolder = ptr("other")
	wantErrors(t, r.Strategy.Validate(ctx, bad), invalid+" spec.leaseDurationSeconds", invalid+" spec.leaseTransitions",
		forbidden+" spec.preferredHolder")
	noHolder := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y"}}
	table, _ := r.Strategy.ConvertToTable(ctx, noHolder, nil)
	if table.Rows[0].Cells[1] != "" {
		t.Errorf("holder of unheld lease %q", table.Rows[0].Cells[1])
	}
}

func coreEvent() *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.17a", Namespace: "default", ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1",
			APIVersion: "v1", ResourceVersion: "12", FieldPath: "spec.containers{app}"},
		Reason:         "Pulled",
		Message:        "Successfully pulled image\n",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(testNow.Add(-10 * time.Minute)),
		LastTimestamp:  metav1.NewTime(testNow.Add(-2 * time.Minute)),
		Count:          3,
		Type:           corev1.EventTypeNormal,
	}
}

func TestCoreEvents(t *testing.T) {
	ctx := context.Background()
	r := find(t, coreV1, "events")
	e := coreEvent()
	wantErrors(t, r.Strategy.Validate(ctx, e))
	assertRow(t, r, e, "Last Seen,Type,Reason,Object,Subobject*,Source*,Message,First Seen*,Count*,Name*",
		"2m", "Normal", "Pulled", "pod/web", "spec.containers{app}", "kubelet, node-1", "Successfully pulled image", "10m", int64(3), "web.17a")

	_, f, _ := r.Strategy.GetAttrs(e)
	want := map[string]string{
		"involvedObject.kind": "Pod", "involvedObject.namespace": "default", "involvedObject.name": "web",
		"involvedObject.uid": "u1", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "12",
		"involvedObject.fieldPath": "spec.containers{app}", "reason": "Pulled", "reportingComponent": "",
		"source": "kubelet", "type": "Normal", "metadata.name": "web.17a", "metadata.namespace": "default",
	}
	if !apiequality.Semantic.DeepEqual(map[string]string(f), want) {
		t.Errorf("event fields\n got  %v\n want %v", f, want)
	}

	mismatch := e.DeepCopy()
	mismatch.InvolvedObject.Namespace = "other"
	wantErrors(t, r.Strategy.Validate(ctx, mismatch), invalid+" involvedObject.namespace")
	clusterScoped := e.DeepCopy()
	clusterScoped.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
	wantErrors(t, r.Strategy.Validate(ctx, clusterScoped))
	clusterScoped.Namespace = "kube-system"
	wantErrors(t, r.Strategy.Validate(ctx, clusterScoped), invalid+" involvedObject.namespace")

	newStyle := e.DeepCopy()
	newStyle.EventTime = metav1.NewMicroTime(testNow.Add(-5 * time.Second))
	wantErrors(t, r.Strategy.Validate(ctx, newStyle), required+" reportingComponent", required+" reportingInstance", required+" action")
	newStyle.ReportingController = "kubelet"
	newStyle.ReportingInstance = "node-1"
	newStyle.Action = "Pull"
	wantErrors(t, r.Strategy.Validate(ctx, newStyle))

	// core/v1 updates stay lenient (event recorders patch count and timestamps).
	bumped := e.DeepCopy()
	bumped.Count = 4
	bumped.Message = "again"
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, bumped, e))

	series := newStyle.DeepCopy()
	series.FirstTimestamp, series.LastTimestamp, series.Count = metav1.Time{}, metav1.Time{}, 0
	series.Series = &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(testNow.Add(-time.Second))}
	table, _ := r.Strategy.ConvertToTable(ctx, series, nil)
	if c := table.Rows[0].Cells; c[0] != "1s" || c[7] != "5s" || c[8] != int64(7) {
		t.Errorf("series event cells %q", c)
	}
	single := newStyle.DeepCopy()
	single.FirstTimestamp, single.LastTimestamp, single.Count = metav1.Time{}, metav1.Time{}, 0
	table, _ = r.Strategy.ConvertToTable(ctx, single, nil)
	if c := table.Rows[0].Cells; c[0] != "5s" || c[8] != int64(1) {
		t.Errorf("singleton new-style event cells %q", c)
	}
}

func v1Event() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web.17b", Namespace: "default", ResourceVersion: "1"},
		EventTime:           metav1.NewMicroTime(testNow.Add(-30 * time.Second)),
		ReportingController: "example.com/controller",
		ReportingInstance:   "controller-0",
		Action:              "Scale",
		Reason:              "Scaled",
		Regarding:           corev1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web"},
		Note:                "scaled to 3",
		Type:                corev1.EventTypeNormal,
	}
}

func TestEventsV1(t *testing.T) {
	ctx := context.Background()
	r := find(t, eventsv1.SchemeGroupVersion, "events")
	e := v1Event()
	wantErrors(t, r.Strategy.Validate(ctx, e))
	assertRow(t, r, e, "Last Seen,Type,Reason,Object,Subobject*,Source*,Message,First Seen*,Count*,Name*",
		"30s", "Normal", "Scaled", "deployment/web", "", "example.com/controller, controller-0", "scaled to 3", "30s", int64(1), "web.17b")

	bad := e.DeepCopy()
	bad.ReportingController = ""
	bad.Type = "Info"
	bad.EventTime = metav1.MicroTime{}
	bad.DeprecatedCount = 2
	bad.Series = &eventsv1.EventSeries{Count: 1}
	// kube-apiserver validates the internal (core) Event whichever API
	// wrote it, so the errors name core/v1's fields: count, not
	// deprecatedCount; message, not note. Without an eventTime the
	// event is checked as an old-style one: no reporting fields needed.
	wantErrors(t, r.Strategy.Validate(ctx, bad), invalid+" type", required+" eventTime",
		invalid+" count", invalid+" series.count", required+" series.lastObservedTime")
	long := e.DeepCopy()
	long.Note = strings.Repeat("n", 1025)
	long.Namespace, long.Regarding.Namespace = "team", ""
	wantErrors(t, r.Strategy.Validate(ctx, long), invalid+" message", invalid+" involvedObject.namespace")
	anonymous := e.DeepCopy()
	anonymous.ReportingController = ""
	wantErrors(t, r.Strategy.Validate(ctx, anonymous), required+" reportingController")

	upd := e.DeepCopy()
	upd.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(testNow)}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, e))
	upd.Note = "changed"
	upd.Regarding.Name = "other"
	upd.Reason = "Other"
	// kube-apiserver checks reason's immutability twice (two errors).
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, e), invalid+" message", invalid+" involvedObject", invalid+" reason", invalid+" reason")
	// An update is not held to the create's strict rules: an event
	// recorded through core/v1 with a count and source (deprecated in
	// events.k8s.io/v1) can be updated through events.k8s.io/v1, its
	// series only checked when it changes, and an eventTime within the
	// same microsecond is the same.
	legacy := e.DeepCopy()
	legacy.DeprecatedCount, legacy.DeprecatedSource = 3, corev1.EventSource{Component: "kubelet"}
	legacy.Series = &eventsv1.EventSeries{Count: 1}
	touched := legacy.DeepCopy()
	touched.Labels = map[string]string{"seen": "yes"}
	touched.EventTime = metav1.NewMicroTime(legacy.EventTime.Add(300 * time.Nanosecond))
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, touched, legacy))
	touched.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(testNow)}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, touched, legacy), invalid+" series.count")

	_, f, _ := r.Strategy.GetAttrs(e)
	if f["regarding.name"] != "web" || f["involvedObject.name"] != "web" || f["reportingController"] != "example.com/controller" ||
		f["reportingComponent"] != "example.com/controller" || f["source"] != "example.com/controller" {
		t.Errorf("events.k8s.io fields %v", f)
	}
}

// An immutable field changed through events.k8s.io/v1 is reported with
// its new value as kube-apiserver prints it: the value of its internal
// (core) Event, whose object reference and source have no JSON tags, so a
// reference or source is every Go field by name, and an absent related
// object null.
func TestEventsV1ImmutableValues(t *testing.T) {
	ctx := context.Background()
	r := find(t, eventsv1.SchemeGroupVersion, "events")
	old := v1Event()
	old.Related = &corev1.ObjectReference{Kind: "Pod", Name: "p"}
	upd := old.DeepCopy()
	upd.Regarding = corev1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "other", UID: "u1"}
	upd.DeprecatedSource = corev1.EventSource{Component: "kubelet"}
	upd.Related = nil
	upd.Note = "changed"
	var got []string
	for _, e := range r.Strategy.ValidateUpdate(ctx, upd, old) {
		got = append(got, e.Error())
	}
	want := []string{
		`involvedObject: Invalid value: {"Kind":"Deployment","Namespace":"default","Name":"other","UID":"u1","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable`,
		`message: Invalid value: "changed": field is immutable`,
		`source: Invalid value: {"Component":"kubelet","Host":""}: field is immutable`,
		`related: Invalid value: null: field is immutable`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got  %q\n want %q", got, want)
	}
	// A related object set where there was none prints the reference.
	upd = old.DeepCopy()
	old.Related = nil
	got = got[:0]
	for _, e := range r.Strategy.ValidateUpdate(ctx, upd, old) {
		got = append(got, e.Error())
	}
	if w := `related: Invalid value: {"Kind":"Pod","Namespace":"","Name":"p","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable`; len(got) != 1 || got[0] != w {
		t.Errorf("errors %q, want [%q]", got, w)
	}
}

func TestEventConversionRoundTrips(t *testing.T) {
	v1 := v1Event()
	v1.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(testNow)}
	v1.Related = &corev1.ObjectReference{Kind: "Pod", Name: "p"}
	v1.DeprecatedSource = corev1.EventSource{Component: "c"}
	back := V1EventFromCore(CoreEventFromV1(v1))
	back.TypeMeta = v1.TypeMeta
	if !apiequality.Semantic.DeepEqual(back, v1) {
		t.Errorf("events.k8s.io -> core -> events.k8s.io changed the event:\n%+v\n%+v", back, v1)
	}
	core := coreEvent()
	again := CoreEventFromV1(V1EventFromCore(core))
	again.TypeMeta = core.TypeMeta
	if !apiequality.Semantic.DeepEqual(again, core) {
		t.Errorf("core -> events.k8s.io -> core changed the event")
	}
}
