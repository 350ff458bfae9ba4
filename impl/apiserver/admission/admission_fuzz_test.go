package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
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
// accounts, a LimitRange, a ResourceQuota, PriorityClasses, nodes, and
// the RuntimeClasses pods name, each created or not on first use, with or
// without overhead and scheduling), in the
// API server's order: defaulting, the mutating plugins, PrepareFor*, the
// pod strategy's validation, the validating plugins. Pods are either
// structure-aware (built from the fuzzer's bytes, mostly valid, with
// randfill-filled security contexts and resources now and then, and
// spec.os, hostUsers, host namespaces, dnsConfig, security context
// fields, fileKeyRef env and projected podCertificate and
// clusterTrustBundle sources chosen among valid and invalid values:
// fuzzPodSecurityFields) or filled
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
//     eviction;
//   - RuntimeClass, exactly as kube-apiserver's plugin: a pod create naming
//     a missing class, with an overhead other than its class's, or with a
//     node selector conflicting with its class's is refused (403, upstream's
//     message) unless another plugin refuses it first; an admitted one ends
//     with the class's overhead (none without a class that defines one),
//     its node selector merged with the class's, and tolerations that
//     tolerate every taint the pod's or the class's did, for as long
//     (runtimeClassCase).
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
	// TokenRequests bound to the stored pod (first byte 10: op 4, token),
	// by an administrator, node-a and node-b.
	{10, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0},
	{10, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
	{10, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	// Tokens node-a and node-b get for their own pods, and one refused
	// for an audience ("") the pod's volumes do not use.
	append([]byte{10, 3}, bytes.Repeat([]byte{7}, 200)...),
	append([]byte{10, 4}, bytes.Repeat([]byte{48}, 200)...),
	append([]byte{10, 3}, bytes.Repeat([]byte{1, 7}, 100)...),
	// Resizes of a pod whose containers run, long enough for runningStatus
	// to be decided (their resources reported, or not).
	append([]byte{7, 1}, bytes.Repeat([]byte{1}, 200)...),
	append([]byte{7, 1}, bytes.Repeat([]byte{2}, 200)...),
	append([]byte{7, 1}, bytes.Repeat([]byte{4}, 200)...),
	append([]byte{7, 1}, bytes.Repeat([]byte{5}, 200)...),
	// pods/resize updates (first byte 7: op 1, resize), by an
	// administrator and by nodes, with quotas and limit ranges.
	{7, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9},
	{7, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
	{19, 1, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
	{7, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
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
		// Its status as the quota controller writes it, nothing used yet
		// (admission judges status alone).
		used := corev1.ResourceList{}
		for n := range hard {
			used[n] = resource.MustParse("0")
		}
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: fuzzNamespace},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: used}}
		if err := st.add(quotaResource, q); err != nil {
			return err
		}
	}
	if err := st.add(priorityClassResource, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}); err != nil {
		return err
	}
	// The system classes, which the API server stores at start (the
	// plugin knows them from the store only). No input byte read: the
	// seeds keep their meaning.
	for _, sys := range []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000},
	} {
		if err := st.add(priorityClassResource, &sys); err != nil {
			return err
		}
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
func fuzzPod(in *fuzzBytes, fill func(any), classes *fuzzRuntimeClasses) *corev1.Pod {
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
		// Every decision about the class and the fields it sets is taken
		// here, so pods naming none read the same bytes as before classes
		// were created.
		name, rc := classes.pick(in)
		p.Spec.RuntimeClassName = &name
		if in.chance(3) {
			p.Spec.NodeSelector = pickOf(in, map[string]string{"sandbox": "gvisor"}, map[string]string{"disk": "ssd"},
				map[string]string{"disk": "hdd", "zone": "a"}, map[string]string{})
		}
		if in.chance(4) {
			// An overhead set by the client: the class's own (admitted)
			// or another (refused).
			if rc != nil && rc.Overhead != nil && in.chance(2) {
				p.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
			} else {
				p.Spec.Overhead = fuzzResourceList(in)
			}
		}
	}
	if in.chance(3) {
		// Decided after everything else, so the bytes of the decisions
		// above mean what they did before these fields were fuzzed.
		fuzzPodSecurityFields(in, p)
	}
	return p
}

