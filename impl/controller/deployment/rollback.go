package deployment

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The deprecated.deployment.rollback.to annotation is what the rollback
// subresource of extensions/v1beta1 and apps/v1beta1 Deployments left for
// the controller, and upstream's controller still acts on it on any
// Deployment. (`kubectl rollout undo` no longer uses it: it writes the old
// template itself.)

// rollbackTo is the revision a Deployment's rollback annotation asks for;
// false when the annotation is absent, empty or not a number, and then it is
// ignored and left in place, as upstream's getRollbackTo.
func rollbackTo(d *appsv1.Deployment) (int64, bool) {
	v := d.Annotations[rollbackToAnnotation]
	if v == "" {
		return 0, false
	}
	revision, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return revision, true
}

// rollback handles the annotation as upstream's rollback, in place of a
// sync: the new ReplicaSet is found (or created) and revisions synced as for
// a rollout; revision 0 means the last revision (the second highest); the
// first ReplicaSet with that revision (old ones, then the new one; those
// whose revision does not parse are skipped) has its template and
// annotations copied to the Deployment unless its template is the
// Deployment's already. In every case the annotation is removed in the same
// Update.
func (p *planner) rollback(rsList []*appsv1.ReplicaSet, revision int64) {
	newRS, oldRSs := p.newAndOldSyncRevision(rsList, true)
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	rb := &Rollback{Deployment: p.d.DeepCopy()}
	rb.Warning, rb.Done = rollbackToRevision(rb.Deployment, all, revision)
	delete(rb.Deployment.Annotations, rollbackToAnnotation)
	p.plan.Rollback = rb
}

// rollbackToRevision rolls d (in place) back to revision among all and
// returns the event to record before the write (a warning) or after it.
func rollbackToRevision(d *appsv1.Deployment, all []*appsv1.ReplicaSet, revision int64) (warning, done *Event) {
	if revision == 0 {
		if revision = lastRevision(all); revision == 0 {
			return &Event{corev1.EventTypeWarning, ReasonRollbackRevisionNotFound, "Unable to find last revision."}, nil
		}
	}
	for _, rs := range all {
		if rs == nil {
			continue
		}
		if v, err := Revision(rs); err != nil || v != revision {
			continue
		}
		if EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			return &Event{corev1.EventTypeWarning, ReasonRollbackTemplateUnchanged,
				fmt.Sprintf("The rollback revision contains the same template as current deployment %q", d.Name)}, nil
		}
		setTemplateFrom(d, rs)
		setAnnotationsFrom(d, rs)
		return nil, &Event{corev1.EventTypeNormal, ReasonRollbackDone, fmt.Sprintf("Rolled back deployment %q to revision %d", d.Name, revision)}
	}
	return &Event{corev1.EventTypeWarning, ReasonRollbackRevisionNotFound, "Unable to find the revision to rollback to."}, nil
}

// setTemplateFrom copies rs's pod template to d, without the
// pod-template-hash label (upstream SetFromReplicaSetTemplate).
func setTemplateFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	t := rs.Spec.Template.DeepCopy()
	d.Spec.Template.ObjectMeta = t.ObjectMeta
	d.Spec.Template.Spec = t.Spec
	labels := make(map[string]string, len(t.Labels))
	for k, v := range t.Labels {
		if k != appsv1.DefaultDeploymentUniqueLabelKey {
			labels[k] = v
		}
	}
	d.Spec.Template.Labels = labels
}

// setAnnotationsFrom gives d the annotations rs got from the Deployment when
// it was the new ReplicaSet, keeping d's own that are never copied to
// ReplicaSets (revision, last-applied-configuration, ...), so that the
// rolled-back revision keeps its change-cause (upstream
// SetDeploymentAnnotationsTo).
func setAnnotationsFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	annotations := map[string]string{}
	for k, v := range d.Annotations {
		if notCopiedToReplicaSet[k] {
			annotations[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !notCopiedToReplicaSet[k] {
			annotations[k] = v
		}
	}
	d.Annotations = annotations
}
