package kubelet

import (
	"context"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/intern"
)

// The object manager: how the kubelet reads the ConfigMaps and Secrets its
// pods use (volumes, env, envFrom, image pull secrets) — upstream's Watch
// change-detection strategy — and the RuntimeClasses they name
// (spec.runtimeClassName, whose handler the sandbox runs with:
// runtimeclass.go). Every object a registered pod references is
// watched on its own (a list/watch with the field selector
// metadata.name=<name> in its namespace, which the Node authorizer allows
// for objects of the node's pods, and for any RuntimeClass; one goroutine
// each, objectwatch.go),
// reference-counted by the pods that use
// it; reads come from that watch's store, so a periodic volume refresh
// costs no request. A watch starts at the first read of its object while
// the kubelet runs and stops when the last pod using the object is
// unregistered or the kubelet stops. Kubelets of one process sharing a
// clientset share one watch per object (sharedObjectWatch), which stops
// with its last user. Until a watch has synced, a read falls back to a
// GET; an object the synced store lacks is NotFound. A pod without a
// runtimeClassName references no RuntimeClass: no RuntimeClass watch runs
// on a node until one of its pods names one (upstream's kubelet keeps an
// informer of every RuntimeClass instead).

const (
	resourceConfigMaps     = "configmaps"
	resourceSecrets        = "secrets"
	resourceRuntimeClasses = "runtimeclasses" // node.k8s.io, cluster-scoped: namespace ""
)

// objectRef names one ConfigMap, Secret or RuntimeClass.
type objectRef struct {
	resource, namespace, name string
}

// objectWatch is one kubelet's use of the watch of one referenced object.
type objectWatch struct {
	pods    int                    // registered pods referencing it
	shared  *sharedObjectWatch     // nil until the watch starts
	release func() <-chan struct{} // drops this kubelet's use of shared
}

// objectManager serves the ConfigMaps, Secrets and RuntimeClasses of
// registered pods.
type objectManager struct {
	client kubernetes.Interface

	mu      sync.Mutex
	ctx     context.Context // the kubelet's run context; nil when not running
	pods    map[types.UID][]objectRef
	watches map[objectRef]*objectWatch
	ending  []<-chan struct{} // watches this manager stopped, until they have ended
}

func newObjectManager(client kubernetes.Interface) *objectManager {
	return &objectManager{client: client, pods: map[types.UID][]objectRef{}, watches: map[objectRef]*objectWatch{}}
}

// start lets reads start watches, which end when ctx does or stop is called.
func (m *objectManager) start(ctx context.Context) {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
}

// stop ends every watch and waits for them; reads then GET until the next
// start. Registrations are kept.
func (m *objectManager) stop() {
	m.mu.Lock()
	m.ctx = nil
	for _, w := range m.watches {
		m.stopWatch(w)
	}
	ending := m.ending
	m.ending = nil
	m.mu.Unlock()
	for _, done := range ending {
		<-done
	}
}

// stopWatch drops this manager's use of w's watch; when it was the last
// user, the watch's end is awaited by stop. m.mu is held.
func (m *objectManager) stopWatch(w *objectWatch) {
	if w.shared == nil {
		return
	}
	if done := w.release(); done != nil {
		m.ending = slices.DeleteFunc(m.ending, func(d <-chan struct{}) bool {
			select {
			case <-d:
				return true
			default:
				return false
			}
		})
		m.ending = append(m.ending, done)
	}
	w.shared, w.release = nil, nil
}

// updatePod registers pod, or unregisters it once it has reached
// Succeeded or Failed: a finished pod waiting for garbage collection needs
// no watches (as upstream's pod manager).
func (m *objectManager) updatePod(pod *v1.Pod) {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		m.unregisterPod(pod.UID)
		return
	}
	m.registerPod(pod)
}

// registerPod records the objects pod references (replacing what an
// earlier version of it referenced).
func (m *objectManager) registerPod(pod *v1.Pod) {
	refs := podObjectRefs(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.pods[pod.UID]
	if had && slices.Equal(old, refs) {
		return
	}
	refs = sharedRefs.share(refs)
	// Take the new references before dropping the old ones, so an object
	// both versions use keeps its watch.
	for _, r := range refs {
		w := m.watches[r]
		if w == nil {
			w = &objectWatch{}
			m.watches[r] = w
		}
		w.pods++
	}
	m.release(old)
	m.pods[pod.UID] = refs
}

// refTable shares equal reference lists: the pods of a namespace mostly
// reference the same objects (every pod's kube-api-access volume projects
// kube-root-ca.crt), and the kubelets of a process together keep one list
// per pod. Kept lists are never changed. Bounded like impl/intern's tables.
type refTable struct {
	mu    sync.Mutex
	lists map[string][]objectRef
}

var sharedRefs = &refTable{lists: map[string][]objectRef{}}

// share returns the kept list equal to refs.
func (t *refTable) share(refs []objectRef) []objectRef {
	if len(refs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(r.resource)
		b.WriteByte(0)
		b.WriteString(r.namespace)
		b.WriteByte(0)
		b.WriteString(r.name)
		b.WriteByte(0)
	}
	return intern.Lookup(&t.mu, t.lists, maxSharedRefLists, b.String(), refs)
}

const maxSharedRefLists = 4096

// unregisterPod drops the pod's references; a watch no pod needs stops.
func (m *objectManager) unregisterPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(m.pods[uid])
	delete(m.pods, uid)
}

