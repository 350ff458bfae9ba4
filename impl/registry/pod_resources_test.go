package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rlist builds a ResourceList from name, quantity pairs.
func rlist(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestPodLevelResourcesValidation: spec.resources is validated as
// kube-apiserver's validatePodResources with PodLevelResources on: field
// paths, error types and messages as upstream's.
func TestPodLevelResourcesValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	type wantErr struct{ key, msg string }
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []wantErr
	}{
		{"valid requests and limits", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1", "memory", "1Gi"), Limits: rlist("cpu", "2", "memory", "1Gi")}
		}, nil},
		{"valid hugepages beside memory", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi"), Requests: rlist("hugepages-2Mi", "4Mi")}
		}, nil},
		{"ephemeral-storage is not a pod-level resource", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("ephemeral-storage", "1Gi")}
		}, []wantErr{{notSupported + " spec.resources.requests[ephemeral-storage]", `supported values: "cpu", "hugepages-", "memory"`}}},
		{"extended resource is not a pod-level resource", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("example.com/gpu", "1")}
		}, []wantErr{{notSupported + " spec.resources.limits[example.com/gpu]", `supported values: "cpu", "hugepages-", "memory"`}}},
		{"unknown unqualified name", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("gpu", "1")}
		}, []wantErr{{invalid + " spec.resources.requests[gpu]", "must be a standard resource type or fully qualified"}}},
		{"negative quantity", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("memory", "-1")}
		}, []wantErr{{invalid + " spec.resources.requests[memory]", "must be greater than or equal to 0"}}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "2"), Limits: rlist("cpu", "1")}
		}, []wantErr{{invalid + " spec.resources.requests", "must be less than or equal to cpu limit of 1"}}},
		{"hugepages request unequal to limit", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi"), Requests: rlist("hugepages-2Mi", "2Mi")}
		}, []wantErr{{invalid + " spec.resources.requests", "must be equal to hugepages-2Mi limit of 4Mi"}}},
		{"hugepages request without limit", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("memory", "1Gi", "hugepages-2Mi", "2Mi")}
		}, []wantErr{{required + " spec.resources.limits", "Limit must be set for non overcommitable resources"}}},
		{"hugepages not whole pages", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "3Mi")}
		}, []wantErr{ // the request defaults to the limit
			{invalid + " spec.resources.limits[hugepages-2Mi]", "3Mi is not positive integer multiple of hugepages-2Mi"},
			{invalid + " spec.resources.requests[hugepages-2Mi]", "3Mi is not positive integer multiple of hugepages-2Mi"}}},
		{"hugepages alone", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("hugepages-2Mi", "2Mi")}
		}, []wantErr{{forbidden + " spec.resources", "HugePages require cpu or memory"}}},
		{"claims", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1"), Claims: []corev1.ResourceClaim{}}
		}, []wantErr{{forbidden + " spec.resources.claims", "claims may not be set for Resources at pod-level"}}},
		{"windows pod", func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1")}
		}, []wantErr{{forbidden + " spec.resources", "may not be set for a windows pod"}}},
		{"linux pod", func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1")}
		}, nil},
		{"aggregate container requests above pod requests", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rlist("cpu", "600m")
			second := p.Spec.Containers[0]
			second.Name = "second"
			p.Spec.Containers = append(p.Spec.Containers, second)
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1")}
		}, []wantErr{{invalid + " spec.resources.requests[cpu]", "must be greater than or equal to aggregate container requests of 1200m"}}},
		{"sidecar requests count toward the aggregate", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rlist("memory", "1Gi")
			p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: rlist("memory", "1Gi")}}}
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("memory", "1536Mi")}
		}, []wantErr{{invalid + " spec.resources.requests[memory]", "must be greater than or equal to aggregate container requests of 2Gi"}}},
		{"resource the pod level does not set is not compared", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = rlist("cpu", "2")
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("memory", "1Gi")}
		}, nil},
		{"container limit above pod limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = rlist("memory", "2Gi")
			p.Spec.Containers[0].Resources.Requests = rlist("memory", "512Mi")
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("memory", "1Gi")}
		}, []wantErr{{invalid + " spec.resources.containers[0][memory].limits", "must be less than or equal to pod limits of 1Gi"}}},
		{"aggregate hugepages limits above pod limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = rlist("memory", "1Gi", "hugepages-2Mi", "4Mi")
			second := p.Spec.Containers[0]
			second.Name = "second"
			p.Spec.Containers = append(p.Spec.Containers, second)
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("memory", "4Gi", "hugepages-2Mi", "6Mi")}
		}, []wantErr{ // requests default to limits, the pod's and the containers'
			{invalid + " spec.resources.limits[hugepages-2Mi]", "must be greater than or equal to aggregate container limits of 8Mi"},
			{invalid + " spec.resources.requests[hugepages-2Mi]", "must be greater than or equal to aggregate container requests of 8Mi"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web")
			tc.mutate(p)
			// As a create: defaults, then (after admission) the pod-level ones.
			r.Strategy.Default(p)
			r.Strategy.PrepareForCreate(context.Background(), p)
			errs := r.Strategy.Validate(context.Background(), p)
			keys := make([]string, len(tc.want))
			for i, w := range tc.want {
				keys[i] = w.key
			}
			wantErrors(t, errs, keys...)
			for _, w := range tc.want {
				found := false
				for _, e := range errs {
					if string(e.Type)+" "+e.Field == w.key && strings.Contains(e.Error(), w.msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s error saying %q in %v", w.key, w.msg, errs.ToAggregate())
				}
			}
		})
	}
}

