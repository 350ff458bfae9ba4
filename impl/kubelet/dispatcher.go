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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodDispatcher is one pod watch shared by many kubelets in one process
// (kubeproof up with many simulated nodes): it watches every bound pod and
// hands each to the kubelet of its spec.nodeName, instead of one watch per
// kubelet. Kubelets using it are created with Config.ExternalPodSource.
type PodDispatcher struct {
	client kubernetes.Interface
	resync time.Duration

	mu       sync.Mutex
	kubelets map[string]*Kubelet
	informer cache.SharedIndexInformer
	synced   bool
}

const byNodeName = "spec.nodeName"

// NewPodDispatcher returns a dispatcher; resync is the full-resync period
// (DefaultSyncFrequency if 0).
func NewPodDispatcher(client kubernetes.Interface, resync time.Duration) *PodDispatcher {
	if resync <= 0 {
		resync = DefaultSyncFrequency
	}
	return &PodDispatcher{client: client, resync: resync, kubelets: map[string]*Kubelet{}}
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
	factory := informers.NewSharedInformerFactoryWithOptions(d.client, d.resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}), informers.WithTransform(sourceTransform(kubeletTable)))
	inf := factory.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{byNodeName: func(obj any) ([]string, error) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return fmt.Errorf("pod dispatcher: %w", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.dispatch(obj, false) },
		UpdateFunc: func(_, obj any) { d.dispatch(obj, false) },
		DeleteFunc: func(obj any) { d.dispatch(obj, true) },
	}); err != nil {
		return fmt.Errorf("pod dispatcher: %w", err)
	}
	d.mu.Lock()
	d.informer = inf
	d.mu.Unlock()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
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
