package registry

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaces(t *testing.T) {
	r := find(t, coreV1, "namespaces")
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	ns.Status.Phase = corev1.NamespaceTerminating
	r.Strategy.Default(ns)
	r.Strategy.PrepareForCreate(ctx, ns)
	if ns.Status.Phase != corev1.NamespaceActive || !apiequality.Semantic.DeepEqual(ns.Spec.Finalizers, []corev1.FinalizerName{"kubernetes"}) {
		t.Errorf("namespace after create: %+v", ns)
	}
	if ns.Labels["kubernetes.io/metadata.name"] != "team-a" {
		t.Errorf("metadata.name label missing: %v", ns.Labels)
	}
	wantErrors(t, r.Strategy.Validate(ctx, ns))
	if ns.Generation != 0 {
		t.Errorf("namespaces have no generation, got %d", ns.Generation)
	}

	for _, bad := range []string{"Team", "a.b", strings.Repeat("x", 64)} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bad}}
		wantErrors(t, r.Strategy.Validate(ctx, n), invalid+" metadata.name")
	}
	withNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y"}}
	wantErrors(t, r.Strategy.Validate(ctx, withNS), forbidden+" metadata.namespace")

	ns.ResourceVersion = "3"
	upd := ns.DeepCopy()
	upd.Spec.Finalizers = nil
	upd.Status.Phase = corev1.NamespaceTerminating
	r.Strategy.PrepareForUpdate(ctx, upd, ns)
	if len(upd.Spec.Finalizers) != 1 || upd.Status.Phase != corev1.NamespaceActive {
		t.Errorf("main endpoint changed finalizers or status: %+v", upd)
	}

	st := ns.DeepCopy()
	st.Status.Phase = corev1.NamespaceTerminating
	r.Status.PrepareForUpdate(ctx, st, ns)
	wantErrors(t, r.Status.ValidateUpdate(ctx, st, ns), invalid+" status.phase")
	deleting := ns.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	st2 := deleting.DeepCopy()
	st2.Status.Phase = corev1.NamespaceTerminating
	r.Status.PrepareForUpdate(ctx, st2, deleting)
	wantErrors(t, r.Status.ValidateUpdate(ctx, st2, deleting))

	_, f, _ := r.Strategy.GetAttrs(ns)
	if f["status.phase"] != "Active" || f["metadata.name"] != "team-a" || f["name"] != "team-a" {
		t.Errorf("fields %v", f)
	}
	ns.CreationTimestamp = metav1.NewTime(testNow.Add(-49 * time.Hour))
	assertRow(t, r, ns, "Name,Status,Age", "team-a", "Active", "2d1h")
}

