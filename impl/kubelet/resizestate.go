package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allocatedPodsStateFile is where a kubelet whose state is on disk keeps
// the allocations of its resized pods, under its root directory, as
// upstream's allocation manager checkpoints them (its
// allocated_pods_state), so that a restarted kubelet runs, admits beside
// and resizes them from what it had allocated, not from their specs.
const allocatedPodsStateFile = "allocated_pods_state"

// allocatedPodsState is the file's content: each resized pod's
// allocation by container name.
type allocatedPodsState struct {
	Pods map[types.UID]map[string]v1.ResourceRequirements `json:"pods"`
}

// allocationsPath is the kubelet's allocations file, "" when it keeps
// them in memory only: in its Config.StateDir when it has one (a
// simulated node of `kubeproof up`, each its own under the data
// directory); else, as its image pull records, in a root directory of its
// own (a `kubeproof kubelet`), while simulated nodes sharing one
// (Config.PullRecordsInMemory) and tests without one keep them in memory.
// The file is written only when a pod is resized or a resized pod goes
// (saveAllocationsLocked): pods never resized cost no write.
func allocationsPath(cfg *Config, rootGiven bool) string {
	switch {
	case cfg.StateDir != "":
		return filepath.Join(cfg.StateDir, allocatedPodsStateFile)
	case !rootGiven || cfg.PullRecordsInMemory:
		return ""
	}
	return filepath.Join(cfg.RootDir, allocatedPodsStateFile)
}

// loadAllocations reads the allocations file at path (none: no resized
// pods) into resize states.
func loadAllocations(path string) (map[types.UID]*podResize, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pod allocations: %w", err)
	}
	var st allocatedPodsState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading the pod allocations %s: %w", path, err)
	}
	if len(st.Pods) == 0 {
		return nil, nil
	}
	out := make(map[types.UID]*podResize, len(st.Pods))
	for uid, alloc := range st.Pods {
		out[uid] = &podResize{allocated: alloc}
	}
	return out, nil
}

// saveAllocationsLocked writes the resized pods' allocations to the
// kubelet's allocations file, if it has one (k.mu held: resizes change
// rarely), replacing it whole (a new file renamed over the old). A
// failure is logged: the allocations stay in memory, as upstream's
// allocation manager logs a failed checkpoint.
func (k *Kubelet) saveAllocationsLocked() {
	if k.allocFile == "" {
		return
	}
	st := allocatedPodsState{Pods: make(map[types.UID]map[string]v1.ResourceRequirements, len(k.resizes))}
	for uid, r := range k.resizes {
		st.Pods[uid] = r.allocated
	}
	if err := writeFileAtomic(k.allocFile, st); err != nil {
		k.log.Error("saving the pod allocations", "err", err)
	}
}

// writeFileAtomic writes v as JSON to path through a temporary file
// renamed over it.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// removeOrphanedAllocationsLocked forgets the allocations of pods the
// kubelet does not know (k.mu held; at each periodic resync once its pod
// source has delivered every pod): pods gone while it was not running,
// as upstream's housekeeping RemoveOrphanedPods.
func (k *Kubelet) removeOrphanedAllocationsLocked() {
	removed := false
	for uid := range k.resizes {
		if _, ok := k.pods[uid]; !ok {
			delete(k.resizes, uid)
			removed = true
		}
	}
	if removed {
		k.saveAllocationsLocked()
	}
}
