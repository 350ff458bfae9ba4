package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill/bytesource"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	apiresource "github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// FuzzAdmission sends pod creates, updates, status updates, deletes and
// evictions by random identities (users, groups, service accounts, nodes)
// through every admission plugin NewPlugins builds, on in-memory stores
// holding a random cluster (namespace with Pod Security labels, service
// accounts, a LimitRange, a ResourceQuota, PriorityClasses, nodes), in the
// API server's order: defaulting, the mutating plugins, PrepareFor*, the
// pod strategy's validation, the validating plugins. Pods are either
// structure-aware (built from the fuzzer's bytes, mostly valid, with
// randfill-filled security contexts and resources now and then) or filled
// whole by randfill with apimachinery's fuzzer functions. Properties:
//   - no plugin panics, and every refusal is a 4xx Status;
//   - a request that was valid before admission is still valid after the
//     mutating plugins (they never turn a valid pod into an invalid one),
//     unless LimitRanger's defaults conflict with the pod's own values,
//     which kube-apiserver also answers with 422 (allowedInvalid);
//   - the mutating chain is idempotent: running it again on its own
//     output accepts it and changes nothing;
//   - NodeRestriction: a node identity never gets a pod bound to another
//     node (or to none) admitted — create, update, status update, delete or
//     eviction.
func FuzzAdmission(f *testing.F) {
	for _, seed := range admissionSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAdmission(t, data)
	})
}