// fuzzPodSecurityFields sets the fields validation checks as upstream's
// validateOS, validateHostUsers, validatePodDNSConfig, the security
// context checks, fileKeyRef env and projected podCertificate and
// clusterTrustBundle sources, to valid and invalid values; PodSecurity,
// NodeRestriction and ServiceAccount read several of them.
func fuzzPodSecurityFields(in *fuzzBytes, p *corev1.Pod) {
	bp := func(v bool) *bool { return &v }
	s := &p.Spec
	if in.chance(2) {
		s.OS = &corev1.PodOS{Name: pickOf[corev1.OSName](in, corev1.Linux, corev1.Windows, corev1.Linux, "", "plan9")}
	}
	if in.chance(2) {
		s.HostUsers = bp(in.chance(2))
	}
	if in.chance(4) {
		s.HostPID = true
	}
	if in.chance(4) {
		s.HostIPC = true
	}
	if in.chance(6) {
		s.ShareProcessNamespace = bp(in.chance(2))
	}
	if in.chance(3) {
		s.DNSPolicy = pickOf(in, corev1.DNSNone, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSClusterFirstWithHostNet, "")
		if in.chance(2) {
			ndots := pickOf(in, "2", "")
			s.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: pickOf(in, []string{"10.0.0.10"}, []string{"010.0.0.1", "::ffff:1.2.3.4"}, nil, []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "1.0.0.1"}, []string{"not-an-ip"}),
				Searches:    pickOf(in, []string{"ns.svc.cluster.local"}, []string{"."}, []string{"_srv.example.com."}, nil, []string{"bad..domain"}),
				Options:     pickOf(in, []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}, []corev1.PodDNSConfigOption{{Name: ""}}, nil),
			}
		}
	}
	if in.chance(2) {
		sc := s.SecurityContext
		if sc == nil {
			sc = &corev1.PodSecurityContext{}
			s.SecurityContext = sc
		}
		if in.chance(2) {
			sc.Sysctls = []corev1.Sysctl{{Name: pickOf(in, "kernel.shm_rmid_forced", "net.core.somaxconn", "kernel.msgmax", "net/ipv4/ip_local_port_range", "", "Bad_Name"), Value: "1"}}
		}
		if in.chance(3) {
			v := pickOf(in, corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways, "Sometimes")
			sc.FSGroupChangePolicy = &v
		}
		if in.chance(3) {
			v := pickOf(in, corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict, "Loose")
			sc.SupplementalGroupsPolicy = &v
		}
		if in.chance(3) {
			v := pickOf(in, corev1.SELinuxChangePolicyRecursive, corev1.SELinuxChangePolicyMountOption, "")
			sc.SELinuxChangePolicy = &v
		}
		if in.chance(3) {
			sc.AppArmorProfile = fuzzAppArmor(in)
		}
		if in.chance(4) {
			sc.WindowsOptions = fuzzWindowsOptions(in)
		}
		if in.chance(3) {
			sc.SeccompProfile = fuzzSeccomp(in)
		}
	}
	for i := range s.Containers {
		if !in.chance(2) {
			continue
		}
		c := &s.Containers[i]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		sc := c.SecurityContext
		if in.chance(2) {
			v := pickOf(in, corev1.DefaultProcMount, corev1.UnmaskedProcMount, "Masked")
			sc.ProcMount = &v
		}
		if in.chance(3) {
			sc.AppArmorProfile = fuzzAppArmor(in)
		}
		if in.chance(3) {
			sc.SeccompProfile = fuzzSeccomp(in)
		}
		if in.chance(4) {
			sc.WindowsOptions = fuzzWindowsOptions(in)
		}
		if in.chance(4) {
			sc.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{pickOf[corev1.Capability](in, "CAP_SYS_ADMIN", "SYS_ADMIN", "NET_RAW")}}
			sc.AllowPrivilegeEscalation = bp(in.chance(2))
		}
		if in.chance(3) {
			// An env var read from a file in an emptyDir volume (or a
			// volume the pod lacks).
			c.Env = append(c.Env, corev1.EnvVar{Name: pickOf(in, "FROM_FILE", "1BAD", ""), ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
				VolumeName: pickOf(in, "files", "files", "nope"), Path: pickOf(in, "env.txt", "../up", "/abs", ""),
				Key: pickOf(in, "KEY", "1bad", ""), Optional: pickOf(in, (*bool)(nil), bp(true), bp(false))}}})
			if !slices.ContainsFunc(s.Volumes, func(v corev1.Volume) bool { return v.Name == "files" }) {
				s.Volumes = append(s.Volumes, corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
		}
		if in.chance(6) {
			// A block device: refused beside hostUsers false.
			c.VolumeDevices = append(c.VolumeDevices, corev1.VolumeDevice{Name: "block", DevicePath: "/dev/xvdb"})
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "block", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}})
		}
	}
	if in.chance(2) {
		// A projected volume of certificate sources, mounted or not.
		var sources []corev1.VolumeProjection
		for range 1 + in.intn(2) {
			if in.chance(2) {
				exp := pickOf(in, int32(0), 3600, 86400, 86401, 7862400, 7862401)
				src := &corev1.PodCertificateProjection{
					SignerName:           pickOf(in, "example.com/signer", "kubernetes.io/kube-apiserver-client-pod", "bad", "", "a.b/c.d/e"),
					KeyType:              pickOf(in, "ED25519", "ECDSAP256", "RSA3072", "DSA", ""),
					CredentialBundlePath: pickOf(in, "cred.pem", "", "../cred.pem", "/cred.pem"),
					KeyPath:              pickOf(in, "", "key.pem", "cred.pem"),
					CertificateChainPath: pickOf(in, "", "chain.pem"),
				}
				if exp != 0 {
					src.MaxExpirationSeconds = &exp
				}
				if in.chance(3) {
					src.UserAnnotations = pickOf(in, map[string]string{"example.com/team": "a"}, map[string]string{"NoDomain": "b"})
				}
				sources = append(sources, corev1.VolumeProjection{PodCertificate: src})
			} else {
				name, signer := pickOf(in, "bundle", "example.com:signer:bundle", "example.com:other:bundle", "", "Bad"), pickOf(in, "example.com/signer", "", "bad")
				src := &corev1.ClusterTrustBundleProjection{Path: pickOf(in, "ca.pem", "", "../ca.pem", "cred.pem")}
				switch in.intn(4) {
				case 0:
					src.Name = &name
				case 1:
					src.SignerName = &signer
					if in.chance(2) {
						src.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": pickOf(in, "web", "-bad")}}
					}
				case 2:
					src.Name, src.SignerName = &name, &signer
				}
				if in.chance(3) {
					src.Optional = bp(in.chance(2))
				}
				sources = append(sources, corev1.VolumeProjection{ClusterTrustBundle: src})
			}
		}
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
		if in.chance(2) && len(s.Containers) > 0 {
			s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "certs", MountPath: "/var/run/certs", ReadOnly: true})
		}
	}
}

