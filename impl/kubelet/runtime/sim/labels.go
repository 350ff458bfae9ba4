package sim

import "github.com/kubeproof/kubeproof/impl/kubelet/runtime"

// labelSet is a sandbox's or container's CRI labels, kept compactly. The
// kubelet labels every runtime object with its pod's name, namespace and
// UID (runtime.LabelPod*), which make each object's label map its own: a
// map of a handful of entries costs some 300 bytes per object, held for
// as long as the pod runs. The three pod labels are kept here as strings
// (the kubelet's own, not copies); the others (the pod's own labels on a
// sandbox, the container name and type on a container), equal across a
// workload's pods, as a map shared through sharedParts. The CRI map is
// made again when a List or Status returns the labels.
type labelSet struct {
	podName, podNamespace, podUID string
	has                           uint8 // hasPodName | hasPodNamespace | hasPodUID
	rest                          map[string]string
}

const (
	hasPodName = 1 << iota
	hasPodNamespace
	hasPodUID
)

// compactLabels keeps m as a labelSet.
func compactLabels(m map[string]string) labelSet {
	var l labelSet
	var rest map[string]string
	others := 0
	for k := range m {
		if !podLabel(k) {
			others++
		}
	}
	// The other labels (the container's name, ...) are mostly a set seen
	// before: looked up first, the map is built only when it is new.
	if others > 0 && others <= 8 {
		if kept, ok := shared.sharedStringMap(m, podLabel); ok {
			for k, v := range m {
				l.setPodLabel(k, v)
			}
			l.rest = kept
			return l
		}
	}
	for k, v := range m {
		if !l.setPodLabel(k, v) {
			if rest == nil {
				rest = make(map[string]string, len(m))
			}
			rest[k] = v
		}
	}
	l.rest = shared.stringMap(rest)
	return l
}

// setPodLabel keeps v if k is one of the pod labels a labelSet keeps in
// its own fields, and reports whether it was.
func (l *labelSet) setPodLabel(k, v string) bool {
	switch k {
	case runtime.LabelPodName:
		l.podName, l.has = v, l.has|hasPodName
	case runtime.LabelPodNamespace:
		l.podNamespace, l.has = v, l.has|hasPodNamespace
	case runtime.LabelPodUID:
		l.podUID, l.has = v, l.has|hasPodUID
	default:
		return false
	}
	return true
}

// podLabel reports whether k is one of the pod labels a labelSet keeps in
// its own fields.
func podLabel(k string) bool {
	return k == runtime.LabelPodName || k == runtime.LabelPodNamespace || k == runtime.LabelPodUID
}

// get is the value of label k and whether it is set.
func (l *labelSet) get(k string) (string, bool) {
	switch k {
	case runtime.LabelPodName:
		return l.podName, l.has&hasPodName != 0
	case runtime.LabelPodNamespace:
		return l.podNamespace, l.has&hasPodNamespace != 0
	case runtime.LabelPodUID:
		return l.podUID, l.has&hasPodUID != 0
	}
	v, ok := l.rest[k]
	return v, ok
}

// matches reports whether every label of selector has its value (a label
// not set reads as "", as in a map).
func (l *labelSet) matches(selector map[string]string) bool {
	for k, v := range selector {
		if got, _ := l.get(k); got != v {
			return false
		}
	}
	return true
}

// toMap is the labels as the CRI returns them (a new map; nil for none).
func (l *labelSet) toMap() map[string]string {
	n := len(l.rest)
	for b := l.has; b != 0; b &= b - 1 {
		n++
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for k, v := range l.rest {
		m[k] = v
	}
	if l.has&hasPodName != 0 {
		m[runtime.LabelPodName] = l.podName
	}
	if l.has&hasPodNamespace != 0 {
		m[runtime.LabelPodNamespace] = l.podNamespace
	}
	if l.has&hasPodUID != 0 {
		m[runtime.LabelPodUID] = l.podUID
	}
	return m
}
