package kubelet

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// The simulated runtime's direct pod state (runtime.PodStateReader) is
// what the kubelet reads through the CRI calls from the same runtime, for
// pods in every stage: created, running, crashed and restarted (several
// containers of one name), with init containers, exited for good, killed
// with their sandbox, re-created in a new sandbox, deleted.
func TestPodStateReaderMatchesCRI(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt, nil)
		// Same runtime, same clock; listOnly hides PodStateReader.
		cri, err := New(h.ctx, fake.NewClientset(), Config{NodeName: "node-7", NodeIP: "192.168.0.7", Clock: h.clock}, listOnly{h.rt})
		if err != nil {
			rt.Fatal(err)
		}
		var pods []*v1.Pod
		for i := range rapid.IntRange(1, 4).Draw(rt, "pods") {
			p := h.pod(fmt.Sprintf("p%d", i), func(p *v1.Pod) {
				switch rapid.IntRange(0, 4).Draw(rt, "kind") {
				case 1:
					p.Annotations[sim.AnnotationCrashAfter] = "2s"
				case 2:
					p.Annotations[sim.AnnotationExitCode] = "3"
					p.Spec.RestartPolicy = v1.RestartPolicyNever
				case 3:
					p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36"}}
					p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "busybox:1.36"})
				case 4:
					p.Annotations[sim.AnnotationExitAfter] = "1s"
					p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
				}
			})
			pods = append(pods, h.create(p))
		}
		compare := func(step string) {
			for _, p := range pods {
				direct, err := h.k.podRuntimeState(h.ctx, p.UID)
				if err != nil {
					rt.Fatal(err)
				}
				viaCRI, err := cri.podRuntimeState(h.ctx, p.UID)
				if err != nil {
					rt.Fatal(err)
				}
				if !reflect.DeepEqual(direct, viaCRI) {
					rt.Fatalf("%s: pod %s: direct %+v, through the CRI %+v", step, p.Name, direct, viaCRI)
				}
			}
		}
		compare("start")
		for i := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			p := rapid.SampledFrom(pods).Draw(rt, "pod")
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				h.sync(p)
			case 2:
				h.step(time.Duration(rapid.IntRange(1, 15).Draw(rt, "s")) * time.Second)
			case 3: // the sandbox goes away under the pod: a new one follows
				if rs, err := h.k.podRuntimeState(h.ctx, p.UID); err == nil {
					if sb := rs.LatestSandbox(); sb != nil {
						_ = h.rt.StopPodSandbox(h.ctx, sb.ID)
					}
				}
			}
			compare(fmt.Sprintf("step %d", i))
		}
		// An unknown pod: nothing, either way.
		if direct, err := h.k.podRuntimeState(h.ctx, types.UID("nobody")); err != nil || len(direct.Sandboxes)+len(direct.Containers) != 0 {
			rt.Fatalf("unknown pod: %+v, %v", direct, err)
		}
	})
}
