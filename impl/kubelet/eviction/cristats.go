package eviction

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// ContainerStatsLister is CRI's ListContainerStats, which a runtime client
// may offer; HostProvider measures pods with it when it is there.
type ContainerStatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// measuredStats are the pods' usage from CRI container stats: memory
// working set per container, writable layer bytes and inodes, one process
// per container (CRI container stats carry no process count). Pods or
// containers the runtime does not report keep what they request. ok is
// false when the runtime did not answer.
func measuredStats(ctx context.Context, l ContainerStatsLister, pods []*v1.Pod) ([]PodStats, bool) {
	all, err := l.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, false
	}
	type key struct{ uid, name string }
	byContainer := map[key]*runtimeapi.ContainerStats{}
	for _, s := range all {
		if s.GetAttributes() == nil {
			continue
		}
		labels := s.Attributes.Labels
		byContainer[key{labels[runtime.LabelPodUID], labels[runtime.LabelContainerName]}] = s
	}
	out := make([]PodStats, 0, len(pods))
	for _, p := range pods {
		ps := requestStats(p)
		for i := range p.Spec.Containers {
			name := p.Spec.Containers[i].Name
			s, ok := byContainer[key{string(p.UID), name}]
			if !ok {
				continue
			}
			if m := s.GetMemory().GetWorkingSetBytes(); m != nil {
				ps.Memory[name] = int64(m.Value)
			}
			if fs := s.GetWritableLayer(); fs != nil {
				ps.Disk += int64(fs.GetUsedBytes().GetValue()) - containerRequest(&p.Spec.Containers[i], v1.ResourceEphemeralStorage)
				ps.Inodes += int64(fs.GetInodesUsed().GetValue())
			}
		}
		out = append(out, ps)
	}
	return out, true
}