// admissionSeeds cover each operation and identity kind: the first byte
// chooses the operation, the second the identity (see admissionCase).
var admissionSeeds = [][]byte{
	{},
	{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	{0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
	{1, 3, 1, 2, 1, 2, 1, 2, 1, 2},
	{2, 4, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7},
	{3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{4, 4, 255, 255, 255, 255, 255, 255, 255, 255},
	{0, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
	{5, 1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8, 7, 6},
	[]byte("\x05\x07randfill pod bytes: 0123456789abcdefghijklmnopqrstuvwxyz"),
}

// fuzzBytes hands out the fuzzer's bytes as small decisions; when they run
// out every decision is its zero value.
type fuzzBytes struct{ data []byte }

func (in *fuzzBytes) byte() byte {
	if len(in.data) == 0 {
		return 0
	}
	b := in.data[0]
	in.data = in.data[1:]
	return b
}

func (in *fuzzBytes) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(in.byte()) % n
}

// chance is true for about one byte in n, and never once the bytes have
// run out (so short inputs are simple cases).
func (in *fuzzBytes) chance(n int) bool { return in.intn(n) == n-1 }

func (in *fuzzBytes) string(max int) string {
	n := in.intn(max + 1)
	n = min(n, len(in.data))
	s := string(in.data[:n])
	in.data = in.data[n:]
	return s
}

func pickOf[T any](in *fuzzBytes, options ...T) T { return options[in.intn(len(options))] }

const (
	fuzzNamespace = "ns"
	fuzzNodeA     = "node-a"
	fuzzNodeB     = "node-b"
)

var fuzzNodeUIDs = map[string]types.UID{fuzzNodeA: "uid-node-a", fuzzNodeB: "uid-node-b"}

// identities are the users requests come from.
func fuzzIdentity(in *fuzzBytes) *request.User {
	auth := "system:authenticated"
	switch in.intn(11) {
	case 0:
		return &request.User{Name: "alice", Groups: []string{auth}}
	case 1:
		return &request.User{Name: "admin", Groups: []string{"system:masters", auth}}
	case 2:
		return &request.User{Name: "system:serviceaccount:ns:default",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", auth}}
	case 3:
		return &request.User{Name: "system:node:" + fuzzNodeA, Groups: []string{"system:nodes", auth}}
	case 4:
		return &request.User{Name: "system:node:" + fuzzNodeB, Groups: []string{"system:nodes", auth}}
	case 5:
		// A node's name without the nodes group is not a node.
		return &request.User{Name: "system:node:" + fuzzNodeA, Groups: []string{auth}}
	case 6:
		return &request.User{Name: "system:node:", Groups: []string{"system:nodes", auth}}
	case 7:
		return &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	case 8:
		return nil
	case 9:
		// A node with a name no node has.
		return &request.User{Name: "system:node:" + in.string(12), Groups: []string{"system:nodes"}}
	default:
		groups := []string{}
		for range in.intn(3) {
			groups = append(groups, pickOf(in, "system:nodes", "system:masters", auth, "system:serviceaccounts", in.string(8)))
		}
		return &request.User{Name: pickOf(in, "system:node:", "system:serviceaccount:ns:", "") + in.string(16), Groups: groups}
	}
}

// nodeOfIdentity is the test's own reading of a node identity: the
// system:node:<name> user in the system:nodes group (as the Node
// authorizer and NodeRestriction define it).
func nodeOfIdentity(u *request.User) (string, bool) {
	if u == nil || !strings.HasPrefix(u.Name, "system:node:") {
		return "", false
	}
	for _, g := range u.Groups {
		if g == "system:nodes" {
			return strings.TrimPrefix(u.Name, "system:node:"), true
		}
	}
	return "", false
}

// fuzzQuantity is a small quantity of cpu or memory.
func fuzzQuantity(in *fuzzBytes, memory bool) resource.Quantity {
	if memory {
		return resource.MustParse(pickOf(in, "64Mi", "128Mi", "1Gi", "0", "100M"))
	}
	return resource.MustParse(pickOf(in, "100m", "250m", "1", "2", "0"))
}

func fuzzResourceList(in *fuzzBytes) corev1.ResourceList {
	l := corev1.ResourceList{}
	if in.chance(2) {
		l[corev1.ResourceCPU] = fuzzQuantity(in, false)
	}
	if in.chance(2) {
		l[corev1.ResourceMemory] = fuzzQuantity(in, true)
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// fuzzResources are a container's requests and limits: mostly each limit
// at least its request, sometimes any two lists.
func fuzzResources(in *fuzzBytes) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: fuzzResourceList(in), Limits: fuzzResourceList(in)}
	if in.chance(8) {
		return r
	}
	for n, req := range r.Requests {
		if lim, ok := r.Limits[n]; ok && lim.Cmp(req) < 0 {
			r.Limits[n] = req.DeepCopy()
		}
	}
	return r
}

// fuzzCluster fills the stores: the namespace (or none), service
// accounts, a limit range, a quota, priority classes, two nodes.
func fuzzCluster(in *fuzzBytes, st *memStores) error {
	if !in.chance(10) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzNamespace, Labels: map[string]string{}}}
		for _, mode := range []string{"enforce", "warn", "audit"} {
			if l := pickOf(in, "", "", "privileged", "baseline", "restricted", "bogus"); l != "" {
				ns.Labels[podSecurityLabelPrefix+mode] = l
			}
		}
		if v := pickOf(in, "", "", "latest", "v1.25", "v1.0", "vX"); v != "" {
			ns.Labels[podSecurityLabelPrefix+"enforce-version"] = v
		}
		if in.chance(12) {
			ns.Status.Phase = corev1.NamespaceTerminating
			now := metav1.Now()
			ns.DeletionTimestamp = &now
		}
		if err := st.add(nsResource, ns); err != nil {
			return err
		}
	}
	if !in.chance(6) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fuzzNamespace}}
		if in.chance(4) {
			f := false
			sa.AutomountServiceAccountToken = &f
		}
		if in.chance(4) {
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		}
		if err := st.add(saResource, sa); err != nil {
			return err
		}
	}
	if err := st.add(saResource, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: fuzzNamespace}}); err != nil {
		return err
	}
	if in.chance(2) {
		item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
			Default: fuzzResourceList(in), DefaultRequest: fuzzResourceList(in)}
		if in.chance(3) {
			item.Max = fuzzResourceList(in)
		}
		if in.chance(3) {
			item.Min = fuzzResourceList(in)
		}
		items := []corev1.LimitRangeItem{item}
		if in.chance(3) {
			items = append(items, corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: fuzzResourceList(in)})
		}
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: fuzzNamespace},
			Spec: corev1.LimitRangeSpec{Limits: items}}
		if err := st.add(limitRangeResource, lr); err != nil {
			return err
		}
	}
	if in.chance(3) {
		hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pickOf(in, "0", "1", "10"))}
		if in.chance(2) {
			hard[corev1.ResourceRequestsCPU] = fuzzQuantity(in, false)
		}
		if in.chance(2) {
			hard[corev1.ResourceLimitsMemory] = fuzzQuantity(in, true)
		}
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: fuzzNamespace},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		if err := st.add(quotaResource, q); err != nil {
			return err
		}
	}
	if err := st.add(priorityClassResource, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}); err != nil {
		return err
	}
	if in.chance(3) {
		if err := st.add(priorityClassResource, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone"},
			Value: 10, GlobalDefault: true}); err != nil {
			return err
		}
	}
	for _, n := range []string{fuzzNodeA, fuzzNodeB} {
		if err := st.add(nodeResource, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, UID: fuzzNodeUIDs[n]}}); err != nil {
			return err
		}
	}
	return nil
}

