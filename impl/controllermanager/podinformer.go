package controllermanager

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// externalPodInformer is Config.PodInformer as the manager's informer
// factory sees it: an informer of every pod that another component of the
// process owns and runs (kubelet.NewPodInformer in the node-memory
// benchmark), so the factory neither starts nor stops it. The controllers'
// handlers get the manager's resync period instead of the informer's, are
// removed when the controllers stop (a new leader term registers them
// anew), and an index a controller adds again in a later term is kept
// rather than refused, as is an index of the same name the owner added
// (pods by "spec.nodeName": the kubelets' pod source and the node
// lifecycle controller index the same way, under upstream's name).
type externalPodInformer struct {
	cache.SharedIndexInformer
	resync time.Duration

	mu   sync.Mutex
	regs []cache.ResourceEventHandlerRegistration
}

func (p *externalPodInformer) Run(<-chan struct{})            {}
func (p *externalPodInformer) RunWithContext(context.Context) {}

func (p *externalPodInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return p.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

func (p *externalPodInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return p.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resync})
}

func (p *externalPodInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if opts.ResyncPeriod == nil {
		opts.ResyncPeriod = &p.resync
	}
	reg, err := p.SharedIndexInformer.AddEventHandlerWithOptions(h, opts)
	if err == nil {
		p.mu.Lock()
		p.regs = append(p.regs, reg)
		p.mu.Unlock()
	}
	return reg, err
}

func (p *externalPodInformer) AddIndexers(ix cache.Indexers) error {
	have := p.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, f := range ix {
		if _, ok := have[name]; !ok {
			missing[name] = f
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return p.SharedIndexInformer.AddIndexers(missing)
}

// removeHandlers unregisters every handler the controllers added.
func (p *externalPodInformer) removeHandlers() {
	p.mu.Lock()
	regs := p.regs
	p.regs = nil
	p.mu.Unlock()
	for _, r := range regs {
		_ = p.SharedIndexInformer.RemoveEventHandler(r)
	}
}

// SetTransform keeps the owner's transform: the factory would install the
// manager's (which trims what other components read).
func (p *externalPodInformer) SetTransform(cache.TransformFunc) error { return nil }

// useExternalPodInformer makes factory hand out pods (when set) as its pod
// informer and returns a function that removes the handlers registered
// through it.
func useExternalPodInformer(factory informers.SharedInformerFactory, pods cache.SharedIndexInformer, resync time.Duration) func() {
	if pods == nil {
		return func() {}
	}
	ext := &externalPodInformer{SharedIndexInformer: pods, resync: resync}
	factory.InformerFor(&corev1.Pod{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return ext })
	return ext.removeHandlers
}
