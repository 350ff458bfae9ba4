package scheduler

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// addEventHandlers wires the informers to the queue and the cache, the way
// kube-scheduler does: unassigned pods of our profiles go to the queue;
// assigned pods go to the cache (confirming assumptions) and may move
// unschedulable pods; nodes go to the cache and move unschedulable pods.
//
// The pod handlers ask for no resync (a shared pod informer of the process,
// Config.PodInformer, may resync for its other users) and are kept to be
// removed from a shared informer when Run returns.
func (s *Scheduler) addEventHandlers(podInformer, nodeInformer toolscache.SharedIndexInformer) error {
	addPodHandler := func(h toolscache.ResourceEventHandler) error {
		reg, err := podInformer.AddEventHandlerWithResyncPeriod(h, 0)
		if err == nil && s.cfg.PodInformer != nil {
			s.podHandlers = append(s.podHandlers, reg)
		}
		return err
	}
	if err := addPodHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod := podFrom(obj)
			return pod != nil && assigned(pod) && !terminal(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addAssignedPod,
			UpdateFunc: s.updateAssignedPod,
			DeleteFunc: s.deleteAssignedPod,
		},
	}); err != nil {
		return fmt.Errorf("adding assigned pod handler: %w", err)
	}
	if err := addPodHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod := podFrom(obj)
			return pod != nil && !assigned(pod) && !terminal(pod) && s.responsibleFor(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if pod := podFrom(obj); pod != nil && pod.DeletionTimestamp == nil {
					s.queue.Add(pod)
					s.trace(TraceQueued, pod)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				oldPod, newPod := podFrom(oldObj), podFrom(newObj)
				if s.cache.IsAssumedPod(newPod) && newPod.DeletionTimestamp == nil {
					// Being bound right now; the assigned handler takes over.
					return
				}
				if newPod.DeletionTimestamp != nil {
					s.deleteUnscheduledPod(newPod)
					return
				}
				s.queue.Update(oldPod, newPod)
			},
			DeleteFunc: func(obj any) {
				if pod := podFrom(obj); pod != nil {
					s.deleteUnscheduledPod(pod)
				}
			},
		},
	}); err != nil {
		return fmt.Errorf("adding unscheduled pod handler: %w", err)
	}
	if _, err := nodeInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			node, ok := obj.(*v1.Node)
			if !ok {
				return
			}
			s.cache.AddNode(node)
			s.queue.MoveAllToActiveOrBackoffQueue(fw.EventNodeAdd)
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := oldObj.(*v1.Node)
			newNode, ok2 := newObj.(*v1.Node)
			if !ok1 || !ok2 {
				return
			}
			s.cache.UpdateNode(oldNode, newNode)
			if action := nodeUpdateAction(oldNode, newNode); action != 0 {
				s.queue.MoveAllToActiveOrBackoffQueue(fw.ClusterEvent{Resource: fw.Node, ActionType: action, Label: "NodeUpdate"})
			}
		},
		DeleteFunc: func(obj any) {
			var node *v1.Node
			switch t := obj.(type) {
			case *v1.Node:
				node = t
			case toolscache.DeletedFinalStateUnknown:
				node, _ = t.Obj.(*v1.Node)
			}
			if node != nil {
				s.cache.RemoveNode(node)
			}
		},
	}); err != nil {
		return fmt.Errorf("adding node handler: %w", err)
	}
	return nil
}

// removePodHandlers takes the scheduler's handlers off a shared pod
// informer (Config.PodInformer), which outlives the scheduler.
func (s *Scheduler) removePodHandlers() {
	for _, reg := range s.podHandlers {
		if err := s.cfg.PodInformer.RemoveEventHandler(reg); err != nil {
			s.log.Error("removing pod handler from the shared pod informer", "err", err)
		}
	}
}

// deleteUnscheduledPod drops a deleted (or terminating) pod from the queue
// and turns it away if it is held at Permit, as kube-scheduler does.
func (s *Scheduler) deleteUnscheduledPod(pod *v1.Pod) {
	s.queue.Delete(pod)
	if fwk, ok := s.profiles[pod.Spec.SchedulerName]; ok {
		fwk.RejectWaitingPod(pod.UID)
	}
}

func podFrom(obj any) *v1.Pod {
	switch t := obj.(type) {
	case *v1.Pod:
		return t
	case toolscache.DeletedFinalStateUnknown:
		p, _ := t.Obj.(*v1.Pod)
		return p
	}
	return nil
}