// fuzzContainer is a mostly valid container.
func fuzzContainer(in *fuzzBytes, name string, fill func(any)) corev1.Container {
	c := corev1.Container{Name: name, Image: pickOf(in, "nginx", "busybox:1.36", "registry.example/app@sha256:"+strings.Repeat("a", 64))}
	if in.chance(16) {
		c.Image = ""
	}
	c.ImagePullPolicy = pickOf(in, "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
	c.Resources = fuzzResources(in)
	if in.chance(2) {
		sc := &corev1.SecurityContext{}
		b := func() *bool { v := in.chance(2); return &v }
		if in.chance(3) {
			sc.Privileged = b()
		}
		if in.chance(2) {
			sc.AllowPrivilegeEscalation = b()
		}
		if in.chance(2) {
			sc.RunAsNonRoot = b()
		}
		if in.chance(3) {
			u := int64(in.intn(3))
			sc.RunAsUser = &u
		}
		if in.chance(2) {
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
			if in.chance(2) {
				sc.Capabilities.Add = []corev1.Capability{pickOf[corev1.Capability](in, "NET_BIND_SERVICE", "NET_ADMIN", "SYS_ADMIN")}
			}
		}
		if in.chance(2) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: pickOf(in, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined)}
		}
		if in.chance(8) {
			fill(sc)
		}
		c.SecurityContext = sc
	}
	if in.chance(4) {
		port := int32(pickOf(in, 80, 8080))
		c.Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: pickOf(in, 0, port), Protocol: corev1.ProtocolTCP}}
	}
	if in.chance(6) {
		c.Env = []corev1.EnvVar{{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
	}
	if in.chance(10) {
		fill(&c.Resources)
	}
	return c
}

// fuzzPod is a pod built from the fuzzer's bytes: mostly valid, with the
// fields the plugins look at chosen among interesting values.
func fuzzPod(in *fuzzBytes, fill func(any)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: fuzzNamespace, Labels: map[string]string{"app": "web"}}}
	if in.chance(6) {
		p.Name, p.GenerateName = "", "p-"
	}
	p.Spec.NodeName = pickOf(in, "", "", fuzzNodeA, fuzzNodeB, "node-c")
	if in.chance(5) {
		// A mirror pod, as a kubelet creates for a static pod.
		p.Annotations = map[string]string{mirrorPodAnnotation: "hash"}
		owner := pickOf(in, fuzzNodeA, fuzzNodeB)
		t, f := true, false
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: owner, UID: fuzzNodeUIDs[owner], Controller: &t}
		if in.chance(4) {
			ref.UID = "stale"
		}
		if in.chance(4) {
			ref.BlockOwnerDeletion = &f
		}
		p.OwnerReferences = []metav1.OwnerReference{ref}
	}
	p.Spec.ServiceAccountName = pickOf(in, "", "", "", "default", "builder", "missing")
	if in.chance(4) {
		v := in.chance(2)
		p.Spec.AutomountServiceAccountToken = &v
	}
	p.Spec.PriorityClassName = pickOf(in, "", "", "high", "missing", "system-node-critical", "system-cluster-critical")
	if in.chance(6) {
		v := int32(pickOf(in, 0, 10, 1000, 2000001000))
		p.Spec.Priority = &v
	}
	p.Spec.Containers = []corev1.Container{fuzzContainer(in, "c", fill)}
	if in.chance(3) {
		p.Spec.Containers = append(p.Spec.Containers, fuzzContainer(in, pickOf(in, "d", "d", "d", "c"), fill))
	}
	if in.chance(4) {
		p.Spec.InitContainers = []corev1.Container{fuzzContainer(in, "init", fill)}
	}
	if in.chance(4) {
		p.Spec.HostNetwork = true
	}
	if in.chance(4) {
		p.Spec.Volumes = append(p.Spec.Volumes, pickOf(in,
			corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
			corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
		))
	}
	for range in.intn(3) {
		tol := corev1.Toleration{Key: pickOf(in, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, "", "gpu"),
			Operator: pickOf(in, corev1.TolerationOpExists, corev1.TolerationOpEqual), Effect: pickOf(in, corev1.TaintEffectNoExecute, "", corev1.TaintEffectNoSchedule)}
		if tol.Operator == corev1.TolerationOpEqual && tol.Key == "" {
			tol.Key = "gpu"
		}
		if tol.Effect == corev1.TaintEffectNoExecute && in.chance(2) {
			secs := int64(pickOf(in, 0, 60, 300))
			tol.TolerationSeconds = &secs
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol)
	}
	if in.chance(6) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	}
	if in.chance(4) {
		sc := &corev1.PodSecurityContext{}
		if in.chance(2) {
			v := true
			sc.RunAsNonRoot = &v
		}
		if in.chance(2) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}
		if in.chance(6) {
			fill(sc)
		}
		p.Spec.SecurityContext = sc
	}
	if in.chance(8) {
		p.Spec.RuntimeClassName = func() *string { s := pickOf(in, "runc", "gvisor"); return &s }()
	}
	return p
}

