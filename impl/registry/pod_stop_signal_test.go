package registry

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestStopSignalDroppedAsUpstream: while ContainerStopSignals is off a
// container's lifecycle.stopSignal is dropped on create (an emptied
// lifecycle with it) and on an update of a pod that had none, and kept on
// an update of a pod that had one.
func TestStopSignalDroppedAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	p := newPod("p")
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Lifecycle: &corev1.Lifecycle{
		StopSignal: ptr(corev1.SIGTERM), PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(ctx, p)
	if l := p.Spec.Containers[0].Lifecycle; l != nil {
		t.Fatalf("create kept %+v, want the emptied lifecycle dropped", l)
	}
	if l := p.Spec.InitContainers[0].Lifecycle; l == nil || l.StopSignal != nil || l.PreStop == nil {
		t.Fatalf("create left init lifecycle %+v, want preStop only", l)
	}

	old := p.DeepCopy()
	upd := old.DeepCopy()
	upd.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
	r.Strategy.PrepareForUpdate(ctx, upd, old)
	if upd.Spec.Containers[0].Lifecycle != nil {
		t.Fatalf("update of a pod without stop signals kept %+v", upd.Spec.Containers[0].Lifecycle)
	}

	old.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
	upd = old.DeepCopy()
	r.Strategy.PrepareForUpdate(ctx, upd, old)
	if l := upd.Spec.Containers[0].Lifecycle; l == nil || l.StopSignal == nil {
		t.Fatalf("update of a pod that had a stop signal dropped it: %+v", l)
	}
}

// TestTemplateStopSignalDroppedAsUpstream: a Deployment's or ReplicaSet's
// pod template loses its stopSignal as a pod does, as upstream's workload
// strategies call DropDisabledTemplateFields on create and update: on
// create and on an update of a template that had none, kept on an update
// of a template that had one.
func TestTemplateStopSignalDroppedAsUpstream(t *testing.T) {
	ctx := context.Background()
	for _, k := range []struct {
		resource string
		obj      func() runtime.Object
		template func(runtime.Object) *corev1.PodTemplateSpec
	}{
		{"deployments", func() runtime.Object { return newDeployment() },
			func(o runtime.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template }},
		{"replicasets", func() runtime.Object { return newReplicaSet() },
			func(o runtime.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.ReplicaSet).Spec.Template }},
	} {
		t.Run(k.resource, func(t *testing.T) {
			r := find(t, appsV1, k.resource)
			obj := k.obj()
			tmpl := k.template(obj)
			tmpl.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
			r.Strategy.Default(obj)
			r.Strategy.PrepareForCreate(ctx, obj)
			if l := tmpl.Spec.Containers[0].Lifecycle; l != nil {
				t.Fatalf("create kept %+v, want the emptied lifecycle dropped", l)
			}

			old := obj.DeepCopyObject()
			upd := old.DeepCopyObject()
			k.template(upd).Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
			r.Strategy.PrepareForUpdate(ctx, upd, old)
			if l := k.template(upd).Spec.Containers[0].Lifecycle; l != nil {
				t.Fatalf("update of a template without stop signals kept %+v", l)
			}

			k.template(old).Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
			upd = old.DeepCopyObject()
			r.Strategy.PrepareForUpdate(ctx, upd, old)
			if l := k.template(upd).Spec.Containers[0].Lifecycle; l == nil || l.StopSignal == nil {
				t.Fatalf("update of a template that had a stop signal dropped it: %+v", l)
			}
		})
	}
}

// TestEphemeralContainerStopSignalDroppedAsUpstream: a pods/ephemeralcontainers
// write drops a new ephemeral container's stopSignal as upstream's
// ephemeral containers strategy does (DropDisabledPodFields), so a
// lifecycle holding only a stop signal is not refused as a lifecycle an
// ephemeral container may not set; a pod that already uses stop signals
// keeps it, and then the lifecycle is Forbidden.
func TestEphemeralContainerStopSignalDroppedAsUpstream(t *testing.T) {
	old := defaultedPod(t, newPod("p"))
	p := old.DeepCopy()
	ec := debugContainer("debug")
	ec.Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGUSR1)}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec}
	wantErrors(t, ephemeralUpdate(t, p, old))
	if l := p.Spec.EphemeralContainers[0].Lifecycle; l != nil {
		t.Fatalf("ephemeral container kept %+v", l)
	}

	old.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptr(corev1.SIGTERM)} // stored before the drop
	p = old.DeepCopy()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec}
	wantErrors(t, ephemeralUpdate(t, p, old), forbidden+" spec.ephemeralContainers[0].lifecycle")
}