func fuzzAppArmor(in *fuzzBytes) *corev1.AppArmorProfile {
	ap := &corev1.AppArmorProfile{Type: pickOf(in, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost, "")}
	if in.chance(2) {
		prof := pickOf(in, "k8s-profile", "", " padded ", strings.Repeat("a", 4096))
		ap.LocalhostProfile = &prof
	}
	return ap
}

func fuzzSeccomp(in *fuzzBytes) *corev1.SeccompProfile {
	sp := &corev1.SeccompProfile{Type: pickOf(in, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost, "")}
	if in.chance(2) {
		prof := pickOf(in, "profiles/audit.json", "", "../escape.json", "/abs.json")
		sp.LocalhostProfile = &prof
	}
	return sp
}

func fuzzWindowsOptions(in *fuzzBytes) *corev1.WindowsSecurityContextOptions {
	w := &corev1.WindowsSecurityContextOptions{}
	if in.chance(2) {
		u := pickOf(in, "ContainerUser", `NT AUTHORITY\NETWORK SERVICE`, "bad/user", "", `.dom\u`)
		w.RunAsUserName = &u
	}
	if in.chance(2) {
		w.HostProcess = pickOf(in, (*bool)(nil), func() *bool { v := true; return &v }(), func() *bool { v := false; return &v }())
	}
	if in.chance(3) {
		n := pickOf(in, "gmsa", "Bad_Name")
		w.GMSACredentialSpecName = &n
	}
	return w
}

// randfillPod is a pod filled whole by randfill; a RuntimeClass name it
// got is now and then replaced by one the cluster may hold.
func randfillPod(in *fuzzBytes, fill func(any), classes *fuzzRuntimeClasses) *corev1.Pod {
	p := &corev1.Pod{}
	fill(p)
	p.Namespace = fuzzNamespace
	p.ResourceVersion = ""
	if p.Spec.RuntimeClassName != nil && in.chance(2) {
		name, _ := classes.pick(in)
		p.Spec.RuntimeClassName = &name
	}
	return p
}

// fuzzRuntimeClassNames are the RuntimeClasses fuzzed pods name. The last
// never exists; whether each other one exists, and what it holds, is
// decided from the fuzzer's bytes the first time a pod names it.
var fuzzRuntimeClassNames = []string{"runc", "gvisor", "kata", "missing"}

// fuzzRuntimeClasses creates the RuntimeClasses pods name, on first use.
type fuzzRuntimeClasses struct {
	t       *testing.T
	st      *memStores
	decided map[string]*nodev1.RuntimeClass
}

// pick chooses a class name and returns it with the class (nil when the
// cluster does not hold it).
func (c *fuzzRuntimeClasses) pick(in *fuzzBytes) (string, *nodev1.RuntimeClass) {
	name := pickOf(in, fuzzRuntimeClassNames...)
	if rc, ok := c.decided[name]; ok {
		return name, rc
	}
	var rc *nodev1.RuntimeClass
	if name != "missing" && !in.chance(5) {
		rc = fuzzRuntimeClass(in, name)
		// Stored as the API would: only a class its validation accepts.
		if errs := runtimeClassesResource.Strategy.Validate(context.Background(), rc); len(errs) > 0 {
			c.t.Fatalf("harness built an invalid RuntimeClass: %v", errs.ToAggregate())
		}
		if err := c.st.add(runtimeClassResource, rc); err != nil {
			c.t.Fatalf("storing RuntimeClass %s: %v", name, err)
		}
	}
	if c.decided == nil {
		c.decided = map[string]*nodev1.RuntimeClass{}
	}
	c.decided[name] = rc
	return name, rc
}

// fuzzRuntimeClass is a valid class: the handler of its name, sometimes
// an overhead (possibly empty), sometimes scheduling (a node selector that
// may conflict with a pod's, tolerations that may overlap the pod's and
// DefaultTolerationSeconds').
func fuzzRuntimeClass(in *fuzzBytes, name string) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: name}
	if in.chance(2) {
		rc.Overhead = &nodev1.Overhead{PodFixed: fuzzResourceList(in)}
	}
	if in.chance(2) {
		s := &nodev1.Scheduling{NodeSelector: pickOf(in, nil, map[string]string{"sandbox": name},
			map[string]string{"disk": "ssd", "sandbox": name})}
		sixty := int64(60)
		for _, tol := range []corev1.Toleration{
			{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: name, Effect: corev1.TaintEffectNoSchedule},
			{Key: "sandbox", Operator: corev1.TolerationOpExists},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &sixty},
			{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Operator: corev1.TolerationOpExists},
		} {
			if in.chance(3) {
				s.Tolerations = append(s.Tolerations, tol)
			}
		}
		rc.Scheduling = s
	}
	return rc
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

var podsResource, runtimeClassesResource = servedResource("pods"), servedResource("runtimeclasses")

func servedResource(name string) *apiresource.Resource {
	for _, r := range registry.All() {
		if r.Name == name {
			return r
		}
	}
	panic("registry serves no " + name)
}

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