// randfillPod is a pod filled whole by randfill.
func randfillPod(fill func(any)) *corev1.Pod {
	p := &corev1.Pod{}
	fill(p)
	p.Namespace = fuzzNamespace
	p.ResourceVersion = ""
	return p
}

// admissionCase is one request and what the test needs to judge it.
type admissionCase struct {
	attrs *Attributes
	// valid: the request passed the pod strategy's validation before
	// admission (defaulted and prepared as the server does).
	valid bool
	// old is the stored pod of an update, delete or eviction.
	old *corev1.Pod
}

var podsResource = func() *apiresource.Resource {
	for _, r := range registry.All() {
		if r.Name == "pods" {
			return r
		}
	}
	panic("registry serves no pods")
}()

// validAsCreate reports whether p (a copy) passes the server's create path
// without admission.
func validAsCreate(ctx context.Context, p *corev1.Pod) field.ErrorList {
	c := p.DeepCopy()
	podsResource.Strategy.Default(c)
	podsResource.Strategy.PrepareForCreate(ctx, c)
	if c.Name == "" && c.GenerateName != "" {
		c.Name = c.GenerateName + "x"
	}
	return podsResource.Strategy.Validate(ctx, c)
}

func validAsUpdate(ctx context.Context, p, old *corev1.Pod, status bool) field.ErrorList {
	c := p.DeepCopy()
	podsResource.Strategy.Default(c)
	if status {
		podsResource.Status.PrepareForUpdate(ctx, c, old)
		return podsResource.Status.ValidateUpdate(ctx, c, old)
	}
	podsResource.Strategy.PrepareForUpdate(ctx, c, old)
	return podsResource.Strategy.ValidateUpdate(ctx, c, old)
}

var fuzzCodecs = serializer.NewCodecFactory(runtime.NewScheme())

