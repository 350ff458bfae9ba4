package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodDispatcher is one pod watch shared by many kubelets in one process
// (kubeproof up with many simulated nodes): it watches every bound pod and
// hands each to the kubelet of its spec.nodeName, instead of one watch per
// kubelet. Kubelets using it are created with Config.ExternalPodSource.
// The dispatcher does not resync: each kubelet resyncs its own pods on its
// own phase (Kubelet.housekeeping).
type PodDispatcher struct {
	client kubernetes.Interface
	// shared, when set, is a pod informer its owner runs (NewPodInformer),
	// used instead of one of the dispatcher's own.
	shared cache.SharedIndexInformer

	mu       sync.Mutex
	kubelets map[string]*Kubelet
	informer cache.SharedIndexInformer
	synced   bool
}

const byNodeName = "spec.nodeName"

// NewPodDispatcher returns a dispatcher with a pod watch of its own.
func NewPodDispatcher(client kubernetes.Interface) *PodDispatcher {
	return &PodDispatcher{client: client, kubelets: map[string]*Kubelet{}}
}

// NewPodInformer returns an informer of every pod of the cluster, trimmed
// and interned as a kubelet's pod source is (podsource.go) and indexed by
// node, for a PodDispatcher to share with other components of the process
// whose code watches all pods anyway (the controller manager's pod cache:
// controllermanager.Config.PodInformer), so the process keeps one copy of
// each pod instead of one per component. resync is the informer's default
// resync period for handlers that do not ask for their own
// (DefaultSyncFrequency if 0; the dispatcher asks for none). The caller
// runs it.
func NewPodInformer(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	if resync <= 0 {
		resync = DefaultSyncFrequency
	}
	inf := coreinformers.NewPodInformer(client, metav1.NamespaceAll, resync, cache.Indexers{byNodeName: podNodeName})
	setSourceTransform(inf)
	return inf
}

// NewPodDispatcherWithInformer returns a dispatcher over pods, an informer
// from NewPodInformer that its owner runs.
func NewPodDispatcherWithInformer(pods cache.SharedIndexInformer) *PodDispatcher {
	d := NewPodDispatcher(nil)
	d.shared = pods
	return d
}

func podNodeName(obj any) ([]string, error) {
	if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// Add registers a kubelet. If the watch has synced already, the kubelet
// gets its node's current pods at once.
func (d *PodDispatcher) Add(k *Kubelet) {
	d.mu.Lock()
	d.kubelets[k.NodeName()] = k
	synced, inf := d.synced, d.informer
	d.mu.Unlock()
	if !synced {
		return
	}
	objs, _ := inf.GetIndexer().ByIndex(byNodeName, k.NodeName())
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			k.HandlePod(p)
		}
	}
	k.MarkSourceSynced()
}

// Remove unregisters the kubelet of a node.
func (d *PodDispatcher) Remove(nodeName string) {
	d.mu.Lock()
	delete(d.kubelets, nodeName)
	d.mu.Unlock()
}

func (d *PodDispatcher) kubelet(nodeName string) *Kubelet {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kubelets[nodeName]
}

func (d *PodDispatcher) dispatch(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	k := d.kubelet(p.Spec.NodeName)
	if k == nil {
		return
	}
	if deleted {
		k.HandlePodDeleted(p)
	} else {
		k.HandlePod(p)
	}
}

// Run watches pods until ctx is done.
func (d *PodDispatcher) Run(ctx context.Context) error {
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.dispatch(obj, false) },
		UpdateFunc: func(_, obj any) { d.dispatch(obj, false) },
		DeleteFunc: func(obj any) { d.dispatch(obj, true) },
	}
	inf := d.shared
	if inf == nil {
		factory := informers.NewSharedInformerFactoryWithOptions(d.client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
			}))
		inf = factory.Core().V1().Pods().Informer()
		setSourceTransform(inf)
		if err := inf.AddIndexers(cache.Indexers{byNodeName: podNodeName}); err != nil {
			return fmt.Errorf("pod dispatcher: %w", err)
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
	}
	// On a shared informer of every pod, unbound pods find no kubelet
	// (dispatch ignores them) until their binding arrives as an update.
	reg, err := inf.AddEventHandlerWithResyncPeriod(handlers, 0)
	if err != nil {
		return fmt.Errorf("pod dispatcher: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	// A shared informer may have synced long before this handler was
	// added: the source is synced once the handler has been handed every
	// pod the informer held.
	synced := reg.HasSynced
	d.mu.Lock()
	d.informer = inf
	d.mu.Unlock()
	if cache.WaitForCacheSync(ctx.Done(), synced) {
		d.mu.Lock()
		d.synced = true
		ks := make([]*Kubelet, 0, len(d.kubelets))
		for _, k := range d.kubelets {
			ks = append(ks, k)
		}
		d.mu.Unlock()
		for _, k := range ks {
			k.MarkSourceSynced()
		}
	}
	<-ctx.Done()
	return nil
}
