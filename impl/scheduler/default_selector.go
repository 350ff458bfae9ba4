package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// workloadListers find the workload a pod belongs to, for
// PodTopologySpread's default constraints. Each lister is set in Run when
// the API server serves its resource; a missing one selects nothing.
type workloadListers struct {
	services     atomic.Pointer[corelisters.ServiceLister]
	rcs          atomic.Pointer[corelisters.ReplicationControllerLister]
	replicaSets  atomic.Pointer[appslisters.ReplicaSetLister]
	statefulSets atomic.Pointer[appslisters.StatefulSetLister]
}

var (
	rcKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// DefaultSelector is kube-scheduler's DefaultSelector: the merged
// selectors of the Services selecting the pod, plus that of the
// ReplicationController, ReplicaSet or StatefulSet controlling it.
func (w *workloadListers) DefaultSelector(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	if l := w.services.Load(); l != nil {
		services, _ := (*l).Services(pod.Namespace).List(labels.Everything())
		for _, svc := range services {
			// A service with a nil selector selects nothing.
			if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				set = labels.Merge(set, svc.Spec.Selector)
			}
		}
	}
	selector := labels.SelectorFromValidatedSet(set)
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return selector
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return selector
	}
	var ownerSel *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case rcKind:
		if l := w.rcs.Load(); l != nil {
			if rc, err := (*l).ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
				return labels.SelectorFromValidatedSet(labels.Merge(set, rc.Spec.Selector))
			}
		}
	case rsKind:
		if l := w.replicaSets.Load(); l != nil {
			if rs, err := (*l).ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
				ownerSel = rs.Spec.Selector
			}
		}
	case ssKind:
		if l := w.statefulSets.Load(); l != nil {
			if ss, err := (*l).StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
				ownerSel = ss.Spec.Selector
			}
		}
	}
	if ownerSel != nil {
		if other, err := metav1.LabelSelectorAsSelector(ownerSel); err == nil {
			if reqs, ok := other.Requirements(); ok {
				selector = selector.Add(reqs...)
			}
		}
	}
	return selector
}

// watchWorkloadsIfServed starts listers of Services,
// ReplicationControllers, ReplicaSets and StatefulSets, for those the API
// server serves.
func (s *Scheduler) watchWorkloadsIfServed(ctx context.Context) error {
	core, err := s.servedResources(ctx, "v1")
	if err != nil {
		return err
	}
	apps, err := s.servedResources(ctx, "apps/v1")
	if err != nil {
		return err
	}
	if core["services"] {
		inf := s.informers.Core().V1().Services()
		s.synced = append(s.synced, inf.Informer().HasSynced)
		l := inf.Lister()
		s.workloads.services.Store(&l)
	}
	if core["replicationcontrollers"] {
		inf := s.informers.Core().V1().ReplicationControllers()
		s.synced = append(s.synced, inf.Informer().HasSynced)
		l := inf.Lister()
		s.workloads.rcs.Store(&l)
	}
	if apps["replicasets"] {
		inf := s.informers.Apps().V1().ReplicaSets()
		s.synced = append(s.synced, inf.Informer().HasSynced)
		l := inf.Lister()
		s.workloads.replicaSets.Store(&l)
	}
	if apps["statefulsets"] {
		inf := s.informers.Apps().V1().StatefulSets()
		s.synced = append(s.synced, inf.Informer().HasSynced)
		l := inf.Lister()
		s.workloads.statefulSets.Store(&l)
	}
	return nil
}

// servedResources asks discovery which resources a group version serves
// (none when it is not served or not visible), retrying other errors every
// second until ctx is done.
func (s *Scheduler) servedResources(ctx context.Context, gv string) (map[string]bool, error) {
	for {
		list, err := s.client.Discovery().ServerResourcesForGroupVersionWithContext(ctx, gv)
		switch {
		case err == nil:
			served := map[string]bool{}
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
			return served, nil
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			s.log.Info("API group version not available", "groupVersion", gv, "err", err)
			return nil, nil
		}
		s.log.Info("discovering API group version; retrying", "groupVersion", gv, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("scheduler: discovering %s: %w", gv, context.Cause(ctx))
		case <-time.After(time.Second):
		}
	}
}
