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
// particular order (PodState sorts what it finds). A pod's first sandbox
// and first container (most pods' all) are held in the entry itself,
// further ones in a slice behind a pointer, so that the entry is three
// words (a map slot of 40 bytes with its key) and most pods' entries are
// no heap object of their own. The index holds exactly the records of the
// sandboxes and containers maps; r.mu guards it with them.
type podObjects map[string]podEntry

// podObject is one sandbox or one container (the other field nil).
type podObject struct {
	s *sandbox
	c *container
}

// podEntry is one pod's records: s and c when set, and the others.
type podEntry struct {
	s    *sandbox
	c    *container
	more *[]podObject // nil while empty
}

// all yields the entry's records.
func (e podEntry) all() iter.Seq[podObject] {
	return func(yield func(podObject) bool) {
		if e.s != nil && !yield(podObject{s: e.s}) {
			return
		}
		if e.c != nil && !yield(podObject{c: e.c}) {
			return
		}
		if e.more != nil {
			for _, o := range *e.more {
				if !yield(o) {
					return
				}
			}
		}
	}
}

// add indexes o under pod.
func (ix podObjects) add(pod string, o podObject) {
	e := ix[pod]
	switch {
	case o.s != nil && e.s == nil:
		e.s = o.s
	case o.c != nil && e.c == nil:
		e.c = o.c
	default:
		if e.more == nil {
			e.more = new([]podObject)
		}
		*e.more = append(*e.more, o)
	}
	ix[pod] = e
}

// remove takes o out of pod's entry (dropping the entry once empty). A
// record from the others takes the place it leaves in the entry, so that
// the others stay few.
func (ix podObjects) remove(pod string, o podObject) {
	e, ok := ix[pod]
	if !ok {
		return
	}
	switch {
	case o.s != nil && e.s == o.s:
		e.s = nil
		if i := e.find(func(m podObject) bool { return m.s != nil }); i >= 0 {
			e.s = (*e.more)[i].s
			e.drop(i)
		}
	case o.c != nil && e.c == o.c:
		e.c = nil
		if i := e.find(func(m podObject) bool { return m.c != nil }); i >= 0 {
			e.c = (*e.more)[i].c
			e.drop(i)
		}
	default:
		if i := e.find(func(m podObject) bool { return m == o }); i >= 0 {
			e.drop(i)
		}
	}
	if e == (podEntry{}) {
		delete(ix, pod)
		return
	}
	ix[pod] = e
}

// find is the index among the others of the first that is, or -1.
func (e *podEntry) find(is func(podObject) bool) int {
	if e.more == nil {
		return -1
	}
	for i, m := range *e.more {
		if is(m) {
			return i
		}
	}
	return -1
}

// drop takes the i-th of the others out (the slice goes once empty).
func (e *podEntry) drop(i int) {
	more := *e.more
	last := len(more) - 1
	more[i] = more[last]
	more[last] = podObject{}
	if last == 0 {
		e.more = nil
		return
	}
	*e.more = more[:last]
}