// buildChain builds every plugin with NewPlugins on st, with the service
// account plugin's waits and random volume suffix made deterministic.
func buildChain(t *testing.T, st *memStores) *Chain {
	muts, vals, _, err := NewPlugins(AllPlugins(), st)
	if err != nil {
		t.Fatalf("NewPlugins: %v", err)
	}
	for _, m := range muts {
		if sa, ok := m.(*ServiceAccount); ok {
			sa.retryWait = func() time.Duration { return 0 }
			sa.suffix = func() string { return "fuzz0" }
		}
	}
	return &Chain{Mutators: muts, Validators: vals}
}

func newFuzzStores() *memStores {
	return newMemStores(nsResource, podResource, nodeResource, saResource, limitRangeResource, quotaResource,
		priorityClassResource, runtimeClassResource, mutatingConfigResource, validatingConfigResource)
}

// checkStatus fails unless err is nil or a 4xx Status.
func checkStatus(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		t.Fatalf("%s: refusal is not a Status: %T %v", what, err, err)
	}
	if code := s.Status().Code; code < 400 || code > 499 {
		t.Fatalf("%s: refusal with code %d: %v", what, code, err)
	}
}

func checkAdmission(t *testing.T, data []byte) {
	ctx := context.Background()
	in := &fuzzBytes{data: data}
	op := in.intn(6)
	user := fuzzIdentity(in)
	st := newFuzzStores()
	if err := fuzzCluster(in, st); err != nil {
		t.Fatalf("filling stores: %v", err)
	}
	// randfill draws from the bytes left after the structured decisions.
	var fill func(any)
	fill = func(v any) {
		fuzzer.FuzzerFor(metafuzzer.Funcs, bytesource.New(in.data), fuzzCodecs).NilChance(0.3).NumElements(0, 2).Fill(v)
		in.data = in.data[min(len(in.data), 32):]
	}
	chain := buildChain(t, st)
	var pod *corev1.Pod
	if op == 5 {
		pod = randfillPod(fill)
		op = in.intn(2) // create or update
	} else {
		pod = fuzzPod(in, fill)
	}
	c := admissionCase{}
	podGVR := corev1.SchemeGroupVersion.WithResource("pods")
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	switch op {
	case 0: // create
		c.valid = len(validAsCreate(ctx, pod)) == 0
		c.attrs = &Attributes{Operation: Create, Resource: podGVR, Kind: podGVK, Namespace: pod.Namespace, Name: pod.Name, Object: pod, User: user}
	default: // 1 update, 2 status update, 3 delete, 4 eviction: of a stored pod
		old := fuzzPod(in, fill)
		old.Name, old.GenerateName = "p", ""
		// The stored pod went through the create path with every plugin
		// (as in a cluster that always ran them), or, if that refused it,
		// it was stored before they were enabled: then an update that
		// was valid may still fail (AlwaysPullImages changes the pull
		// policy of an update that brings a new image, and pod updates
		// may not change it), so validity is not promised.
		oldAdmitted := admitCreate(ctx, chain, old)
		old.UID = "uid-p"
		old.CreationTimestamp = metav1.NewTime(time.Unix(1e9, 0))
		if err := st.add(podResource, old); err != nil {
			t.Fatalf("storing the old pod: %v", err)
		}
		if err := st.stores[podResource].Get(ctx, st.ObjectKey(podResource, fuzzNamespace, "p"), storage.GetOptions{}, old); err != nil {
			t.Fatalf("reading the old pod: %v", err)
		}
		c.old = old
		switch op {
		case 1, 2:
			next := old.DeepCopy()
			if in.chance(3) {
				next = pod
				next.Name, next.GenerateName, next.ResourceVersion = "p", "", old.ResourceVersion
			}
			mutatePod(in, next, fill)
			sub := ""
			if op == 2 {
				sub = "status"
			}
			c.valid = oldAdmitted && len(validAsUpdate(ctx, next, old, op == 2)) == 0
			c.attrs = &Attributes{Operation: Update, Resource: podGVR, Kind: podGVK, Subresource: sub, Namespace: fuzzNamespace,
				Name: "p", Object: next, OldObject: old.DeepCopy(), User: user}
		case 3:
			c.valid = true
			c.attrs = &Attributes{Operation: Delete, Resource: podGVR, Kind: podGVK, Namespace: fuzzNamespace, Name: "p",
				OldObject: old.DeepCopy(), User: user}
		case 4:
			c.valid = true
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: fuzzNamespace}}
			c.attrs = &Attributes{Operation: Create, Resource: podGVR, Kind: policyv1.SchemeGroupVersion.WithKind("Eviction"),
				Subresource: "eviction", Namespace: fuzzNamespace, Name: "p", Object: ev, User: user}
		}
	}
	runAdmission(ctx, t, chain, st, c)
}

