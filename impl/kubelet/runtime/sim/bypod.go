package sim

import "iter"

// podObjects indexes a node's sandboxes and containers by the pod UID
// their labels carry, so that a pod's state (PodState, read by every sync
// of the pod: every running pod once per 20-s resync) is found without
// walking every record of the node. Walking them cost each sync a pointer
// chase per record of the node, so a node's resyncs grew with the square
// of its pods (~10 millicores at 1,000 nodes x 30 pods when idle).
//
// One entry per pod, its elements each a sandbox or a container, in no
// particular order (PodState sorts what it finds); the first two (a
// sandbox and its container: most pods' all) are held in the entry itself,
// further ones in a slice, so that most pods' entries are no heap object
// of their own. The index holds exactly the records of the sandboxes and
// containers maps; r.mu guards it with them.
type podObjects map[string]podEntry

// podObject is one sandbox or one container (the other field nil).
type podObject struct {
	s *sandbox
	c *container
}

// podEntry is one pod's records.
type podEntry struct {
	first [2]podObject
	more  []podObject // the third and later
	n     int         // how many in all
}

// at is the entry's i-th record.
func (e *podEntry) at(i int) *podObject {
	if i < len(e.first) {
		return &e.first[i]
	}
	return &e.more[i-len(e.first)]
}

// all yields the entry's records.
func (e podEntry) all() iter.Seq[podObject] {
	return func(yield func(podObject) bool) {
		for i := range e.n {
			if !yield(*e.at(i)) {
				return
			}
		}
	}
}

// add indexes o under pod.
func (ix podObjects) add(pod string, o podObject) {
	e := ix[pod]
	if e.n < len(e.first) {
		e.first[e.n] = o
	} else {
		e.more = append(e.more, o)
	}
	e.n++
	ix[pod] = e
}

// remove takes o out of pod's entry (dropping the entry once empty).
func (ix podObjects) remove(pod string, o podObject) {
	e, ok := ix[pod]
	if !ok {
		return
	}
	for i := range e.n {
		if *e.at(i) == o {
			last := e.n - 1
			*e.at(i) = *e.at(last)
			*e.at(last) = podObject{}
			if last >= len(e.first) {
				e.more = e.more[:last-len(e.first)]
			}
			e.n--
			break
		}
	}
	if e.n == 0 {
		delete(ix, pod)
		return
	}
	ix[pod] = e
}
