package deployment

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// Annotations the Deployment controller keeps on its ReplicaSets (and the
// revision on the Deployment itself), as upstream.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"

	lastAppliedConfigAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	rollbackToAnnotation        = "deprecated.deployment.rollback.to"

	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)

var notCopiedToReplicaSet = map[string]bool{
	lastAppliedConfigAnnotation: true,
	RevisionAnnotation:          true,
	RevisionHistoryAnnotation:   true,
	DesiredReplicasAnnotation:   true,
	MaxReplicasAnnotation:       true,
	rollbackToAnnotation:        true,
}

// Revision returns a ReplicaSet's revision number: 0 without the revision
// annotation, an error when it is not a number (upstream's Revision; callers
// skip such ReplicaSets).
func Revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among rss, skipping the ones whose
// revision does not parse (upstream MaxRevision).
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var max int64
	for _, rs := range rss {
		if v, err := Revision(rs); err == nil && v > max {
			max = v
		}
	}
	return max
}

// lastRevision is the second highest revision among rss (the one before
// the current), skipping the ones whose revision does not parse (upstream
// LastRevision).
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var max, second int64
	for _, rs := range rss {
		v, err := Revision(rs)
		switch {
		case err != nil:
		case v >= max:
			max, second = v, max
		case v > second:
			second = v
		}
	}
	return second
}

// setNewReplicaSetAnnotations copies the Deployment's user annotations to its
// new ReplicaSet and raises the ReplicaSet's revision to newRevision,
// recording the revision it had before in revision-history (that is how a
// `kubectl rollout undo` target keeps its history). For a
// ReplicaSet about to be created it also sets the replica annotations.
// It reports whether anything changed. As upstream's
// SetNewReplicaSetAnnotations: an absent or empty revision counts as 0; one
// that does not parse leaves the ReplicaSet as it is and reports no change
// (whatever the copy did), so nothing of it is written.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if notCopiedToReplicaSet[k] {
			continue
		}
		if old, ok := rs.Annotations[k]; !ok || old != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldRevisionInt := int64(0)
	if oldRevision != "" {
		v, err := strconv.ParseInt(oldRevision, 10, 64)
		if err != nil {
			return false
		}
		oldRevisionInt = v
	}
	if oldRevisionInt < newRevision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had {
			// Raising a ReplicaSet that had a revision: a rollback to it.
			// Its former revisions are kept, oldest dropped first.
			history := rs.Annotations[RevisionHistoryAnnotation]
			old := strings.Split(history, ",")
			if old[0] == "" {
				rs.Annotations[RevisionHistoryAnnotation] = oldRevision
			} else {
				total := len(history) + len(oldRevision) + 1
				start := 0
				for total > maxRevisionHistoryChars && start < len(old) {
					total -= len(old[start]) + 1
					start++
				}
				if total <= maxRevisionHistoryChars {
					rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(old[start:], oldRevision), ",")
				}
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// setReplicasAnnotations records desired-replicas and max-replicas (what the
// Deployment wanted when it last sized this ReplicaSet; proportional scaling
// reads them back). It reports whether anything changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(max))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(i), true
}