// validAsResize reports whether p (a copy) passes the server's pods/resize
// update path without admission.
func validAsResize(ctx context.Context, p, old *corev1.Pod) field.ErrorList {
	c := p.DeepCopy()
	podsResource.Strategy.Default(c)
	podsResource.Resize.PrepareForUpdate(ctx, c, old)
	return podsResource.Resize.ValidateUpdate(ctx, c, old)
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
	// An update (op 1) is of pods/resize when the first byte / 6 is odd
	// (the seeds' and most kept inputs' meaning is unchanged).
	resize := len(data) > 0 && data[0]%6 == 1 && data[0]/6%2 == 1
	// Likewise an eviction (op 4) is a TokenRequest for a service account
	// bound to the stored pod (serviceaccounts/token, as kubelets make).
	token := len(data) > 0 && data[0]%6 == 4 && data[0]/6%2 == 1
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
	classes := &fuzzRuntimeClasses{t: t, st: st}
	var pod *corev1.Pod
	if op == 5 {
		pod = randfillPod(in, fill, classes)
		op = in.intn(2) // create or update
	} else {
		pod = fuzzPod(in, fill, classes)
	}
	c := admissionCase{}
	podGVR := corev1.SchemeGroupVersion.WithResource("pods")
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	switch op {
	case 0: // create
		c.valid = len(validAsCreate(ctx, pod)) == 0
		c.attrs = &Attributes{Operation: Create, Resource: podGVR, Kind: podGVK, Namespace: pod.Namespace, Name: pod.Name, Object: pod, User: user}
	default: // 1 update, 2 status update, 3 delete, 4 eviction: of a stored pod
		old := fuzzPod(in, fill, classes)
		old.Name, old.GenerateName = "p", ""
		// The stored pod went through the create path with every plugin
		// (as in a cluster that always ran them), or, if that refused it,
		// it was stored before they were enabled: then an update that
		// was valid may still fail (AlwaysPullImages changes the pull
		// policy of an update that brings a new image, and pod updates
		// may not change it), so validity is not promised.
		oldAdmitted := admitCreate(ctx, chain, old)
		if token && in.chance(2) {
			// A projected token for an audience, which a node may ask for.
			old.Spec.Volumes = append(old.Spec.Volumes, corev1.Volume{Name: "vault-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}}}}})
		}
		if node, ok := nodeOfIdentity(user); ok && token && in.chance(2) {
			// Bound (by the scheduler, after its create) to the node
			// asking: otherwise a node's token is seldom for its own pod.
			old.Spec.NodeName = node
		}
		if resize {
			// Its containers running, their resources reported by the
			// node or not (a node without resize support), or pending.
			runningStatus(in, old)
		}
		old.UID = "uid-p"
		old.CreationTimestamp = metav1.NewTime(time.Unix(1e9, 0))
		if err := st.add(podResource, old); err != nil {
			t.Fatalf("storing the old pod: %v", err)
		}
		if err := st.stores[podResource].Get(ctx, st.ObjectKey(podResource, fuzzNamespace, "p"), storage.GetOptions{}, old); err != nil {
			t.Fatalf("reading the old pod: %v", err)
		}
		c.old = old
		switch {
		case op == 1 && resize:
			next := old.DeepCopy()
			if in.chance(4) {
				next = pod
				next.Name, next.GenerateName, next.ResourceVersion = "p", "", old.ResourceVersion
			}
			resizePod(in, next, fill)
			c.valid = oldAdmitted && len(validAsResize(ctx, next, old)) == 0
			c.attrs = &Attributes{Operation: Update, Resource: podGVR, Kind: podGVK, Subresource: "resize", Namespace: fuzzNamespace,
				Name: "p", Object: next, OldObject: old.DeepCopy(), User: user}
		case op == 1, op == 2:
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
		case op == 3:
			c.valid = true
			c.attrs = &Attributes{Operation: Delete, Resource: podGVR, Kind: podGVK, Namespace: fuzzNamespace, Name: "p",
				OldObject: old.DeepCopy(), User: user}
		case op == 4 && token:
			c.valid = true
			tr := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fuzzNamespace}}
			tr.Name = pickOf(in, "default", "builder", old.Spec.ServiceAccountName)
			for range in.intn(3) {
				tr.Spec.Audiences = append(tr.Spec.Audiences, pickOf(in, "", "vault", "https://kubernetes.default.svc", in.string(6)))
			}
			if !in.chance(8) {
				ref := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: old.UID}
				switch in.intn(8) {
				case 1:
					ref.UID = "uid-other"
				case 2:
					ref.UID = ""
				case 3:
					ref.Kind = "Secret"
				case 4:
					ref.APIVersion = ""
				case 5:
					ref.Name = pickOf(in, "", "missing")
				}
				tr.Spec.BoundObjectRef = ref
			}
			if in.chance(2) {
				secs := int64(pickOf(in, 600, 3607, 1<<32, 0))
				tr.Spec.ExpirationSeconds = &secs
			}
			c.attrs = &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
				Kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), Subresource: "token", Namespace: fuzzNamespace,
				Name: tr.Name, Object: tr, User: user}
		case op == 4:
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

// runningStatus now and then makes p's containers running (as its node's
// kubelet reports them), with their resources reported (a node that
// supports resize) or without (one that does not: upstream refuses the
// resize); else p stays pending.
func runningStatus(in *fuzzBytes, p *corev1.Pod) {
	switch st := in.intn(3); st {
	case 1, 2:
		reported := st == 1
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			s := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
			if reported {
				s.Resources = c.Resources.DeepCopy()
				s.AllocatedResources = c.Resources.Requests.DeepCopy()
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
		}
	}
}