// TestContainerResourcesValidationAsUpstream: a container's resources
// are checked as upstream's validateResourceRequirements: a request above
// its limit is reported on the requests path, extended resources and
// hugepages are not overcommitted, hugepages come in whole pages beside
// cpu or memory, extended resources in whole units.
func TestContainerResourcesValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	type wantErr struct{ key, msg string }
	cases := []struct {
		name string
		res  corev1.ResourceRequirements
		want []wantErr
	}{
		{"request above limit", corev1.ResourceRequirements{Requests: rlist("cpu", "2"), Limits: rlist("cpu", "1")},
			[]wantErr{{invalid + " spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 1"}}},
		{"extended request unequal to limit", corev1.ResourceRequirements{Requests: rlist("example.com/gpu", "1"), Limits: rlist("example.com/gpu", "2")},
			[]wantErr{{invalid + " spec.containers[0].resources.requests", "must be equal to example.com/gpu limit of 2"}}},
		{"extended request without limit", corev1.ResourceRequirements{Requests: rlist("example.com/gpu", "1")},
			[]wantErr{{required + " spec.containers[0].resources.limits", "Limit must be set for non overcommitable resources"}}},
		{"extended resource in fractions", corev1.ResourceRequirements{Requests: rlist("example.com/gpu", "500m"), Limits: rlist("example.com/gpu", "500m")},
			[]wantErr{{invalid + " spec.containers[0].resources.limits[example.com/gpu]", "must be an integer"},
				{invalid + " spec.containers[0].resources.requests[example.com/gpu]", "must be an integer"}}},
		{"hugepages request unequal to limit", corev1.ResourceRequirements{Requests: rlist("memory", "1Gi", "hugepages-2Mi", "2Mi"), Limits: rlist("hugepages-2Mi", "4Mi")},
			[]wantErr{{invalid + " spec.containers[0].resources.requests", "must be equal to hugepages-2Mi limit of 4Mi"}}},
		{"hugepages not whole pages", corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "3Mi")},
			[]wantErr{{invalid + " spec.containers[0].resources.limits[hugepages-2Mi]", "3Mi is not positive integer multiple of hugepages-2Mi"},
				{invalid + " spec.containers[0].resources.requests[hugepages-2Mi]", "3Mi is not positive integer multiple of hugepages-2Mi"}}},
		{"hugepages alone", corev1.ResourceRequirements{Limits: rlist("hugepages-2Mi", "2Mi")},
			[]wantErr{{forbidden + " spec.containers[0].resources", "HugePages require cpu or memory"}}},
		{"valid hugepages and extended", corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "1")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web")
			p.Spec.Containers[0].Resources = tc.res
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			keys := make([]string, len(tc.want))
			for i, w := range tc.want {
				keys[i] = w.key
			}
			wantErrors(t, errs, keys...)
			for _, w := range tc.want {
				found := false
				for _, e := range errs {
					if string(e.Type)+" "+e.Field == w.key && strings.Contains(e.Error(), w.msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s error saying %q in %v", w.key, w.msg, errs.ToAggregate())
				}
			}
		})
	}
}

