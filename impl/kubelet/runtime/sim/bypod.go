package sim

// podObjects indexes a node's sandboxes and containers by the pod UID
// their labels carry, so that a pod's state (PodState, read by every sync
// of the pod: every running pod once per 20-s resync) is found without
// walking every record of the node. Walking them cost each sync a pointer
// chase per record of the node, so a node's resyncs grew with the square
// of its pods (~10 millicores at 1,000 nodes x 30 pods when idle).
//
// One entry per pod: a slice whose elements are each a sandbox or a
// container, in no particular order (PodState sorts what it finds). The
// index holds exactly the records of the sandboxes and containers maps;
// r.mu guards it with them.
type podObjects map[string][]podObject

// podObject is one sandbox or one container (the other field nil).
type podObject struct {
	s *sandbox
	c *container
}

// add indexes o under pod.
func (ix podObjects) add(pod string, o podObject) {
	ix[pod] = append(ix[pod], o)
}

// remove takes o out of pod's entry (dropping the entry once empty).
func (ix podObjects) remove(pod string, o podObject) {
	objs := ix[pod]
	for i := range objs {
		if objs[i] == o {
			objs[i] = objs[len(objs)-1]
			objs[len(objs)-1] = podObject{}
			objs = objs[:len(objs)-1]
			break
		}
	}
	if len(objs) == 0 {
		delete(ix, pod)
		return
	}
	ix[pod] = objs
}