func TestNodes(t *testing.T) {
	r := find(t, coreV1, "nodes")
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
			"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Unschedulable: true,
			Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.1"},
		},
	}
	r.Strategy.Default(n)
	r.Strategy.PrepareForCreate(ctx, n)
	if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != "10.244.1.0/24" {
		t.Errorf("podCIDRs not defaulted: %v", n.Spec.PodCIDRs)
	}
	if !apiequality.Semantic.DeepEqual(n.Status.Allocatable, n.Status.Capacity) {
		t.Errorf("allocatable not defaulted to capacity")
	}
	if len(n.Status.Conditions) != 1 {
		t.Errorf("node status must be kept on create (kubelet registration)")
	}
	wantErrors(t, r.Strategy.Validate(ctx, n))

	n.CreationTimestamp = metav1.NewTime(testNow.Add(-10 * time.Second))
	assertRow(t, r, n, "Name,Status,Roles,Age,Version,Internal-IP*,External-IP*,OS-Image*,Kernel-Version*,Container-Runtime*",
		"node-1", "Ready,SchedulingDisabled", "control-plane,edge,worker", "10s", "v1.37.2",
		"192.168.1.10", "<none>", "<unknown>", "<unknown>", "containerd://2.1")
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	table, _ := r.Strategy.ConvertToTable(ctx, bare, nil)
	if table.Rows[0].Cells[1] != "Unknown" || table.Rows[0].Cells[2] != "<none>" {
		t.Errorf("node without conditions: %v", table.Rows[0].Cells)
	}
	notReady := bare.DeepCopy()
	notReady.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	table, _ = r.Strategy.ConvertToTable(ctx, notReady, nil)
	if table.Rows[0].Cells[1] != "NotReady" {
		t.Errorf("node with Ready=Unknown: %v", table.Rows[0].Cells[1])
	}

	_, f, _ := r.Strategy.GetAttrs(n)
	if f["spec.unschedulable"] != "true" {
		t.Errorf("spec.unschedulable = %q", f["spec.unschedulable"])
	}

	n.ResourceVersion = "2"
	cases := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []string
	}{
		{"cordon", func(x *corev1.Node) { x.Spec.Unschedulable = false }, nil},
		{"change podCIDR", func(x *corev1.Node) { x.Spec.PodCIDR = "10.244.2.0/24"; x.Spec.PodCIDRs = []string{"10.244.2.0/24"} },
			[]string{forbidden + " spec.podCIDRs"}},
		{"bad taint effect", func(x *corev1.Node) { x.Spec.Taints[0].Effect = "Repel" }, []string{notSupported + " spec.taints[0].effect"}},
		{"duplicate taint", func(x *corev1.Node) { x.Spec.Taints = append(x.Spec.Taints, x.Spec.Taints[0]) }, []string{duplicate + " spec.taints[1]"}},
	}
	for _, tc := range cases {
		u := n.DeepCopy()
		tc.mutate(u)
		r.Strategy.PrepareForUpdate(ctx, u, n)
		if len(tc.want) == 0 && !apiequality.Semantic.DeepEqual(u.Status, n.Status) {
			t.Errorf("%s: main endpoint changed status", tc.name)
		}
		t.Run(tc.name, func(t *testing.T) { wantErrors(t, r.Strategy.ValidateUpdate(ctx, u, n), tc.want...) })
	}
	unset := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late", ResourceVersion: "1"}}
	set := unset.DeepCopy()
	set.Spec.PodCIDR = "10.0.0.0/24"
	r.Strategy.Default(set)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, set, unset))

	st := n.DeepCopy()
	st.Spec.Unschedulable = false
	st.Status.Conditions[0].Status = corev1.ConditionFalse
	r.Status.PrepareForUpdate(ctx, st, n)
	if !st.Spec.Unschedulable || st.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("status endpoint: spec %+v status %+v", st.Spec, st.Status.Conditions)
	}
	neg := st.DeepCopy()
	neg.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("-1")
	wantErrors(t, r.Status.ValidateUpdate(ctx, neg, n), invalid+" status.capacity[cpu]")
}

func TestConfigMaps(t *testing.T) {
	r := find(t, coreV1, "configmaps")
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: "4"},
		Data: map[string]string{"a.conf": "x", "b": "y"}, BinaryData: map[string][]byte{"c": {1}}}
	wantErrors(t, r.Strategy.Validate(ctx, cm))
	bad := cm.DeepCopy()
	bad.Data["bad/key"] = "z"
	bad.BinaryData["a.conf"] = []byte{2}
	wantErrors(t, r.Strategy.Validate(ctx, bad), invalid+" data[bad/key]", invalid+" binaryData[a.conf]")
	big := cm.DeepCopy()
	big.Data["big"] = strings.Repeat("x", corev1.MaxSecretSize)
	wantErrors(t, r.Strategy.Validate(ctx, big), tooLong+" []")

	cm.Immutable = ptr(true)
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []string
	}{
		{"labels may change", func(c *corev1.ConfigMap) { c.Labels = map[string]string{"a": "b"} }, nil},
		{"data may not", func(c *corev1.ConfigMap) { c.Data["a.conf"] = "changed" }, []string{forbidden + " data"}},
		{"binaryData may not", func(c *corev1.ConfigMap) { c.BinaryData = nil }, []string{forbidden + " binaryData"}},
		{"immutable may not be unset", func(c *corev1.ConfigMap) { c.Immutable = ptr(false) }, []string{forbidden + " immutable"}},
	} {
		u := cm.DeepCopy()
		tc.mutate(u)
		t.Run(tc.name, func(t *testing.T) { wantErrors(t, r.Strategy.ValidateUpdate(ctx, u, cm), tc.want...) })
	}
	mutable := cm.DeepCopy()
	mutable.Immutable = nil
	changed := mutable.DeepCopy()
	changed.Data["a.conf"] = "new"
	changed.Immutable = ptr(true)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, changed, mutable))

	cm.CreationTimestamp = metav1.NewTime(testNow.Add(-30 * time.Second))
	assertRow(t, r, cm, "Name,Data,Age", "cfg", int64(3), "30s")
}