// resizePod changes what a pods/resize update takes (the containers'
// requests and limits, their resize policies) and now and then what it
// does not (the image, the containers' other resources).
func resizePod(in *fuzzBytes, p *corev1.Pod, fill func(any)) {
	for range 1 + in.intn(3) {
		cs := p.Spec.Containers
		if len(p.Spec.InitContainers) > 0 && in.chance(4) {
			cs = p.Spec.InitContainers
		}
		if len(cs) == 0 {
			return
		}
		c := &cs[in.intn(len(cs))]
		r := &c.Resources
		set := func(l *corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
			if *l == nil {
				*l = corev1.ResourceList{}
			}
			(*l)[n] = q
		}
		switch in.intn(10) {
		case 0:
			*r = fuzzResources(in)
		case 1:
			set(&r.Requests, corev1.ResourceCPU, fuzzQuantity(in, false))
		case 2:
			set(&r.Requests, corev1.ResourceMemory, fuzzQuantity(in, true))
		case 3:
			set(&r.Limits, pickOf(in, corev1.ResourceCPU, corev1.ResourceMemory), fuzzQuantity(in, in.chance(2)))
		case 4:
			delete(r.Requests, pickOf(in, corev1.ResourceCPU, corev1.ResourceMemory))
			delete(r.Limits, pickOf(in, corev1.ResourceCPU, corev1.ResourceMemory))
		case 5:
			r.Limits = r.Requests.DeepCopy()
		case 6:
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: pickOf(in, corev1.ResourceCPU, corev1.ResourceMemory, "ephemeral-storage"),
				RestartPolicy: pickOf(in, corev1.NotRequired, corev1.RestartContainer, "Never")}}
		case 7:
			set(&r.Requests, corev1.ResourceEphemeralStorage, resource.MustParse("1Gi"))
		case 8:
			c.Image = pickOf(in, "nginx:2", "busybox")
		default:
			fill(r)
		}
	}
}

// fuzzQuota is the namespace's quota as stored, or nil.
func fuzzQuota(ctx context.Context, t *testing.T, st *memStores) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{}
	if err := st.stores[quotaResource].Get(ctx, st.ObjectKey(quotaResource, fuzzNamespace, "quota"), storage.GetOptions{IgnoreNotFound: true}, q); err != nil {
		t.Fatalf("reading the quota: %v", err)
	}
	if q.Name == "" {
		return nil
	}
	return q
}

// quotaViolation is ResourceQuota's promise: no request raises a
// resource's used above its hard limit (a charge that would is refused;
// usage already above it may stay, as upstream allows writes that do not
// raise it). It returns the broken promise, or nil.
func quotaViolation(before, after *corev1.ResourceQuota) error {
	if before == nil || after == nil {
		return nil
	}
	for n, hard := range after.Status.Hard {
		used := after.Status.Used[n]
		prev := before.Status.Used[n]
		if used.Cmp(hard) > 0 && used.Cmp(prev) > 0 {
			return fmt.Errorf("quota used %s went from %s to %s, above its hard %s", n, prev.String(), used.String(), hard.String())
		}
	}
	return nil
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
	// The RuntimeClass plugin's expected outcome, from the pod as sent.
	var rc *runtimeClassCase
	if pod != nil && a.Operation == Create && subresourceMain {
		rc = newRuntimeClassCase(ctx, t, st, pod, c.valid)
	}
	quotaBefore := fuzzQuota(ctx, t, st)
	defer func() {
		if v := quotaViolation(quotaBefore, fuzzQuota(ctx, t, st)); v != nil && !t.Failed() {
			t.Fatalf("%s %s: %v", a.Operation, a.Subresource, v)
		}
	}()
	err := chain.Admit(ctx, a)
	checkStatus(t, "mutating admission", err)
	if rc != nil {
		if v := rc.admitViolation(err, pod); v != nil {
			t.Fatal(v)
		}
	}
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
		case a.Subresource == "resize":
			podsResource.Resize.PrepareForUpdate(ctx, pod, old)
			errs = podsResource.Resize.ValidateUpdate(ctx, pod, old)
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
	if rc != nil {
		if v := rc.validateViolation(err, pod); v != nil {
			t.Fatal(v)
		}
	}
	if err != nil {
		return
	}
	if err := nodeViolation(a, old); err != nil {
		t.Fatal(err)
	}
}

// runtimeClassCase is what kube-apiserver's RuntimeClass plugin does with
// one pod create, worked out by the test from the pod as sent (after
// defaulting; no plugin before RuntimeClass touches the overhead or the
// node selector) and the class it names.
type runtimeClassCase struct {
	before *corev1.Pod
	// name is the class the pod names ("" for none); class is it, nil
	// when the cluster does not hold it.
	name  string
	class *nodev1.RuntimeClass
	// refusals are the messages one of which the mutating phase must
	// refuse the pod with (after `pods "<name>" is forbidden: `); none
	// when it must admit it. A node selector conflicting with the class's
	// on several keys may be reported for any of them (upstream walks a
	// map).
	refusals []string
	// checkTolerations: the pod was valid as sent, so its tolerations and
	// the class's mean what the API documents.
	checkTolerations bool
}

const (
	rcOverheadMismatch = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
	rcOverheadNoClass  = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
)

