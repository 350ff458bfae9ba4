package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kinds of objects a node may reach through its pods.
const (
	kindPod            = "pods"
	kindSecret         = "secrets"
	kindConfigMap      = "configmaps"
	kindServiceAccount = "serviceaccounts"
	kindPVC            = "persistentvolumeclaims"
)

// ref names one object a pod uses.
type ref struct {
	kind, namespace, name string
}

// Graph records which node each object is reachable from: a pod bound to
// a node, and the secrets, config maps, service account and claims that
// pod references. It is fed pod changes (OnPod) and answers Related.
type Graph struct {
	mu sync.RWMutex
	// uses counts, per object, the node's pods that reference it.
	uses map[ref]map[string]int
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{uses: map[ref]map[string]int{}}
}

// Related reports whether object kind namespace/name is the pod bound to
// node, or is referenced by one.
func (g *Graph) Related(node, kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.uses[ref{kind, namespace, name}][node] > 0
}

// OnPod applies one pod change: old is nil for an addition, cur nil for a
// deletion (an objcache.Handler).
func (g *Graph) OnPod(old, cur runtime.Object) {
	op, _ := old.(*corev1.Pod)
	cp, _ := cur.(*corev1.Pod)
	g.mu.Lock()
	defer g.mu.Unlock()
	if op != nil && op.Spec.NodeName != "" {
		for _, r := range PodRefs(op) {
			nodes := g.uses[r]
			nodes[op.Spec.NodeName]--
			if nodes[op.Spec.NodeName] <= 0 {
				delete(nodes, op.Spec.NodeName)
			}
			if len(nodes) == 0 {
				delete(g.uses, r)
			}
		}
	}
	if cp != nil && cp.Spec.NodeName != "" {
		for _, r := range PodRefs(cp) {
			nodes := g.uses[r]
			if nodes == nil {
				nodes = map[string]int{}
				g.uses[r] = nodes
			}
			nodes[cp.Spec.NodeName]++
		}
	}
}

// PodRefs lists, without duplicates, the pod itself and every object it
// references: secrets and config maps of volumes (including projected
// sources and volume plugins' secret references), of envFrom and
// env.valueFrom in every container, image pull secrets, its service
// account, and its persistent volume claims (generic ephemeral volumes'
// claims are named <pod>-<volume>).
func PodRefs(p *corev1.Pod) []ref {
	ns := p.Namespace
	seen := map[ref]bool{}
	var out []ref
	add := func(kind, name string) {
		if name == "" {
			return
		}
		r := ref{kind, ns, name}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	add(kindPod, p.Name)
	add(kindServiceAccount, p.Spec.ServiceAccountName)
	for _, s := range p.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		switch {
		case v.Secret != nil:
			add(kindSecret, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(kindConfigMap, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(kindSecret, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add(kindConfigMap, src.ConfigMap.Name)
				}
			}
		case v.PersistentVolumeClaim != nil:
			add(kindPVC, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(kindPVC, p.Name+"-"+v.Name)
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			add(kindSecret, v.CSI.NodePublishSecretRef.Name)
		case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
			add(kindSecret, v.FlexVolume.SecretRef.Name)
		case v.CephFS != nil && v.CephFS.SecretRef != nil:
			add(kindSecret, v.CephFS.SecretRef.Name)
		case v.RBD != nil && v.RBD.SecretRef != nil:
			add(kindSecret, v.RBD.SecretRef.Name)
		case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
			add(kindSecret, v.ISCSI.SecretRef.Name)
		case v.AzureFile != nil:
			add(kindSecret, v.AzureFile.SecretName)
		}
	}
	visitEnv := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(kindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(kindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for i := range p.Spec.InitContainers {
		visitEnv(p.Spec.InitContainers[i].EnvFrom, p.Spec.InitContainers[i].Env)
	}
	for i := range p.Spec.Containers {
		visitEnv(p.Spec.Containers[i].EnvFrom, p.Spec.Containers[i].Env)
	}
	for i := range p.Spec.EphemeralContainers {
		visitEnv(p.Spec.EphemeralContainers[i].EnvFrom, p.Spec.EphemeralContainers[i].Env)
	}
	return out
}