func TestSecrets(t *testing.T) {
	r := find(t, coreV1, "secrets")
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default", ResourceVersion: "1"},
		Data: map[string][]byte{"user": []byte("admin")}, StringData: map[string]string{"password": "hunter2"}}
	r.Strategy.Default(s)
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["password"]) != "hunter2" || s.StringData != nil {
		t.Errorf("secret defaults: %+v", s)
	}
	wantErrors(t, r.Strategy.Validate(ctx, s))

	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "default"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("c")}}
	wantErrors(t, r.Strategy.Validate(ctx, tls), required+" data[tls.key]")
	sat := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok", Namespace: "default"}, Type: corev1.SecretTypeServiceAccountToken}
	wantErrors(t, r.Strategy.Validate(ctx, sat), required+" metadata.annotations[kubernetes.io/service-account.name]")
	badKey := s.DeepCopy()
	badKey.Data["no spaces"] = nil
	wantErrors(t, r.Strategy.Validate(ctx, badKey), invalid+" data[no spaces]")

	retyped := s.DeepCopy()
	retyped.Type = corev1.SecretTypeBasicAuth
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, retyped, s), invalid+" type")
	s.Immutable = ptr(true)
	changed := s.DeepCopy()
	changed.Data["user"] = []byte("root")
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, changed, s), forbidden+" data")

	_, f, _ := r.Strategy.GetAttrs(s)
	if f["type"] != "Opaque" {
		t.Errorf("type field %q", f["type"])
	}
	s.CreationTimestamp = metav1.NewTime(testNow.Add(-2 * time.Minute))
	assertRow(t, r, s, "Name,Type,Data,Age", "creds", "Opaque", int64(2), "2m")
}

func TestServiceAccounts(t *testing.T) {
	r := find(t, coreV1, "serviceaccounts")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "kube-system",
		CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))}, Secrets: []corev1.ObjectReference{{Name: "t"}}}
	wantErrors(t, r.Strategy.Validate(context.Background(), sa))
	assertRow(t, r, sa, "Name,Secrets,Age", "default", int64(1), "60m")
	bad := sa.DeepCopy()
	bad.Name = "Default"
	wantErrors(t, r.Strategy.Validate(context.Background(), bad), invalid+" metadata.name")
}