func newRuntimeClassCase(ctx context.Context, t *testing.T, st *memStores, pod *corev1.Pod, valid bool) *runtimeClassCase {
	c := &runtimeClassCase{before: pod.DeepCopy(), checkTolerations: valid}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		// No class ("" is validation's 422, before the validating phase).
		return c
	}
	c.name = *pod.Spec.RuntimeClassName
	rc := &nodev1.RuntimeClass{}
	err := st.stores[runtimeClassResource].Get(ctx, st.ObjectKey(runtimeClassResource, "", c.name), storage.GetOptions{}, rc)
	switch {
	case storage.IsNotFound(err):
		c.refusals = []string{fmt.Sprintf("pod rejected: RuntimeClass %q not found", c.name)}
		return c
	case err != nil:
		t.Fatalf("reading RuntimeClass %q: %v", c.name, err)
	}
	c.class = rc
	if rc.Overhead != nil && pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
		c.refusals = []string{rcOverheadMismatch}
		return c
	}
	if rc.Scheduling != nil && pod.Spec.NodeSelector != nil {
		for k, v := range rc.Scheduling.NodeSelector {
			if pv, ok := pod.Spec.NodeSelector[k]; ok && pv != v {
				c.refusals = append(c.refusals, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
		}
	}
	return c
}

// isRuntimeClassRefusal reports whether msg is one of the RuntimeClass
// plugin's refusals (other plugins may refuse the pod first).
func isRuntimeClassRefusal(msg string) bool {
	return strings.Contains(msg, "pod rejected: RuntimeClass ") || strings.Contains(msg, "conflict: runtimeClass.") ||
		strings.Contains(msg, rcOverheadMismatch) || strings.Contains(msg, rcOverheadNoClass)
}

// refusalViolation checks a refusal by the RuntimeClass plugin: a 403
// Forbidden with one of the messages in want.
func refusalViolation(phase string, err error, want []string) error {
	var s apierrors.APIStatus
	if !errors.As(err, &s) || !isRuntimeClassRefusal(s.Status().Message) {
		return nil // another plugin's refusal (checkStatus judged it)
	}
	st := s.Status()
	for _, w := range want {
		if st.Code == 403 && st.Reason == metav1.StatusReasonForbidden && strings.HasPrefix(st.Message, `pods "`) &&
			strings.HasSuffix(st.Message, `" is forbidden: `+w) {
			return nil
		}
	}
	return fmt.Errorf("%s: RuntimeClass refusal %d %s %q, want a 403 Forbidden with one of %q", phase, st.Code, st.Reason, st.Message, want)
}

// admitViolation checks the mutating phase's outcome (err) and the pod it
// left (after).
func (c *runtimeClassCase) admitViolation(err error, after *corev1.Pod) error {
	if err != nil {
		return refusalViolation("mutating admission", err, c.refusals)
	}
	if len(c.refusals) > 0 {
		return fmt.Errorf("mutating admission admitted a pod naming RuntimeClass %q, want the refusal %q", c.name, c.refusals)
	}
	want := c.before.Spec.Overhead
	if c.class != nil && c.class.Overhead != nil {
		want = c.class.Overhead.PodFixed
	}
	if !apiequality.Semantic.DeepEqual(after.Spec.Overhead, want) {
		return fmt.Errorf("RuntimeClass %q: overhead %v after mutating admission, want %v", c.name, after.Spec.Overhead, want)
	}
	if c.class == nil || c.class.Scheduling == nil {
		if !apiequality.Semantic.DeepEqual(after.Spec.NodeSelector, c.before.Spec.NodeSelector) {
			return fmt.Errorf("RuntimeClass %q without scheduling: node selector %v became %v", c.name, c.before.Spec.NodeSelector, after.Spec.NodeSelector)
		}
		return nil
	}
	s := c.class.Scheduling
	selector := map[string]string{}
	for k, v := range c.before.Spec.NodeSelector {
		selector[k] = v
	}
	for k, v := range s.NodeSelector {
		selector[k] = v
	}
	if !apiequality.Semantic.DeepEqual(after.Spec.NodeSelector, selector) {
		return fmt.Errorf("RuntimeClass %q: node selector %v after mutating admission, want the pod's %v with the class's %v",
			c.name, after.Spec.NodeSelector, c.before.Spec.NodeSelector, s.NodeSelector)
	}
	if !c.checkTolerations {
		return nil
	}
	return tolerationsViolation(c.before.Spec.Tolerations, s.Tolerations, after.Spec.Tolerations)
}

// validateViolation checks the validating phase's outcome: a pod admitted
// carries the class's overhead, or none when the class defines none.
func (c *runtimeClassCase) validateViolation(err error, after *corev1.Pod) error {
	var want []string
	withOverhead := c.class != nil && c.class.Overhead != nil
	switch {
	case withOverhead && !apiequality.Semantic.DeepEqual(c.class.Overhead.PodFixed, after.Spec.Overhead):
		want = []string{rcOverheadMismatch}
	case !withOverhead && after.Spec.Overhead != nil:
		want = []string{rcOverheadNoClass}
	}
	if err != nil {
		return refusalViolation("validating admission", err, want)
	}
	if len(want) > 0 {
		return fmt.Errorf("validating admission admitted a pod with overhead %v naming RuntimeClass %q (%+v), want the refusal %q",
			after.Spec.Overhead, c.name, c.class, want)
	}
	return nil
}

// tolerationsViolation checks the merge of a pod's tolerations with its
// RuntimeClass's: every taint one of them tolerates (for as long, for
// NoExecute) is still tolerated, and every toleration the pod ends with
// is the pod's, the class's or one DefaultTolerationSeconds adds.
func tolerationsViolation(pod, class, after []corev1.Toleration) error {
	for _, got := range after {
		if !slices.ContainsFunc(append(slices.Clip(pod), class...), func(t corev1.Toleration) bool { return apiequality.Semantic.DeepEqual(t, got) }) &&
			!isDefaultToleration(got) {
			return fmt.Errorf("toleration %+v after mutating admission is neither the pod's %+v nor the RuntimeClass's %+v", got, pod, class)
		}
	}
	keys := []string{"other"}
	values := []string{"", "other"}
	for _, t := range slices.Concat(pod, class, after) {
		keys = append(keys, t.Key)
		values = append(values, t.Value)
	}
	for _, want := range slices.Concat(pod, class) {
		for _, key := range keys {
			for _, value := range values {
				for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute} {
					taint := corev1.Taint{Key: key, Value: value, Effect: effect}
					if key == "" || !tolerates(want, taint) {
						continue
					}
					if !slices.ContainsFunc(after, func(t corev1.Toleration) bool {
						return tolerates(t, taint) && (effect != corev1.TaintEffectNoExecute || toleratesFor(t) >= toleratesFor(want))
					}) {
						return fmt.Errorf("taint %+v tolerated by %+v (pod %+v, RuntimeClass %+v) is not tolerated as long after mutating admission: %+v",
							taint, want, pod, class, after)
					}
				}
			}
		}
	}
	return nil
}

