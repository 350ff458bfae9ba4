package endpoints

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
)

// PodServices turns pod events into syncs of the services whose
// endpoints they can change: the services of the pod's namespace whose
// selector matches the pod before or after the change. The controllers
// that keep a service's endpoints (Endpoints here, EndpointSlices) share
// it, as upstream's share their pod-to-service mapping.
type PodServices struct {
	Services corelisters.ServiceLister
	Queue    workqueue.TypedDelayingInterface[string]
	// BatchPeriod delays every sync a pod change causes (the queue holds
	// a key once, so the changes of one period make one sync).
	BatchPeriod time.Duration
}

// Handler is the pod informer's event handler.
func (p PodServices) Handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: p.onPod, UpdateFunc: p.onPodUpdate, DeleteFunc: p.onPod}
}

// onPod enqueues the services matching an added or deleted pod.
func (p PodServices) onPod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.enqueue(p.selecting(pod))
	}
}

// onPodUpdate enqueues the services matching the pod before or after the
// update, if the update can change its endpoint. An update that cannot
// (most status writes) reads no services.
func (p PodServices) onPodUpdate(oldObj, obj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := obj.(*corev1.Pod)
	if !ok1 || !ok2 || !EndpointChanged(old, cur) {
		return
	}
	svcs := p.selecting(cur)
	if !maps.Equal(old.Labels, cur.Labels) {
		svcs = append(svcs, p.selecting(old)...)
	}
	p.enqueue(svcs)
}

func (p PodServices) enqueue(svcs []*corev1.Service) {
	for _, svc := range svcs {
		if key, err := cache.MetaNamespaceKeyFunc(svc); err == nil {
			p.Queue.AddAfter(key, p.BatchPeriod)
		}
	}
}

// selecting returns the services of the pod's namespace whose selector
// matches it.
func (p PodServices) selecting(pod *corev1.Pod) []*corev1.Service {
	svcs, err := p.Services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*corev1.Service
	for _, svc := range svcs {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			out = append(out, svc)
		}
	}
	return out
}

// EndpointChanged reports whether an update of a pod can change its
// endpoint in Endpoints or an EndpointSlice: its labels, or what its
// addresses (every family) are built from.
func EndpointChanged(old, cur *corev1.Pod) bool {
	return !maps.Equal(old.Labels, cur.Labels) ||
		!slices.Equal(PodIPs(old), PodIPs(cur)) || podstate.IsReady(old) != podstate.IsReady(cur) ||
		old.Status.Phase != cur.Status.Phase ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		old.Spec.NodeName != cur.Spec.NodeName || old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain ||
		old.UID != cur.UID || !sameContainerPorts(old.Spec.Containers, cur.Spec.Containers)
}

func sameContainerPorts(a, b []corev1.Container) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Container) bool { return slices.Equal(x.Ports, y.Ports) })
}