// admitCreate runs p through the server's create path (defaulting,
// mutating plugins, PrepareForCreate, validation, validating plugins) as
// an administrator and reports whether it was admitted. p ends as the
// path left it: as it would be stored if admitted.
func admitCreate(ctx context.Context, chain *Chain, p *corev1.Pod) bool {
	a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: p.Namespace, Name: p.Name, Object: p,
		User: &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}}
	podsResource.Strategy.Default(p)
	admitted := chain.Admit(ctx, a) == nil
	podsResource.Strategy.PrepareForCreate(ctx, p)
	return admitted && len(podsResource.Strategy.Validate(ctx, p)) == 0 && chain.Validate(ctx, a) == nil
}

// mutatePod changes what an update may change, and sometimes what it may
// not.
func mutatePod(in *fuzzBytes, p *corev1.Pod, fill func(any)) {
	for range in.intn(4) {
		switch in.intn(9) {
		case 0:
			p.Labels = map[string]string{"app": pickOf(in, "web", "db"), "tier": in.string(6)}
		case 1:
			if len(p.Spec.Containers) > 0 {
				p.Spec.Containers[0].Image = pickOf(in, "nginx:2", "", "busybox")
			}
		case 2:
			p.Spec.NodeName = pickOf(in, "", fuzzNodeA, fuzzNodeB)
		case 3:
			p.Spec.Priority = nil
			p.Spec.PreemptionPolicy = nil
		case 4:
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists})
		case 5:
			p.Status.Phase = pickOf(in, corev1.PodRunning, corev1.PodFailed, corev1.PodPhase(in.string(4)))
		case 6:
			p.Annotations = map[string]string{mirrorPodAnnotation: "hash"}
		case 7:
			s := int64(pickOf(in, 1, 30, -1))
			p.Spec.ActiveDeadlineSeconds = &s
		case 8:
			fill(&p.Status)
		}
	}
}

// allowedInvalid: a valid request that admission made invalid in the
// way kube-apiserver's plugins also do. LimitRanger fills in a default
// request or limit without looking at the pod's other value, so a default
// limit below the pod's request (or a default request above its limit)
// makes "must be less than or equal to ... limit" — the API answers 422.
func allowedInvalid(errs field.ErrorList) bool {
	for _, e := range errs {
		if !(e.Type == field.ErrorTypeInvalid && strings.Contains(e.Field, ".resources.requests") &&
			strings.Contains(e.Detail, "must be less than or equal to")) {
			return false
		}
	}
	return true
}