// tolerates is the API's documented matching of a toleration and a taint
// (written out as the test's oracle): an empty effect matches every
// effect, an empty key every key; Exists matches any value, Equal (or no
// operator) the toleration's value.
func tolerates(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return t.Value == taint.Value
	}
	return false
}

// toleratesFor is how long t tolerates a NoExecute taint it matches.
func toleratesFor(t corev1.Toleration) int64 {
	if t.TolerationSeconds == nil {
		return math.MaxInt64
	}
	return *t.TolerationSeconds
}

// isDefaultToleration: one of DefaultTolerationSeconds' tolerations, at
// the default 300 s buildChain's plugins use.
func isDefaultToleration(t corev1.Toleration) bool {
	return (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) && t.Operator == corev1.TolerationOpExists &&
		t.Effect == corev1.TaintEffectNoExecute && t.Value == "" && t.TolerationSeconds != nil && *t.TolerationSeconds == 300
}

// nodeViolation is NodeRestriction's promise on an admitted request: a
// node identity only gets pods bound to itself created, status-updated,
// deleted or evicted, and tokens bound to them (for no audience or one
// the pod's projected tokens use), and never updates a pod's spec
// (main resource or resize). It returns the
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
	case a.Operation == Update && (a.Subresource == "" || a.Subresource == "resize"):
		return fmt.Errorf("node %q updated the spec of a pod bound to %q (%s)", node, old.Spec.NodeName, a.Subresource)
	case a.Subresource == "token":
		// A token bound to the stored pod itself, for one audience of
		// its projected tokens' (none is "", the API server's, which
		// kube-api-access volumes use; buildChain has no authorizer to
		// grant others).
		tr := a.Object.(*authenticationv1.TokenRequest)
		if ref := tr.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != old.Name || ref.UID != old.UID {
			return fmt.Errorf("node %q got a token bound to %+v, not to pod %s (uid %s)", node, ref, old.Name, old.UID)
		}
		if len(tr.Spec.Audiences) > 1 {
			return fmt.Errorf("node %q got a token for audiences %q", node, tr.Spec.Audiences)
		}
		audience := ""
		if len(tr.Spec.Audiences) == 1 {
			audience = tr.Spec.Audiences[0]
		}
		if !slices.ContainsFunc(old.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool {
				return s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == audience
			})
		}) {
			return fmt.Errorf("node %q got a token for audience %q its pod does not use", node, audience)
		}
		bound = old.Spec.NodeName
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

