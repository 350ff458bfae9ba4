package sim

import (
	"cmp"
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

var _ runtime.PodStateReader = (*Runtime)(nil)

// PodState implements runtime.PodStateReader: what ListPodSandbox,
// PodSandboxStatus, ListContainers and ContainerStatus report of the pod's
// sandboxes and containers, read from the records themselves.
func (r *Runtime) PodState(ctx context.Context, podUID string) (*podstate.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	ps := &podstate.Pod{UID: types.UID(podUID)}

	// A pod has a sandbox or two and a few containers: they are gathered
	// on the stack from the pod's index entry (bypod.go), newest (highest
	// seq) first as the lists are.
	var sbBuf [4]*sandbox
	var cBuf [8]*container
	sbs, cs := sbBuf[:0], cBuf[:0]
	for o := range r.byPod[podUID].all() {
		if o.s != nil {
			sbs = append(sbs, o.s)
		} else {
			o.c.refresh(now)
			cs = append(cs, o.c)
		}
	}
	slices.SortFunc(sbs, func(a, b *sandbox) int { return cmp.Compare(b.seq, a.seq) })
	if len(sbs) > 0 {
		ps.Sandboxes = make([]podstate.Sandbox, len(sbs))
	}
	for i, s := range sbs {
		sb := podstate.Sandbox{ID: r.ids.id(s.seq), Ready: s.state == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.createdAt), Attempt: s.attempt}
		if s.meta != nil {
			sb.Attempt = s.meta.Attempt
		}
		if sb.Ready {
			ips, n := r.sandboxIPs(s)
			sb.IP = ips[0].String()
			for _, ip := range ips[1:n] {
				sb.AdditionalIPs = append(sb.AdditionalIPs, ip.String())
			}
		}
		ps.Sandboxes[i] = sb
	}

	slices.SortFunc(cs, func(a, b *container) int { return cmp.Compare(b.seq, a.seq) })
	if len(cs) > 0 {
		ps.Containers = make([]podstate.Container, len(cs))
	}
	for i, c := range cs {
		end := c.get()
		name, _ := c.labels.get(runtime.LabelContainerName)
		typ, _ := c.labels.get(runtime.LabelContainerType)
		img, ref := r.statusImage(c)
		ps.Containers[i] = podstate.Container{
			ID: r.ids.id(c.seq), Name: name, Init: typ == "init", Ephemeral: typ == runtime.ContainerTypeEphemeral, SandboxID: r.ids.id(c.sandboxSeq), Attempt: c.meta.GetAttempt(),
			State: podstate.FromCRI(c.state), CreatedAt: podstate.CRITime(c.createdAt), StartedAt: podstate.CRITime(c.startedAt),
			FinishedAt: podstate.CRITime(end.finishedAt), ExitCode: end.exitCode, Reason: end.reason, Message: end.message,
			Image: img, ImageRef: ref, Resources: c.currentResources(),
		}
	}
	return ps, nil
}
