package gc

import (
	"sort"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// MaxPerPodContainer is how many exited instances of each container of a
// pod are kept (upstream's default): the newest, whose exit code and
// restart count the pod's status reports and whose completion marks an
// init container done.
const MaxPerPodContainer = 1

// DeadContainers are the exited containers to remove: of each pod's
// container (by pod UID, container name and type labels) all exited
// instances but the MaxPerPodContainer newest (highest attempt, then
// latest created). Running, created and
// unknown containers are never chosen (a created one may be about to
// start). Containers without a pod UID label are not the kubelet's and
// are left alone. Pure.
func DeadContainers(containers []*runtimeapi.Container) []string {
	type key struct{ uid, name, kind string }
	exited := map[key][]*runtimeapi.Container{}
	for _, c := range containers {
		uid := c.Labels[runtime.LabelPodUID]
		if uid == "" || c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		k := key{uid, c.Labels[runtime.LabelContainerName], c.Labels[runtime.LabelContainerType]}
		exited[k] = append(exited[k], c)
	}
	var out []string
	for _, list := range exited {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
				return a.GetMetadata().GetAttempt() > b.GetMetadata().GetAttempt()
			}
			if a.CreatedAt != b.CreatedAt {
				return a.CreatedAt > b.CreatedAt
			}
			return a.Id > b.Id
		})
		for _, c := range list[min(MaxPerPodContainer, len(list)):] {
			out = append(out, c.Id)
		}
	}
	sort.Strings(out)
	return out
}