// runAdmission runs c through the chain as the server does and checks the
// properties.
func runAdmission(ctx context.Context, t *testing.T, chain *Chain, st *memStores, c admissionCase) {
	a := c.attrs
	pod, _ := a.Object.(*corev1.Pod)
	old := c.old
	subresourceMain := a.Subresource == ""
	if pod != nil {
		podsResource.Strategy.Default(pod)
	}
	err := chain.Admit(ctx, a)
	checkStatus(t, "mutating admission", err)
	if err != nil {
		return
	}
	// Idempotence: the mutating chain accepts its own output unchanged.
	if pod != nil {
		again := *a
		again.Object = pod.DeepCopy()
		if a.OldObject != nil {
			again.OldObject = a.OldObject.DeepCopyObject()
		}
		if err := chain.Admit(ctx, &again); err != nil {
			t.Fatalf("mutating admission refused its own output: %v\nobject: %+v", err, pod)
		}
		if !apiequality.Semantic.DeepEqual(again.Object, pod) {
			t.Fatalf("mutating admission is not idempotent (-first +second):\n%s", cmp.Diff(pod, again.Object))
		}
	}
	// The server's steps between the two phases, then validation.
	var errs field.ErrorList
	if pod != nil {
		switch {
		case a.Operation == Create:
			pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
			podsResource.Strategy.PrepareForCreate(ctx, pod)
			pod.UID = "uid-new"
			pod.CreationTimestamp = metav1.NewTime(time.Unix(1e9, 0))
			if pod.Name == "" && pod.GenerateName != "" {
				pod.Name = pod.GenerateName + "x"
				a.Name = pod.Name
			}
			errs = podsResource.Strategy.Validate(ctx, pod)
		case subresourceMain:
			podsResource.Strategy.PrepareForUpdate(ctx, pod, old)
			errs = podsResource.Strategy.ValidateUpdate(ctx, pod, old)
		default:
			podsResource.Status.PrepareForUpdate(ctx, pod, old)
			errs = podsResource.Status.ValidateUpdate(ctx, pod, old)
		}
	}
	if len(errs) > 0 {
		if c.valid && !allowedInvalid(errs) {
			t.Fatalf("a valid %s %s became invalid in mutating admission: %v\nobject: %+v", a.Operation, a.Subresource, errs.ToAggregate(), pod)
		}
		return
	}
	err = chain.Validate(ctx, a)
	checkStatus(t, "validating admission", err)
	if err != nil {
		return
	}
	if err := nodeViolation(a, old); err != nil {
		t.Fatal(err)
	}
}

// nodeViolation is NodeRestriction's promise on an admitted request: a
// node identity only gets pods bound to itself created, status-updated,
// deleted or evicted, and never updates a pod's spec. It returns the
// broken promise, or nil.
func nodeViolation(a *Attributes, old *corev1.Pod) error {
	node, isNode := nodeOfIdentity(a.User)
	if !isNode {
		return nil
	}
	bound := ""
	switch {
	case a.Operation == Create && a.Subresource == "":
		bound = a.Object.(*corev1.Pod).Spec.NodeName
	case a.Operation == Update && a.Subresource == "":
		return fmt.Errorf("node %q updated the spec of a pod bound to %q", node, old.Spec.NodeName)
	default:
		bound = old.Spec.NodeName
	}
	if node == "" || bound != node {
		return fmt.Errorf("node %q admitted to %s %s a pod bound to %q", node, a.Operation, a.Subresource, bound)
	}
	return nil
}

// TestFuzzAdmissionNodeOracle checks the NodeRestriction property can
// fail: without NodeRestriction a node's create of a pod bound to another
// node is admitted and nodeViolation reports it; with every plugin the
// same request is refused with a 403.
func TestFuzzAdmissionNodeOracle(t *testing.T) {
	ctx := context.Background()
	newRequest := func() *Attributes {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: fuzzNamespace},
			Spec: corev1.PodSpec{NodeName: fuzzNodeB, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		user := &request.User{Name: "system:node:" + fuzzNodeA, Groups: []string{"system:nodes"}}
		return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
			Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: fuzzNamespace, Name: "p", Object: pod, User: user}
	}
	st := newFuzzStores()
	if err := st.add(nsResource, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzNamespace}}); err != nil {
		t.Fatal(err)
	}
	if err := st.add(saResource, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fuzzNamespace}}); err != nil {
		t.Fatal(err)
	}
	muts, vals, _, err := NewPlugins(DefaultPlugins(), st)
	if err != nil {
		t.Fatal(err)
	}
	a := newRequest()
	without := &Chain{Mutators: muts, Validators: vals}
	if err := without.Admit(ctx, a); err != nil {
		t.Fatalf("without NodeRestriction: %v", err)
	}
	if err := without.Validate(ctx, a); err != nil {
		t.Fatalf("without NodeRestriction: %v", err)
	}
	if nodeViolation(a, nil) == nil {
		t.Fatal("nodeViolation did not report a node's pod bound to another node")
	}
	if err := buildChain(t, st).Admit(ctx, newRequest()); !apierrors.IsForbidden(err) {
		t.Fatalf("node %s creating a pod bound to %s: want 403, got %v", fuzzNodeA, fuzzNodeB, err)
	}
}
