package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var defaultQuarter = intstr.FromString("25%")

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType
}

// ResolveFenceposts turns maxSurge and maxUnavailable (numbers or
// percentages of desired) into pod counts: surge rounds up, unavailable
// rounds down, and if both come out 0 unavailable becomes 1 so a rollout can
// always make progress (DEP-1, DEP-2).
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32) {
	if maxSurge == nil {
		maxSurge = &defaultQuarter
	}
	if maxUnavailable == nil {
		maxUnavailable = &defaultQuarter
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(desired), true)
	if err != nil {
		surge = 0
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(desired), false)
	if err != nil {
		unavailable = 0
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable)
}

func rollingParams(d *appsv1.Deployment) (*intstr.IntOrString, *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// MaxSurge is how many pods above spec.replicas a rolling update may run.
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _ := ResolveFenceposts(s, u, *d.Spec.Replicas)
	return surge
}

// MaxUnavailable is how many of spec.replicas a rolling update may have
// unavailable (never more than spec.replicas).
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable := ResolveFenceposts(s, u, *d.Spec.Replicas)
	return min(unavailable, *d.Spec.Replicas)
}