// TestFuzzAdmissionRuntimeClassOracle checks the RuntimeClass expectations
// can fail: without the RuntimeClass plugin a pod naming a missing class is
// admitted, a class's overhead, node selector and tolerations are not set,
// and a pod with an overhead but no class passes validation — each
// reported; with every plugin the same pods meet them. The tolerations
// check reports a merge that loses or shortens a toleration.
func TestFuzzAdmissionRuntimeClassOracle(t *testing.T) {
	ctx := context.Background()
	st := newFuzzStores()
	if err := st.add(nsResource, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzNamespace}}); err != nil {
		t.Fatal(err)
	}
	if err := st.add(saResource, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fuzzNamespace}}); err != nil {
		t.Fatal(err)
	}
	gvisor := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "gvisor",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists}}}}
	if err := st.add(runtimeClassResource, gvisor); err != nil {
		t.Fatal(err)
	}
	var without []string
	for _, n := range AllPlugins() {
		if n != "RuntimeClass" {
			without = append(without, n)
		}
	}
	muts, vals, _, err := NewPlugins(without, st)
	if err != nil {
		t.Fatal(err)
	}
	chains := map[string]*Chain{"without RuntimeClass": {Mutators: muts, Validators: vals}, "every plugin": buildChain(t, st)}
	newPod := func(class string, overhead corev1.ResourceList) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: fuzzNamespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}, Overhead: overhead}}
		if class != "" {
			p.Spec.RuntimeClassName = &class
		}
		podsResource.Strategy.Default(p)
		return p
	}
	// run admits pod through chain and returns the first broken
	// expectation, if any.
	run := func(chain *Chain, pod *corev1.Pod) error {
		a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
			Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: fuzzNamespace, Name: "p", Object: pod,
			User: &request.User{Name: "alice", Groups: []string{"system:authenticated"}}}
		rc := newRuntimeClassCase(ctx, t, st, pod, true)
		err := chain.Admit(ctx, a)
		if v := rc.admitViolation(err, pod); v != nil || err != nil {
			return v
		}
		return rc.validateViolation(chain.Validate(ctx, a), pod)
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	for _, tc := range []struct {
		what string
		pod  func() *corev1.Pod
	}{
		{"a missing class", func() *corev1.Pod { return newPod("missing", nil) }},
		{"a class with overhead and scheduling", func() *corev1.Pod { return newPod("gvisor", nil) }},
		{"an overhead without a class", func() *corev1.Pod { return newPod("", cpu) }},
		{"an overhead other than the class's", func() *corev1.Pod { return newPod("gvisor", cpu) }},
	} {
		if err := run(chains["without RuntimeClass"], tc.pod()); err == nil {
			t.Errorf("%s without the RuntimeClass plugin: no expectation broken", tc.what)
		}
		if err := run(chains["every plugin"], tc.pod()); err != nil {
			t.Errorf("%s with every plugin: %v", tc.what, err)
		}
	}

	sixty, long := int64(60), int64(600)
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	sandbox := corev1.Toleration{Key: "sandbox", Operator: corev1.TolerationOpExists}
	notReady := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	for _, tc := range []struct {
		what              string
		pod, class, after []corev1.Toleration
		ok                bool
	}{
		{"both kept", []corev1.Toleration{gpu}, []corev1.Toleration{sandbox}, []corev1.Toleration{gpu, sandbox}, true},
		{"the longer of two kept", []corev1.Toleration{notReady(&long)}, []corev1.Toleration{notReady(&sixty)}, []corev1.Toleration{notReady(&long)}, true},
		{"the pod's lost", []corev1.Toleration{gpu}, []corev1.Toleration{sandbox}, []corev1.Toleration{sandbox}, false},
		{"one from nowhere", nil, []corev1.Toleration{sandbox}, []corev1.Toleration{sandbox, gpu}, false},
		{"the shorter of two kept", []corev1.Toleration{notReady(&long)}, []corev1.Toleration{notReady(&sixty)}, []corev1.Toleration{notReady(&sixty)}, false},
	} {
		if err := tolerationsViolation(tc.pod, tc.class, tc.after); (err == nil) != tc.ok {
			t.Errorf("%s: violation %v, want one: %v", tc.what, err, !tc.ok)
		}
	}
}

// TestFuzzAdmissionQuotaOracle checks the quota property can fail: used
// raised above hard is reported, used already above it and not raised
// is not.
func TestFuzzAdmissionQuotaOracle(t *testing.T) {
	q := func(used string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")},
			Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(used)}}}
	}
	if quotaViolation(q("500m"), q("1500m")) == nil {
		t.Error("used raised above hard not reported")
	}
	if v := quotaViolation(q("2"), q("2")); v != nil {
		t.Errorf("used above hard but not raised reported: %v", v)
	}
	if v := quotaViolation(q("0"), q("1")); v != nil {
		t.Errorf("used raised to hard reported: %v", v)
	}
}

// TestFuzzAdmissionTokenOracle checks the TokenRequest side of the
// NodeRestriction property can fail: nodeViolation reports a node's token
// bound to another uid, for two audiences or for an audience its pod does
// not use, and accepts one bound to its own pod for none (the audience
// "" of its kube-api-access volume); the chain
// refuses each reported one with a 403 and admits the accepted one.
func TestFuzzAdmissionTokenOracle(t *testing.T) {
	ctx := context.Background()
	st := newFuzzStores()
	if err := st.add(nsResource, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzNamespace}}); err != nil {
		t.Fatal(err)
	}
	if err := st.add(nodeResource, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fuzzNodeA, UID: fuzzNodeUIDs[fuzzNodeA]}}); err != nil {
		t.Fatal(err)
	}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: fuzzNamespace, UID: "uid-p"},
		Spec: corev1.PodSpec{NodeName: fuzzNodeA, Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}}}
	if err := st.add(podResource, old); err != nil {
		t.Fatal(err)
	}
	chain := buildChain(t, st)
	user := &request.User{Name: "system:node:" + fuzzNodeA, Groups: []string{"system:nodes"}}
	request := func(uid types.UID, audiences ...string) *Attributes {
		tr := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fuzzNamespace},
			Spec: authenticationv1.TokenRequestSpec{Audiences: audiences,
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: uid}}}
		return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
			Kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), Subresource: "token", Namespace: fuzzNamespace,
			Name: "default", Object: tr, User: user}
	}
	if a := request("uid-p"); nodeViolation(a, old) != nil || chain.Admit(ctx, a) != nil || chain.Validate(ctx, a) != nil {
		t.Errorf("a token bound to the node's own pod: violation %v, admit %v, validate %v",
			nodeViolation(a, old), chain.Admit(ctx, a), chain.Validate(ctx, a))
	}
	for name, a := range map[string]*Attributes{
		"other uid":       request("uid-other"),
		"two audiences":   request("uid-p", "a", "b"),
		"unused audience": request("uid-p", "vault"),
	} {
		if nodeViolation(a, old) == nil {
			t.Errorf("%s: not reported", name)
		}
		if err := chain.Admit(ctx, a); !apierrors.IsForbidden(err) {
			t.Errorf("%s: want 403, got %v", name, err)
		}
	}
}