// TestPodTemplateLevelResourcesValidation: a workload's pod template is
// held to the same pod-level rules (upstream's ValidatePodSpec).
func TestPodTemplateLevelResourcesValidation(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: newPod("x").Spec}
	defaultPodSpec(&tmpl.Spec)
	tmpl.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "2"), Limits: rlist("cpu", "1")}
	errs := validatePodTemplateSpec(&tmpl, nil, podValidationOptions{})
	wantErrors(t, errs, invalid+" spec.resources.requests")
}

// TestPodLevelResourcesDefaultedAfterAdmission: as kube-apiserver 1.37
// (PodLevelResourcesFixDefaulting), the pod-level defaults are applied when
// the pod is prepared for storage, after mutating admission, so what an
// admission plugin (LimitRanger, a webhook) set on the containers counts in
// the aggregates; an update whose body lacks the defaulted pod-level values
// gets them again and is not a change of spec.resources.
func TestPodLevelResourcesDefaultedAfterAdmission(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	p := newPod("web")
	p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "1Gi")}
	r.Strategy.Default(p)
	// A mutating admission plugin gives the container its requests.
	p.Spec.Containers[0].Resources.Requests = rlist("cpu", "500m", "memory", "256Mi")
	r.Strategy.PrepareForCreate(ctx, p)
	want := &corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "1Gi"), Requests: rlist("cpu", "500m", "memory", "256Mi")}
	if !apiequality.Semantic.DeepEqual(p.Spec.Resources, want) {
		t.Fatalf("spec.resources %+v, want %+v (from the containers' requests as admission left them)", p.Spec.Resources, want)
	}
	wantErrors(t, r.Strategy.Validate(ctx, p))

	// A stored pod sent back with a new image and without its defaulted
	// pod-level requests.
	p = newPod("web")
	p.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "1Gi")}
	p.Spec.Containers[0].Resources.Requests = rlist("cpu", "500m", "memory", "256Mi")
	p = defaultedPod(t, p)
	if !apiequality.Semantic.DeepEqual(p.Spec.Resources, want) {
		t.Fatalf("created spec.resources %+v, want %+v", p.Spec.Resources, want)
	}
	put := p.DeepCopy()
	put.Spec.Resources.Requests = nil
	put.Spec.Containers[0].Image = "nginx:1.28"
	r.Strategy.Default(put)
	r.Strategy.PrepareForUpdate(ctx, put, p)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, put, p))
	if !apiequality.Semantic.DeepEqual(put.Spec.Resources, want) {
		t.Errorf("updated spec.resources %+v, want %+v", put.Spec.Resources, want)
	}
}

// TestPodLevelResourcesImmutable: spec.resources cannot change by update
// (only pods/resize, not served, may change it), as upstream.
func TestPodLevelResourcesImmutable(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := newPod("p")
	old.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1")}
	old = defaultedPod(t, old)
	for name, mutate := range map[string]func(*corev1.Pod){
		"change": func(p *corev1.Pod) { p.Spec.Resources.Requests = rlist("cpu", "2") },
		"remove": func(p *corev1.Pod) { p.Spec.Resources = nil },
		"add":    func(p *corev1.Pod) { p.Spec.Resources.Limits = rlist("cpu", "1") },
	} {
		p := old.DeepCopy()
		mutate(p)
		r.Strategy.PrepareForUpdate(ctx, p, old)
		errs := r.Strategy.ValidateUpdate(ctx, p, old)
		wantErrors(t, errs, forbidden+" spec")
		if len(errs) > 0 && !strings.Contains(errs[0].Detail, "pod updates may not change fields other than") {
			t.Errorf("%s: %v", name, errs.ToAggregate())
		}
	}
}