// release drops one reference to each of refs. m.mu is held.
func (m *objectManager) release(refs []objectRef) {
	for _, r := range refs {
		w := m.watches[r]
		if w == nil {
			continue
		}
		if w.pods--; w.pods > 0 {
			continue
		}
		m.stopWatch(w)
		delete(m.watches, r)
	}
}

// watching is the number of watches running (for tests).
func (m *objectManager) watching() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, w := range m.watches {
		if w.shared != nil {
			n++
		}
	}
	return n
}

// configMap returns the named ConfigMap.
func (m *objectManager) configMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	obj, err := m.get(ctx, objectRef{resourceConfigMaps, ns, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// secret returns the named Secret.
func (m *objectManager) secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	obj, err := m.get(ctx, objectRef{resourceSecrets, ns, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// runtimeClass returns the named RuntimeClass.
func (m *objectManager) runtimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	obj, err := m.get(ctx, objectRef{resourceRuntimeClasses, "", name})
	if err != nil {
		return nil, err
	}
	return obj.(*nodev1.RuntimeClass), nil
}

// get reads r from its watch's store, starting the watch if needed; it
// GETs r when no registered pod references it, the kubelet is not
// running, or the watch has not synced yet. Objects from the store are
// shared: callers must not modify them.
func (m *objectManager) get(ctx context.Context, r objectRef) (runtime.Object, error) {
	m.mu.Lock()
	w := m.watches[r]
	if w == nil || m.ctx == nil {
		m.mu.Unlock()
		return m.fetch(ctx, r)
	}
	if w.shared == nil {
		w.shared, w.release = acquireObjectWatch(m.client, r)
	}
	shared := w.shared
	m.mu.Unlock()
	obj, synced := shared.current()
	if !synced {
		return m.fetch(ctx, r)
	}
	if obj == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: r.resource}, r.name)
	}
	return obj, nil
}

// objectWatches are the running object watches, per clientset and object.
var objectWatches perClient[objectRef, *sharedObjectWatch]

// acquireObjectWatch returns the running watch of r through client,
// starting it on first use. release drops the use; the last one stops the
// watch and returns a channel closed once its goroutines have ended (nil
// otherwise).
func acquireObjectWatch(client kubernetes.Interface, r objectRef) (*sharedObjectWatch, func() <-chan struct{}) {
	w, release := objectWatches.acquire(client, r, func() *sharedObjectWatch { return startObjectWatch(client, r) })
	return w, func() <-chan struct{} {
		if !release() {
			return nil
		}
		w.cancel()
		return w.done
	}
}

// fetch GETs r from the API.
func (m *objectManager) fetch(ctx context.Context, r objectRef) (runtime.Object, error) {
	switch r.resource {
	case resourceConfigMaps:
		return m.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	case resourceRuntimeClasses:
		return m.client.NodeV1().RuntimeClasses().Get(ctx, r.name, metav1.GetOptions{})
	}
	return m.client.CoreV1().Secrets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
}

// podObjectRefs lists, without duplicates, the ConfigMaps and Secrets the
// pod references — image pull secrets, env and envFrom of every container,
// and configMap, secret and projected volumes — and its RuntimeClass.
func podObjectRefs(pod *v1.Pod) []objectRef {
	var refs []objectRef
	add := func(resource, name string) {
		if name == "" {
			return
		}
		ns := pod.Namespace
		if resource == resourceRuntimeClasses {
			ns = "" // cluster-scoped
		}
		r := objectRef{resource, ns, name}
		for _, have := range refs { // a pod references a handful at most
			if have == r {
				return
			}
		}
		refs = append(refs, r)
	}
	if pod.Spec.RuntimeClassName != nil {
		add(resourceRuntimeClasses, *pod.Spec.RuntimeClassName)
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(resourceSecrets, s.Name)
	}
	containerRefs := func(env []v1.EnvVar, envFrom []v1.EnvFromSource) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				add(resourceConfigMaps, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(resourceSecrets, e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(resourceConfigMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(resourceSecrets, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		containerRefs(pod.Spec.InitContainers[i].Env, pod.Spec.InitContainers[i].EnvFrom)
	}
	for i := range pod.Spec.Containers {
		containerRefs(pod.Spec.Containers[i].Env, pod.Spec.Containers[i].EnvFrom)
	}
	for i := range pod.Spec.EphemeralContainers {
		containerRefs(pod.Spec.EphemeralContainers[i].Env, pod.Spec.EphemeralContainers[i].EnvFrom)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			add(resourceConfigMaps, v.ConfigMap.Name)
		case v.Secret != nil:
			add(resourceSecrets, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(resourceConfigMaps, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add(resourceSecrets, s.Secret.Name)
				}
			}
		}
	}
	return refs
}

// ObjectWatches is the number of watches of ConfigMaps, Secrets and
// RuntimeClasses running and how many of them have synced.
func (k *Kubelet) ObjectWatches() (running, synced int) {
	m := k.objects
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.watches {
		if w.shared == nil {
			continue
		}
		running++
		if w.shared.synced() {
			synced++
		}
	}
	return running, synced
}