func assigned(pod *v1.Pod) bool { return pod.Spec.NodeName != "" }

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func (s *Scheduler) responsibleFor(pod *v1.Pod) bool {
	_, ok := s.profiles[pod.Spec.SchedulerName]
	return ok
}

func (s *Scheduler) addAssignedPod(obj any) {
	pod := podFrom(obj)
	if err := s.cache.AddPod(pod); err != nil {
		s.log.Error("adding pod to scheduler cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	// A pod that was preempting no longer needs its nomination.
	s.queue.DeleteNominatedPodIfExists(pod)
	s.queue.MoveAllToActiveOrBackoffQueue(fw.EventAssignedPodAdd)
}

func (s *Scheduler) updateAssignedPod(oldObj, newObj any) {
	oldPod, newPod := podFrom(oldObj), podFrom(newObj)
	if err := s.cache.UpdatePod(oldPod, newPod); err != nil {
		s.log.Error("updating pod in scheduler cache", "pod", newPod.Namespace+"/"+newPod.Name, "err", err)
	}
	if !reflect.DeepEqual(oldPod.Labels, newPod.Labels) {
		s.queue.MoveAllToActiveOrBackoffQueue(fw.ClusterEvent{Resource: fw.AssignedPod, ActionType: fw.UpdatePodLabel, Label: "AssignedPodUpdate"})
	}
	if scaledDown(oldPod, newPod) {
		s.queue.MoveAllToActiveOrBackoffQueue(fw.ClusterEvent{Resource: fw.AssignedPod, ActionType: fw.UpdatePodScaleDown, Label: "AssignedPodUpdate"})
	}
}

// scaledDown: the pod asks less of some resource than before (an in-place
// resize its node applied), as upstream's PodSchedulingPropertiesChange
// reports UpdatePodScaleDown. Pods whose containers (interned by the
// informer transform), pod-level requests and resize state did not change
// are skipped without computing their requests.
func scaledDown(oldPod, newPod *v1.Pod) bool {
	if !fw.Resizing(oldPod) && !fw.Resizing(newPod) && sameContainers(oldPod.Spec.Containers, newPod.Spec.Containers) &&
		sameContainers(oldPod.Spec.InitContainers, newPod.Spec.InitContainers) &&
		fw.SameQuantities(podLevelRequests(oldPod), podLevelRequests(newPod)) {
		return false
	}
	o, _ := fw.AccountedPodRequests(oldPod)
	n, _ := fw.AccountedPodRequests(newPod)
	if n.MilliCPU < o.MilliCPU || n.Memory < o.Memory || n.EphemeralStorage < o.EphemeralStorage {
		return true
	}
	for name, q := range o.ScalarResources {
		if n.ScalarResources[name] < q {
			return true
		}
	}
	return false
}

// podLevelRequests is the pod's spec.resources.requests (nil for none).
func podLevelRequests(pod *v1.Pod) v1.ResourceList {
	if pod.Spec.Resources == nil {
		return nil
	}
	return pod.Spec.Resources.Requests
}

// sameContainers: a and b are one slice (the transform interns equal
// container lists) or both empty.
func sameContainers(a, b []v1.Container) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (s *Scheduler) deleteAssignedPod(obj any) {
	pod := podFrom(obj)
	if pod == nil {
		return
	}
	if err := s.cache.RemovePod(pod); err != nil {
		s.log.Error("removing pod from scheduler cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(fw.EventAssignedPodDelete)
}

// nodeUpdateAction classifies what changed on a node in scheduling terms.
func nodeUpdateAction(a, b *v1.Node) fw.ActionType {
	var act fw.ActionType
	if !reflect.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) {
		act |= fw.UpdateNodeAllocatable
	}
	if !reflect.DeepEqual(a.Labels, b.Labels) {
		act |= fw.UpdateNodeLabel
	}
	if !reflect.DeepEqual(a.Spec.Taints, b.Spec.Taints) || a.Spec.Unschedulable != b.Spec.Unschedulable {
		act |= fw.UpdateNodeTaint
	}
	if !sameConditionStatuses(a.Status.Conditions, b.Status.Conditions) {
		act |= fw.UpdateNodeCondition
	}
	return act
}

func sameConditionStatuses(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[v1.NodeConditionType]v1.ConditionStatus, len(a))
	for _, c := range a {
		m[c.Type] = c.Status
	}
	for _, c := range b {
		if m[c.Type] != c.Status {
			return false
		}
	}
	return true
}