// TestPodLevelResourcesDefaults: as kube-apiserver 1.37 with
// PodLevelResources on, a pod's pod-level hugepages limits default to the
// containers' aggregate limits (defaultHugePagePodLimits), and when
// pod-level requests or limits are set, missing pod-level requests default
// to the containers' aggregate requests (cpu, memory) or else to the
// pod-level limit (defaultPodRequests). Pod templates are not defaulted so.
func TestPodLevelResourcesDefaults(t *testing.T) {
	cases := []struct {
		name      string
		pod       *corev1.ResourceRequirements
		container corev1.ResourceRequirements
		want      *corev1.ResourceRequirements
		qos       corev1.PodQOSClass
	}{
		{"requests from limits",
			&corev1.ResourceRequirements{Limits: rlist("cpu", "1", "memory", "1Gi")}, corev1.ResourceRequirements{},
			&corev1.ResourceRequirements{Limits: rlist("cpu", "1", "memory", "1Gi"), Requests: rlist("cpu", "1", "memory", "1Gi")},
			corev1.PodQOSGuaranteed},
		{"requests from the containers' requests",
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "1Gi")}, corev1.ResourceRequirements{Requests: rlist("cpu", "500m")},
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "1Gi"), Requests: rlist("cpu", "500m", "memory", "1Gi")},
			corev1.PodQOSBurstable},
		{"explicit requests stay",
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2"), Requests: rlist("cpu", "1")}, corev1.ResourceRequirements{},
			&corev1.ResourceRequirements{Limits: rlist("cpu", "2"), Requests: rlist("cpu", "1")},
			corev1.PodQOSBurstable},
		{"no limits, explicit requests stay",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1")}, corev1.ResourceRequirements{Requests: rlist("cpu", "1")},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1")},
			corev1.PodQOSBurstable},
		{"no limits, a request the pod level lacks comes from the containers'",
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1")}, corev1.ResourceRequirements{Requests: rlist("memory", "64Mi")},
			&corev1.ResourceRequirements{Requests: rlist("cpu", "1", "memory", "64Mi")},
			corev1.PodQOSBurstable},
		{"hugepages limits from the containers', then requests from limits",
			&corev1.ResourceRequirements{Limits: rlist("memory", "1Gi")}, corev1.ResourceRequirements{Limits: rlist("memory", "512Mi", "hugepages-2Mi", "4Mi")},
			&corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi"), Requests: rlist("memory", "512Mi", "hugepages-2Mi", "4Mi")},
			corev1.PodQOSBurstable},
		{"hugepages limits default beside pod-level requests alone (and memory's, the container limits it: TestPodLevelLimitsDefaults)",
			&corev1.ResourceRequirements{Requests: rlist("memory", "1Gi")}, corev1.ResourceRequirements{Limits: rlist("memory", "512Mi", "hugepages-2Mi", "4Mi")},
			&corev1.ResourceRequirements{Limits: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi"), Requests: rlist("memory", "1Gi", "hugepages-2Mi", "4Mi")},
			corev1.PodQOSBurstable},
		{"empty pod-level resources stay empty, the containers decide the QoS class",
			&corev1.ResourceRequirements{}, corev1.ResourceRequirements{Requests: rlist("cpu", "1")},
			&corev1.ResourceRequirements{},
			corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web")
			p.Spec.Containers[0].Resources = tc.container
			p.Spec.Resources = tc.pod.DeepCopy()
			tmpl := corev1.PodTemplateSpec{Spec: *p.Spec.DeepCopy()}
			p = defaultedPod(t, p)
			if !apiequality.Semantic.DeepEqual(p.Spec.Resources, tc.want) {
				t.Errorf("spec.resources %+v, want %+v", p.Spec.Resources, tc.want)
			}
			if p.Status.QOSClass != tc.qos {
				t.Errorf("QoS %s, want %s", p.Status.QOSClass, tc.qos)
			}
			defaultPodSpec(&tmpl.Spec)
			if !apiequality.Semantic.DeepEqual(tmpl.Spec.Resources, tc.pod) {
				t.Errorf("template spec.resources %+v, want %+v unchanged", tmpl.Spec.Resources, tc.pod)
			}
		})
	}
}
