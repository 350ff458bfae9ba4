package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// ctr is a container with the given requests and limits.
func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "nginx:1.27",
		Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// TestPodLevelLimitsDefaults: as kube-apiserver 1.37
// (PodLevelResourcesFixDefaulting, KEP-2837 rows 10 and 12), a pod that sets
// pod-level resources gets, for each pod-level resource it does not limit
// and every container (init, sidecar and app) limits, the larger of its
// pod-level request and the containers' aggregate limit (counted as the
// scheduler counts requests) as its pod-level limit; after the pod-level
// requests are defaulted. Pods without pod-level resources and workload
// templates are not defaulted so.
func TestPodLevelLimitsDefaults(t *testing.T) {
	sidecar := func(c corev1.Container) corev1.Container {
		c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		return c
	}
	cases := []struct {
		name       string
		pod        *corev1.ResourceRequirements
		init, ctrs []corev1.Container
		want       *corev1.ResourceRequirements
		qos        corev1.PodQOSClass
	}{
		{"limits from every container's limits beside pod-level requests",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "500m", "memory", "256Mi")}, nil,
			[]corev1.Container{
				ctr("app", rlist("cpu", "200m", "memory", "128Mi"), rlist("cpu", "1", "memory", "512Mi")),
				ctr("helper", rlist("cpu", "100m", "memory", "64Mi"), rlist("cpu", "500m", "memory", "256Mi"))},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "500m", "memory", "256Mi"), Limits: rlist("cpu", "1500m", "memory", "768Mi")},
			corev1.PodQOSBurstable},
		{"a pod-level request above the containers' limits is the limit",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "2", "memory", "1Gi")}, nil,
			[]corev1.Container{ctr("app", rlist("cpu", "100m", "memory", "128Mi"), rlist("cpu", "1", "memory", "1Gi"))},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "2", "memory", "1Gi"), Limits: rlist("cpu", "2", "memory", "1Gi")},
			corev1.PodQOSGuaranteed},
		{"a container without the limit: that resource is not limited",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1", "memory", "1Gi")}, nil,
			[]corev1.Container{
				ctr("app", rlist("cpu", "100m", "memory", "128Mi"), rlist("cpu", "500m", "memory", "512Mi")),
				ctr("helper", rlist("cpu", "100m", "memory", "128Mi"), rlist("cpu", "500m"))},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1", "memory", "1Gi"), Limits: rlist("cpu", "1")},
			corev1.PodQOSBurstable},
		{"an init container without the limit: not limited",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1")},
			[]corev1.Container{ctr("setup", rlist("cpu", "100m"), nil)},
			[]corev1.Container{ctr("app", rlist("cpu", "100m"), rlist("cpu", "500m"))},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1")},
			corev1.PodQOSBurstable},
		{"sidecars and init containers aggregate as the scheduler counts them",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "100m")},
			[]corev1.Container{
				sidecar(ctr("proxy", rlist("cpu", "10m"), rlist("cpu", "500m"))),
				ctr("setup", rlist("cpu", "10m"), rlist("cpu", "2"))},
			[]corev1.Container{ctr("app", rlist("cpu", "10m"), rlist("cpu", "1"))},
			// max(app + proxy, setup + proxy) = max(1500m, 2500m)
			&corev1.ResourceRequirements{Requests: rlist("cpu", "100m"), Limits: rlist("cpu", "2500m")},
			corev1.PodQOSBurstable},
		{"a pod-level limit of one resource stays, another is defaulted",
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2"), Requests: rlist("memory", "256Mi")}, nil,
			[]corev1.Container{ctr("app", rlist("cpu", "100m", "memory", "128Mi"), rlist("cpu", "1", "memory", "512Mi"))},
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "512Mi"), Requests: rlist("cpu", "100m", "memory", "256Mi")},
			corev1.PodQOSBurstable},
		{"pod-level limits alone: requests are defaulted first, then limits",
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2")}, nil,
			[]corev1.Container{ctr("app", rlist("memory", "128Mi"), rlist("memory", "512Mi"))},
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "512Mi"), Requests: rlist("cpu", "2", "memory", "128Mi")},
			corev1.PodQOSBurstable},
		{"hugepages requested at the pod level are limited from the containers'",
			&corev1.ResourceRequirements{Requests: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi")}, nil,
			[]corev1.Container{ctr("app", rlist("memory", "128Mi"), rlist("memory", "512Mi", "hugepages-2Mi", "4Mi"))},
			&corev1.ResourceRequirements{Requests: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi"), Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi")},
			corev1.PodQOSBurstable},
		{"no pod-level resources: none are defaulted",
			nil, nil,
			[]corev1.Container{ctr("app", nil, rlist("cpu", "1", "memory", "1Gi"))},
			nil,
			corev1.PodQOSGuaranteed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web", tc.ctrs...)
			p.Spec.InitContainers = tc.init
			p.Spec.Resources = tc.pod.DeepCopy()
			tmpl := corev1.PodTemplateSpec{Spec: *p.Spec.DeepCopy()}
			p = defaultedPod(t, p)
			if !apiequality.Semantic.DeepEqual(p.Spec.Resources, tc.want) {
				t.Errorf("spec.resources %+v, want %+v", p.Spec.Resources, tc.want)
			}
			if p.Status.QOSClass != tc.qos {
				t.Errorf("QoS %s, want %s", p.Status.QOSClass, tc.qos)
			}

			// A Deployment's template: its pod-level resources are left
			// as given (the pods it makes are defaulted when created).
			r := find(t, appsV1, "deployments")
			d := newDeployment()
			d.Spec.Template.Spec = *tmpl.Spec.DeepCopy()
			d.Spec.Template.Labels = map[string]string{"app": "web"}
			r.Strategy.Default(d)
			r.Strategy.PrepareForCreate(context.Background(), d)
			if !apiequality.Semantic.DeepEqual(d.Spec.Template.Spec.Resources, tc.pod) {
				t.Errorf("deployment template spec.resources %+v, want %+v unchanged", d.Spec.Template.Spec.Resources, tc.pod)
			}
		})
	}
}

// TestPodLevelLimitsDefaultedOnUpdate: a stored pod whose pod-level limits
// were defaulted, sent back without them (a client that read an older
// object, or never saw them), gets them again: the update is no change of
// spec.resources and is accepted.
func TestPodLevelLimitsDefaultedOnUpdate(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	p := newPod("web", ctr("app", rlist("cpu", "100m", "memory", "128Mi"), rlist("cpu", "1", "memory", "512Mi")))
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "500m", "memory", "256Mi")}
	p = defaultedPod(t, p)
	want := &corev1.ResourceRequirements{Requests: rlist("cpu", "500m", "memory", "256Mi"), Limits: rlist("cpu", "1", "memory", "512Mi")}
	if !apiequality.Semantic.DeepEqual(p.Spec.Resources, want) {
		t.Fatalf("created spec.resources %+v, want %+v", p.Spec.Resources, want)
	}
	put := p.DeepCopy()
	put.Spec.Resources.Limits = nil
	put.Spec.Containers[0].Image = "nginx:1.28"
	r.Strategy.Default(put)
	r.Strategy.PrepareForUpdate(ctx, put, p)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, put, p))
	if !apiequality.Semantic.DeepEqual(put.Spec.Resources, want) {
		t.Errorf("updated spec.resources %+v, want %+v", put.Spec.Resources, want)
	}
}