func TestLimitRanges(t *testing.T) {
	r := find(t, coreV1, "limitranges")
	ctx := context.Background()
	q := resource.MustParse
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Max:  corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
			Min:  corev1.ResourceList{corev1.ResourceCPU: q("100m")},
		}}}}
	r.Strategy.Default(lr)
	item := lr.Spec.Limits[0]
	if !item.Default.Cpu().Equal(q("2")) || !item.Default.Memory().Equal(q("1Gi")) ||
		!item.DefaultRequest.Cpu().Equal(q("2")) || !item.DefaultRequest.Memory().Equal(q("1Gi")) {
		t.Errorf("limit range defaults: default %v defaultRequest %v", item.Default, item.DefaultRequest)
	}
	wantErrors(t, r.Strategy.Validate(ctx, lr))

	bad := lr.DeepCopy()
	bad.Spec.Limits[0].Min[corev1.ResourceCPU] = q("3")
	bad.Spec.Limits = append(bad.Spec.Limits, corev1.LimitRangeItem{Type: "Node"},
		corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: corev1.ResourceList{corev1.ResourceCPU: q("1")}})
	wantErrors(t, r.Strategy.Validate(ctx, bad),
		invalid+" spec.limits[0].min[cpu]", invalid+" spec.limits[0].default[cpu]", invalid+" spec.limits[0].defaultRequest[cpu]",
		notSupported+" spec.limits[1].type", forbidden+" spec.limits[2].default")
	lr.CreationTimestamp = metav1.NewTime(time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC))
	assertRow(t, r, lr, "Name,Created At", "limits", "2025-05-06T07:08:09Z")
}

func TestResourceQuotas(t *testing.T) {
	r := find(t, coreV1, "resourcequotas")
	ctx := context.Background()
	q := resource.MustParse
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"pods": q("10"), "requests.cpu": q("4"), "limits.cpu": q("8"), "limits.memory": q("16Gi")}},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"pods": q("3")}}}
	r.Strategy.PrepareForCreate(ctx, rq)
	if rq.Status.Used != nil {
		t.Errorf("status not cleared on create")
	}
	wantErrors(t, r.Strategy.Validate(ctx, rq))
	rq.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Minute))
	// Before the quota controller has written status there is nothing to show.
	assertRow(t, r, rq, "Name,Request,Limit,Age", "compute", "", "", "60s")
	// The columns show status (used/hard as enforced), not spec.
	rq.Status.Hard = corev1.ResourceList{"pods": q("20"), "requests.cpu": q("4"), "limits.cpu": q("8"), "limits.memory": q("16Gi")}
	rq.Status.Used = corev1.ResourceList{"pods": q("3"), "requests.cpu": q("500m")}
	assertRow(t, r, rq, "Name,Request,Limit,Age", "compute",
		"pods: 3/20, requests.cpu: 500m/4", "limits.cpu: 0/8, limits.memory: 0/16Gi", "60s")

	bad := rq.DeepCopy()
	bad.Spec.Hard["pods"] = q("-1")
	bad.Spec.Scopes = []corev1.ResourceQuotaScope{"Weekend"}
	bad.Spec.Hard["gpus"] = q("1")
	bad.Spec.Hard["count/deployments.apps"] = q("5")
	bad.Spec.Hard["requests.hugepages-2Mi"] = q("1Gi")
	wantErrors(t, r.Strategy.Validate(ctx, bad), invalid+" spec.hard[pods]", notSupported+" spec.scopes[0]", invalid+" spec.hard[gpus]")

	upd := rq.DeepCopy()
	upd.Status = corev1.ResourceQuotaStatus{}
	r.Strategy.PrepareForUpdate(ctx, upd, rq)
	if len(upd.Status.Used) != 2 {
		t.Errorf("main endpoint dropped status")
	}
	st := rq.DeepCopy()
	st.Spec.Hard = nil
	st.Status.Hard = st.Status.Used
	r.Status.PrepareForUpdate(ctx, st, rq)
	if len(st.Spec.Hard) != 4 {
		t.Errorf("status endpoint changed spec")
	}
	wantErrors(t, r.Status.ValidateUpdate(ctx, st, rq))
}

// assertRow renders obj's table and checks columns and cells.
func assertRow(t *testing.T, r resourceWithStrategy, obj runtimeObject, columns string, cells ...any) {
	t.Helper()
	table, err := r.Strategy.ConvertToTable(context.Background(), obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table.ColumnDefinitions, columns)
	if !apiequality.Semantic.DeepEqual(table.Rows[0].Cells, cells) {
		t.Errorf("cells\n got  %#v\n want %#v", table.Rows[0].Cells, cells)
	}
}
